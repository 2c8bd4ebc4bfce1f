from numba import cuda, float32

STENCIL_BLOCK = 64  # threads per block
RADIUS = 1  # neighbours on each side: a three-point stencil
TILE = STENCIL_BLOCK + 2 * RADIUS  # a GPU needs the shared array's size as one constant


@cuda.jit
def stencil_shared(x, out):
    tile = cuda.shared.array(TILE, float32)  # the block's elements and its halo
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * STENCIL_BLOCK + t
    n = x.shape[0]
    tile[t + RADIUS] = x[i] if i < n else float32(0)
    if t < RADIUS:  # the first RADIUS threads load the halo on both sides
        left = i - RADIUS
        tile[t] = x[left] if left >= 0 else float32(0)
        right = i + STENCIL_BLOCK
        tile[t + STENCIL_BLOCK + RADIUS] = x[right] if right < n else float32(0)
    cuda.syncthreads()  # the whole tile is loaded before anyone reads a neighbour
    if i < n:
        if i < RADIUS or i >= n - RADIUS:
            out[i] = tile[t + RADIUS]  # the border keeps its value
        else:
            acc = float32(0)
            for k in range(2 * RADIUS + 1):
                acc += tile[t + k]
            out[i] = acc / float32(2 * RADIUS + 1)
