from numba import cuda


@cuda.jit
def add_offsets(out, scanned_totals):
    i = cuda.grid(1)
    b = cuda.blockIdx.x
    if b > 0 and i < out.shape[0]:  # block 0 has no blocks before it
        out[i] += scanned_totals[b - 1]  # the sum of blocks 0 .. b - 1
