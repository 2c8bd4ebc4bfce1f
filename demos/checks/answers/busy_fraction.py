def busy_fraction(intervals):
    busy, reach = 0.0, None  # reach: the latest end seen so far
    for s, e in sorted(intervals):
        if reach is None or s > reach:  # a gap before this interval
            busy += e - s
        elif e > reach:  # overlaps: count only the part past reach
            busy += e - reach
        reach = e if reach is None else max(reach, e)
    span = max(e for s, e in intervals) - min(s for s, e in intervals)
    return busy / span
