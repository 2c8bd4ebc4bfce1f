from numba import cuda


@cuda.jit
def add_matrices_kernel(a, b, out):
    j, i = cuda.grid(2)  # x (the fast index within a warp) runs along a row: column j
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = a[i, j] + b[i, j]
