import numpy as np

from demos.multigpu.splitting import split_ranges


def matvec_split(a, x, parts):
    """A @ x as `parts` row slabs, one per device; each slab needs all of x."""
    return np.concatenate([a[rows] @ x for rows in split_ranges(a.shape[0], parts)])
