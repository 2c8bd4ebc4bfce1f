from numba import cuda, int32

from demos.patterns.sizes import N_BINS


@cuda.jit
def histogram_shared(values, bins):
    local = cuda.shared.array(N_BINS, int32)
    t = cuda.threadIdx.x
    for b in range(t, N_BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(local, values[i], 1)  # contended only by this block's threads
    cuda.syncthreads()
    for b in range(t, N_BINS, cuda.blockDim.x):
        if local[b] != 0:
            cuda.atomic.add(bins, b, local[b])  # one global atomic per bin and block
