def pipelined_time(compute_ms, copy_ms, blocks):
    # the first compute and the last copy overlap with nothing; in between the slower stage sets
    # the pace
    return compute_ms + copy_ms + (blocks - 1) * max(compute_ms, copy_ms)
