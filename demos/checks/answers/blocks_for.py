def blocks_for(n, threads_per_block):
    """Blocks needed to give each of n elements a thread: n / threads_per_block, rounded up."""
    return (n + threads_per_block - 1) // threads_per_block
