"""The squared Euclidean distance matrix, the running example of chapters 3 and 4.

D[i, j] = sum_k (x[i, k] - y[j, k])**2 for points x (n, d) and y (m, d), in the
input dtype (float32 or float64). One problem, many backends, so that the course
can compare them on equal terms (``python -m demos bench distance``):

``generic``        array-module agnostic (NumPy or CuPy): row norms, matmul, combine
``numpy_backend``  the NumPy version of chapter 3
``cupy_backend``   the CuPy drop-in, plus a memory-lean fused version
``chunked``        block-row by block-row, for matrices larger than GPU memory
``numba_cpu``      Numba CPU loops, serial and parallel (chapter 4)
``numba_cuda``     Numba CUDA kernels, naive to tuned (chapter 4)
"""

BACKENDS = ("generic", "numpy_backend", "cupy_backend", "chunked", "numba_cpu", "numba_cuda")
