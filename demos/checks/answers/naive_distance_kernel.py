from numba import cuda


@cuda.jit
def naive_distance_kernel(x, y, out):
    i, j = cuda.grid(2)  # x of the grid counts rows i
    if i < out.shape[0] and j < out.shape[1]:
        acc = 0.0
        for k in range(x.shape[1]):
            diff = x[i, k] - y[j, k]
            acc += diff * diff
        out[i, j] = acc
