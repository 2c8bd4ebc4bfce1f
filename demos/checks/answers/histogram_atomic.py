from numba import cuda


@cuda.jit
def histogram_atomic(values, bins):
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(bins, values[i], 1)
