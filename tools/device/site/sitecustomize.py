"""Device-only start-up fix, put on PYTHONPATH by tools/device/setup.sh (never by the product).

The lent GPU machines ship numba-cuda 0.30.4 with numpy 2.5, which removed
``numpy.row_stack``; numba-cuda still calls it when compiling a kernel. The
course's pinned install uses numpy 2.4 and never needs this. Loading it from
sitecustomize also reaches notebook kernels, which conftest.py cannot.
"""

try:
    import numpy as _np

    if not hasattr(_np, "row_stack"):
        _np.row_stack = _np.vstack
except ImportError:
    pass
