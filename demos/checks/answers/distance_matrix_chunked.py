import numpy as np


def distance_matrix_chunked(x, block_rows):
    """The full matrix, computed one band of rows at a time: peak memory is one band, not three
    matrices."""
    n = len(x)
    out = np.empty((n, n), dtype=x.dtype)
    x2 = np.einsum("ij,ij->i", x, x)
    for start in range(0, n, block_rows):
        stop = min(start + block_rows, n)
        band = x[start:stop]
        out[start:stop] = x2[start:stop, None] - 2 * (band @ x.T) + x2[None, :]
    return out
