import numpy as np

from demos.distance.generic import get_array_module


def nearest_neighbour(x):
    """Index of each point's nearest other point; only these n integers travel back to the host."""
    xp = get_array_module(x)
    x2 = xp.einsum("ij,ij->i", x, x)
    d = x2[:, None] - 2 * (x @ x.T) + x2[None, :]
    xp.fill_diagonal(d, xp.inf)  # a point is not its own neighbour
    nearest = d.argmin(axis=1)
    return nearest if xp is np else nearest.get()  # .get() copies a CuPy array to the host
