from numba import cuda, float64

THREADS = 64  # threads per block, a power of two


@cuda.jit
def block_sum_kernel(values, partial):
    cache = cuda.shared.array(THREADS, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    cache[t] = values[i] if i < values.size else 0.0  # threads past the end add zero
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:  # halve the active threads each round: 64 -> 32 -> ... -> 1
        if t < step:
            cache[t] += cache[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = cache[0]
