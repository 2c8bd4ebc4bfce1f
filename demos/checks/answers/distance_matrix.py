from demos.distance.generic import get_array_module


def distance_matrix(x, y):
    """Squared distances between the rows of x and of y: |x|^2 - 2 x.y + |y|^2."""
    xp = get_array_module(x)
    x2 = xp.einsum("ij,ij->i", x, x)
    y2 = xp.einsum("ij,ij->i", y, y)
    return x2[:, None] - 2 * (x @ y.T) + y2[None, :]
