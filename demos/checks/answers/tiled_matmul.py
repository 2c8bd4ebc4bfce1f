from numba import cuda, float32

TILE = 16  # blocks of TILE x TILE threads, each computing one element of c


@cuda.jit
def tiled_matmul(a, b, c):
    a_tile = cuda.shared.array((TILE, TILE), float32)
    b_tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    i = cuda.blockIdx.y * TILE + ty  # the row of c this thread computes
    j = cuda.blockIdx.x * TILE + tx  # its column
    acc = float32(0)
    for start in range(0, a.shape[1], TILE):
        # each thread loads one element of each tile; 0 past the edge of a or b
        if i < a.shape[0] and start + tx < a.shape[1]:
            a_tile[ty, tx] = a[i, start + tx]
        else:
            a_tile[ty, tx] = 0
        if start + ty < b.shape[0] and j < b.shape[1]:
            b_tile[ty, tx] = b[start + ty, j]
        else:
            b_tile[ty, tx] = 0
        cuda.syncthreads()  # every thread, also those past the edge of c
        for k in range(TILE):
            acc += a_tile[ty, k] * b_tile[k, tx]
        cuda.syncthreads()  # before the next step overwrites the tiles
    if i < c.shape[0] and j < c.shape[1]:
        c[i, j] = acc
