def coalesced_grid(n, m, block):
    """Blocks along x (columns, m of them) and y (rows, n of them), each rounded up."""
    bx, by = block
    return ((m + bx - 1) // bx, (n + by - 1) // by)
