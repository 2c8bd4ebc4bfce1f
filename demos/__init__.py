"""Code, benchmarks and figures for the GPU programming in Python course.

The notebooks in ``course/`` import from here, so that every algorithm is
written once, tested once and benchmarked once. Importing the package switches
Numba to its CUDA simulator when this machine has no GPU (and the user has not
chosen otherwise), so that the CUDA kernels of the course run everywhere;
``python -m demos info`` says what was found. It also asks TensorFlow and JAX
to take GPU memory as they need it, so that several notebooks can share a GPU.

The original course's compatibility layer: ``demo_numpy.py``, ``demo_cupy.py``,
``demo_numba_cpu.py`` and ``demo_numba_gpu.py`` (thin wrappers over
:mod:`demos.distance`), and ``measurements.json``, ``measurements_ops.json`` and
``measurements_tf_cnn_cifar10.json`` (written from ``demos/results/`` by
``python -m demos bench distance --compat`` and ``bench cnn``). No chapter of
``course/`` uses them: the notebook of the course this one grew from imports and
reads them by these names, so they stay, with its calls tested in
``tests/demos/test_original_notebook.py``.
"""

from demos.hardware import enable_simulator_if_no_gpu as _enable_simulator_if_no_gpu
from demos.hardware import share_gpu_memory_between_frameworks as _share_gpu_memory

__version__ = "0.1.0"

_enable_simulator_if_no_gpu()
_share_gpu_memory()
