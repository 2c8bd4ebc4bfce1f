"""Code, benchmarks and figures for the GPU programming in Python course.

The notebooks in ``course/`` import from here, so that every algorithm is
written once, tested once and benchmarked once. Importing the package switches
Numba to its CUDA simulator when this machine has no GPU (and the user has not
chosen otherwise), so that the CUDA kernels of the course run everywhere;
``python -m demos info`` says what was found.
"""

from demos.hardware import enable_simulator_if_no_gpu as _enable_simulator_if_no_gpu

__version__ = "0.1.0"

_enable_simulator_if_no_gpu()
