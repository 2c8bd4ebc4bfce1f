def split_ranges(n, parts):
    """`parts` contiguous slices of range(n), as equal as can be: the first n % parts get one
    more."""
    base, extra = divmod(n, parts)
    pieces, start = [], 0
    for p in range(parts):
        stop = start + base + (1 if p < extra else 0)
        pieces.append(slice(start, stop))
        start = stop
    return pieces
