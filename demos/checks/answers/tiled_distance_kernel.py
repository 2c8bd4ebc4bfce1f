from numba import cuda, float64

TILE = 8  # blocks of TILE x TILE threads
DIMS = 3  # coordinates per point


@cuda.jit
def tiled_distance_kernel(x, y, out):
    xs = cuda.shared.array((TILE, DIMS), float64)  # the block's rows i
    ys = cuda.shared.array((TILE, DIMS), float64)  # the block's columns j
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    i = cuda.blockIdx.y * TILE + ty
    j = cuda.blockIdx.x * TILE + tx
    # one row of threads loads the column points, one column of threads the row points
    if ty == 0 and j < y.shape[0]:
        for k in range(DIMS):
            ys[tx, k] = y[j, k]
    if tx == 0 and i < x.shape[0]:
        for k in range(DIMS):
            xs[ty, k] = x[i, k]
    cuda.syncthreads()  # every thread reaches the barrier, also those past the edge
    if i < out.shape[0] and j < out.shape[1]:
        acc = 0.0
        for k in range(DIMS):
            diff = xs[ty, k] - ys[tx, k]
            acc += diff * diff
        out[i, j] = acc
