def sync_free_total(xp, arrays):
    total = xp.zeros(())  # the running total stays on the device
    for a in arrays:
        total += xp.asarray(a).sum()
    return float(total)  # the one transfer to the host, after the loop
