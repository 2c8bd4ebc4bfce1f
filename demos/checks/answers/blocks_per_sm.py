import math


def blocks_per_sm(registers, threads, shared, limits):
    """Blocks that fit on one multiprocessor: the smallest of what each budget allows."""
    warps = math.ceil(threads / limits["warp_size"])  # a block takes whole warps
    by_warps = limits["max_threads_per_sm"] // limits["warp_size"] // warps
    by_blocks = limits["max_blocks_per_sm"]
    # registers go to warps in multiples of register_unit, each warp from one part of the file
    unit = limits["register_unit"]
    per_warp = math.ceil(registers * limits["warp_size"] / unit) * unit
    parts = limits["register_partitions"]
    warps_by_registers = limits["registers_per_sm"] // parts // per_warp * parts
    by_registers = warps_by_registers // warps
    # shared memory: the block's own plus the reserved bytes, rounded up to shared_unit
    step = limits["shared_unit"]
    per_block = math.ceil((shared + limits["shared_reserved_per_block"]) / step) * step
    by_shared = limits["shared_per_sm"] // per_block
    return min(by_warps, by_blocks, by_registers, by_shared)
