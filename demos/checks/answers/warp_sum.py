from numba import cuda, float32

from demos.patterns.warp_reduce import warp_reduce_sum  # printed below the answer

BLOCK = 64  # threads per block: the check launches blocks of 64
WARPS = BLOCK // 32


@cuda.jit
def warp_sum(values, partial):
    shared = cuda.shared.array(WARPS, float32)
    t = cuda.threadIdx.x
    lane, warp = t % 32, t // 32
    acc = float32(0)
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        acc += values[i]
    acc = warp_reduce_sum(acc)  # sum within the warp: shuffles 16, 8, 4, 2, 1
    if lane == 0:
        shared[warp] = acc
    cuda.syncthreads()
    if warp == 0:  # the first warp sums the warps' sums
        acc = shared[lane] if lane < WARPS else float32(0)
        acc = warp_reduce_sum(acc)
        if lane == 0:
            partial[cuda.blockIdx.x] = acc
