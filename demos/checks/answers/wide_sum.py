from numba import cuda, float32

from demos.patterns.warp_reduce import warp_reduce_sum  # printed below the answer

LOADS = 4  # independent loads per thread and loop iteration: change it and measure


@cuda.jit
def wide_sum(values, partial):
    shared = cuda.shared.array(32, float32)  # one slot per warp: blocks of up to 1,024 threads
    t = cuda.threadIdx.x
    lane, warp = t % 32, t // 32
    n, stride = values.shape[0], cuda.gridsize(1)
    got = cuda.local.array(LOADS, float32)  # registers for the values on their way
    acc = float32(0)
    for start in range(cuda.grid(1), n, LOADS * stride):
        for k in range(LOADS):  # LOADS loads, none waiting for another
            i = start + k * stride  # a warp's k-th loads are neighbours: coalesced
            got[k] = values[i] if i < n else float32(0)  # the last group may pass the end
        for k in range(LOADS):  # only now use them
            acc += got[k]
    acc = warp_reduce_sum(acc)  # sum within the warp: shuffles 16, 8, 4, 2, 1
    if lane == 0:
        shared[warp] = acc
    cuda.syncthreads()
    if warp == 0:  # the first warp sums the warps' sums
        acc = shared[lane] if lane < cuda.blockDim.x // 32 else float32(0)
        acc = warp_reduce_sum(acc)
        if lane == 0:
            partial[cuda.blockIdx.x] = acc
