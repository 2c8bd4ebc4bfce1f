def intensity(kernel, n, itemsize):
    """Operations per byte of the least DRAM traffic: inputs read once, outputs written once."""
    if kernel in ("sum", "histogram"):  # n values read, one addition each
        return n / (n * itemsize)
    if kernel == "distance":  # 8 operations per entry; n x n entries written, n points read
        return 8 * n * n / ((n * n + 3 * n) * itemsize)
    if kernel == "matmul":  # 2 n^3 operations; a and b read once, c written once
        return 2 * n**3 / (3 * n * n * itemsize)
    raise ValueError(f"unknown kernel {kernel!r}")
