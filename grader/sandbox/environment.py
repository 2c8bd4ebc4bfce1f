"""What a sandboxed process's environment holds: an allow-list, its share of the machine.

:mod:`grader.sandbox.kernel` starts the notebook's kernel and its kernel
runner with :func:`kept_environment` of the grader's variables (never the rest:
the instructor's shell holds tokens and the course secret) and
:func:`kernel_environment` of its :class:`~grader.sandbox.policy.Policy` (threads,
HOME, caches, maybe no GPU).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from grader.sandbox.policy import Policy, in_bubblewrap

#: The thread pools of NumPy's BLAS, OpenMP, Numba and TensorFlow, each sized to
#: every core of the machine unless told otherwise.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
)


#: What a kernel that must not see the GPUs starts with (CUDA's and JAX's own switches).
NO_GPU_ENVIRONMENT = {"CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}


#: Where in a kernel's HOME the compilers' caches are (grader.integration.cell_budgets seeds them).
COMPILED_KERNELS = ".cache/compiled-kernels"


def compiled_kernels_environment(folder: str) -> dict[str, str]:
    """The variables that make CuPy and JAX keep the kernels they compile in *folder*.

    JAX keeps every compiled program, however quick to compile or small (its
    defaults keep only those over a second), so that a notebook finds the
    solution's.
    """
    return {
        "CUPY_CACHE_DIR": f"{folder}/cupy",
        "JAX_COMPILATION_CACHE_DIR": f"{folder}/jax",
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
    }


def kernel_environment(policy: Policy) -> dict[str, str]:
    """Variables the kernel starts with: its share of the cores, its HOME and, maybe, no GPU.

    Sixteen notebooks graded at once on sixteen cores, each with libraries that
    start a thread per core, would run 256 busy threads; a share each keeps the
    machine at one thread per core. A kernel without the GPU is told so in the
    variables CUDA, JAX and TensorFlow read, so that none of them tries to start one.
    A HOME of its own matters under its own user id: the grader's HOME is not
    writable there, and CuPy stops with a PermissionError when it cannot store
    a kernel it compiled; a HOME shared by students would let one plant
    compiled kernels for the next. The compilers' caches are in that HOME.
    """
    env = {"HOME": policy.home} if policy.home else {}
    if policy.home:
        env |= compiled_kernels_environment(f"{policy.home}/{COMPILED_KERNELS}")
    if policy.tmpdir and not in_bubblewrap(policy.level):
        env["TMPDIR"] = policy.tmpdir
    if policy.threads > 0:
        env |= dict.fromkeys(THREAD_VARIABLES, str(policy.threads))
        if policy.threads == 1:
            env["XLA_FLAGS"] = " ".join(
                filter(
                    None,
                    [
                        os.environ.get("XLA_FLAGS", ""),
                        "--xla_cpu_multi_thread_eigen=false",
                        "intra_op_parallelism_threads=1",
                    ],
                )
            )
    if not policy.gpu:
        env |= NO_GPU_ENVIRONMENT
    return env


#: Variables of the grader's environment that a sandboxed process keeps, by name...
KEPT_VARIABLES = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "PYTHONPATH",
        "PYTHONHASHSEED",
        "LD_LIBRARY_PATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "MPLBACKEND",
        "KERAS_BACKEND",
        "CIFAR10_PATH",
    }
)
#: ... and by prefix: the locale, and the switches of CUDA and the numerical libraries.
KEPT_PREFIXES = (
    "LC_",
    "CUDA_",
    "NVIDIA_",
    "NUMBA_",
    "CUPY_",
    "JAX_",
    "XLA_",
    "TF_",
    "OMP_",
    "MKL_",
    "OPENBLAS_",
)


def kept_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """What of *environ* a sandboxed process starts with: an allow-list, never the rest.

    The instructor's shell holds tokens, passwords and the course secret; a
    student's code could print any of them into its feedback. So only what a
    Python environment, CUDA and the numerical libraries need is passed on.
    """
    return {
        name: value
        for name, value in environ.items()
        if name in KEPT_VARIABLES or name.startswith(KEPT_PREFIXES)
    }
