"""Code, benchmarks and figures for the GPU programming in Python course.

The notebooks in ``course/`` import from here, so that every algorithm is
written once, tested once and benchmarked once. Importing the package switches
Numba to its CUDA simulator when this machine has no GPU (and the user has not
chosen otherwise), so that the CUDA kernels of the course run everywhere;
``python -m demos info`` says what was found. It also asks TensorFlow and JAX
to take GPU memory as they need it, so that several notebooks can share a GPU.
"""

from demos.hardware import enable_simulator_if_no_gpu as _enable_simulator_if_no_gpu
from demos.hardware import share_gpu_memory_between_frameworks as _share_gpu_memory

__version__ = "0.1.0"

_enable_simulator_if_no_gpu()
_share_gpu_memory()
