from numba import cuda


@cuda.jit
def add_to_kernel(source, target):
    i = cuda.grid(1)  # this thread's element: blockIdx.x * blockDim.x + threadIdx.x
    if i < target.size:  # threads of the last block past the end do nothing
        target[i] += source[i]
