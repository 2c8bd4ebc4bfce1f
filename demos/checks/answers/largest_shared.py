def largest_shared(blocks, limits):
    """The most shared memory a block may use so that `blocks` blocks fit on one multiprocessor."""
    step = limits["shared_unit"]
    share = limits["shared_per_sm"] // blocks // step * step  # each block's part, whole units
    return share - limits["shared_reserved_per_block"]  # less what the system keeps per block
