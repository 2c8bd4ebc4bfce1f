"""What can run here: CUDA GPUs, the Numba CUDA simulator, CuPy, TensorFlow.

Every chapter starts by asking this module what the machine offers, so that a
laptop without a GPU, a CI runner and a cluster GPU node all run the same
notebooks: GPUs are listed from the CUDA *driver* directly (through ctypes), which
needs neither CuPy nor numba-cuda to be installed and never initialises a
framework. Code that cannot work without a GPU calls :func:`require_gpu` (or
:func:`require_cupy`) and the user gets one clear sentence instead of a traceback
from deep inside a library.

:func:`report` gathers all of it in one dictionary (benchmarks record it);
``python -m demos info`` (:mod:`demos.info_command`) prints it for a person, in the
words of :mod:`demos.machine_report`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib
import importlib.metadata
import importlib.util
import os
import platform
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Re-exported: chapter 0 prints ``hardware.format_report(hardware.report())``.
from demos.machine_report import format_report as format_report

SIMULATOR_ENV = "NUMBA_ENABLE_CUDASIM"

# CUdevice_attribute values from the CUDA driver API (cuda.h); stable since CUDA 2.x/6.x.
_ATTR_MULTIPROCESSORS = 16
_ATTR_CC_MAJOR = 75
_ATTR_CC_MINOR = 76


class GPUUnavailableError(RuntimeError):
    """Raised when code that needs a real CUDA GPU runs on a machine without one."""


@dataclass(frozen=True)
class GpuInfo:
    """One CUDA device as the driver reports it."""

    index: int
    name: str
    total_memory_bytes: int
    compute_capability: tuple[int, int]
    multiprocessors: int

    @property
    def total_memory_gib(self) -> float:
        return self.total_memory_bytes / 2**30


def _load_driver() -> ctypes.CDLL | None:
    """The CUDA driver library, or None where no NVIDIA driver is installed."""
    candidates = ["libcuda.so.1", "libcuda.so", ctypes.util.find_library("cuda"), "nvcuda.dll"]
    for name in candidates:
        if not name:
            continue
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


@functools.lru_cache(maxsize=1)
def _driver_query() -> tuple[int | None, tuple[GpuInfo, ...], str | None]:
    """(driver version, GPUs, reason none were found). Cached: the answer cannot change."""
    lib = _load_driver()
    if lib is None:
        return None, (), "no NVIDIA driver (libcuda) is installed"
    if lib.cuInit(0) != 0:
        return None, (), "the NVIDIA driver is installed but found no usable GPU (cuInit failed)"
    version = ctypes.c_int()
    lib.cuDriverGetVersion(ctypes.byref(version))
    count = ctypes.c_int()
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return version.value, (), "the NVIDIA driver reports no GPUs (check CUDA_VISIBLE_DEVICES)"
    gpus = []
    for index in range(count.value):
        device = ctypes.c_int()
        lib.cuDeviceGet(ctypes.byref(device), index)
        name = ctypes.create_string_buffer(256)
        lib.cuDeviceGetName(name, 256, device)
        memory = ctypes.c_size_t()
        lib.cuDeviceTotalMem_v2(ctypes.byref(memory), device)
        attrs = {}
        for attr in (_ATTR_MULTIPROCESSORS, _ATTR_CC_MAJOR, _ATTR_CC_MINOR):
            value = ctypes.c_int()
            lib.cuDeviceGetAttribute(ctypes.byref(value), attr, device)
            attrs[attr] = value.value
        gpus.append(
            GpuInfo(
                index=index,
                name=name.value.decode(errors="replace"),
                total_memory_bytes=memory.value,
                compute_capability=(attrs[_ATTR_CC_MAJOR], attrs[_ATTR_CC_MINOR]),
                multiprocessors=attrs[_ATTR_MULTIPROCESSORS],
            )
        )
    return version.value, tuple(gpus), None


def gpus() -> list[GpuInfo]:
    """The CUDA GPUs this process can use (respects ``CUDA_VISIBLE_DEVICES``)."""
    return list(_driver_query()[1])


def gpu_count() -> int:
    return len(_driver_query()[1])


def has_gpu() -> bool:
    return gpu_count() > 0


def gpu_memory_bytes(index: int = 0) -> int:
    """Memory of GPU *index* in bytes, 0 without a GPU: live lessons size their problems by it."""
    found = gpus()
    return found[index].total_memory_bytes if index < len(found) else 0


def multiprocessors(index: int = 0) -> int:
    """Streaming multiprocessors of GPU *index*, 0 without a GPU (a grid fills them all)."""
    found = gpus()
    return found[index].multiprocessors if index < len(found) else 0


def usable_cpu_count() -> int:
    """CPU cores this process may really use: its affinity mask, capped by a cgroup CPU quota.

    ``os.cpu_count()`` reports every core of the host; a batch job or container
    that may use fewer runs that many threads on fewer cores, and a parallel loop
    then waits on threads that take turns. Numba's default thread count is the
    host's, so the course sets it from this.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = cores or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return cores


def cuda_driver_version() -> str | None:
    """The CUDA version the driver supports, as 'major.minor', or None without a driver."""
    version = _driver_query()[0]
    return None if version is None else f"{version // 1000}.{(version % 1000) // 10}"


def no_gpu_reason() -> str | None:
    """Why no GPU is available, in words; None when there is one."""
    return _driver_query()[2]


def simulator_enabled() -> bool:
    """True when Numba runs CUDA kernels in its CPU simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    return os.environ.get(SIMULATOR_ENV, "0") not in ("", "0")


def enable_simulator_if_no_gpu() -> bool:
    """Switch Numba to its CUDA simulator when there is no GPU; return whether it is on.

    Numba reads ``NUMBA_ENABLE_CUDASIM`` once, when it is first imported, so this
    only has an effect before anything imports ``numba``. An explicit setting of
    the variable by the user always wins.
    """
    if SIMULATOR_ENV not in os.environ and not has_gpu() and "numba" not in sys.modules:
        os.environ[SIMULATOR_ENV] = "1"
    return simulator_enabled()


def share_gpu_memory_between_frameworks() -> None:
    """Make TensorFlow and JAX take GPU memory as needed instead of almost all of it at start.

    By default TensorFlow reserves nearly the whole GPU and JAX 75% of it, in
    each process. In a course, several notebook kernels (CuPy in one, Keras in
    another) share one GPU, and the second would fail with an out-of-memory
    error that has nothing to do with its own work. Only takes effect before the
    framework is imported; a value the user set is kept.
    """
    os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


@functools.lru_cache(maxsize=1)
def cupy_status() -> tuple[bool, str]:
    """(usable, explanation) for CuPy: installed, and able to reach a GPU."""
    try:
        import cupy
    except ImportError:
        return False, "CuPy is not installed (pip install 'gpu-course-demos[cupy]')"
    except Exception as exc:  # a broken CUDA install raises many kinds of errors here
        return False, f"CuPy failed to import: {exc}"
    try:
        if cupy.is_available():
            return True, f"CuPy {cupy.__version__} with {cupy.cuda.runtime.getDeviceCount()} GPU(s)"
    except Exception as exc:
        return False, f"CuPy {cupy.__version__} is installed but cannot use a GPU: {exc}"
    return (
        False,
        f"CuPy {cupy.__version__} is installed but no GPU is available ({no_gpu_reason()})",
    )


def cupy_available() -> bool:
    return cupy_status()[0]


@functools.lru_cache(maxsize=1)
def numba_cuda_status() -> tuple[bool, str]:
    """(usable, explanation) for numba-cuda on a real GPU (the simulator does not count)."""
    if simulator_enabled():
        return False, "numba-cuda runs kernels in the CUDA simulator (NUMBA_ENABLE_CUDASIM is set)"
    try:
        from numba import cuda
    except ImportError:
        return False, "numba-cuda is not installed"
    except Exception as exc:  # a broken CUDA toolkit raises many kinds of errors here
        return False, f"numba-cuda failed to import: {exc}"
    try:
        if cuda.is_available():
            return True, f"numba-cuda {_version('numba-cuda')} can use the GPU"
        return (
            False,
            f"numba-cuda {_version('numba-cuda')} cannot use the GPU (no CUDA runtime or driver)",
        )
    except Exception as exc:
        return False, f"numba-cuda cannot use the GPU: {exc}"


def require_gpu(what: str) -> None:
    """Raise :class:`GPUUnavailableError` naming *what* needed the GPU, if there is none."""
    if not has_gpu():
        raise GPUUnavailableError(
            f"{what} needs an NVIDIA CUDA GPU, but {no_gpu_reason()}. "
            "Run it on a GPU node (docs/students.md, 'Running on a GPU cluster'), or use "
            "the NumPy / Numba-CPU versions and the CUDA simulator (NUMBA_ENABLE_CUDASIM=1) "
            "on this machine."
        )


def require_cupy(what: str):
    """Return the ``cupy`` module, or raise :class:`GPUUnavailableError` explaining why not."""
    usable, why = cupy_status()
    if not usable:
        raise GPUUnavailableError(f"{what} needs CuPy on a CUDA GPU: {why}.")
    import cupy

    return cupy


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_versions() -> dict[str, str | None]:
    """Versions of the packages whose behaviour the course depends on (None: not installed)."""
    cupy_dist = next(
        (d for d in ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy") if _version(d)), "cupy"
    )
    tf_dist = next((d for d in ("tensorflow", "tensorflow-cpu") if _version(d)), "tensorflow")
    names = ["numpy", "numba", "numba-cuda", cupy_dist, tf_dist, "keras", "jax", "torch"]
    return {name: _version(name) for name in names}


def tensorflow_status() -> str:
    """TensorFlow's version and the GPUs it sees, without importing it unless installed."""
    if importlib.util.find_spec("tensorflow") is None:
        return "not installed (chapter 5 can also run on Keras' JAX or PyTorch backend)"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from demos.quiet_import import quiet_import

    tf = quiet_import("tensorflow")
    return (
        f"{tf.__version__}, GPUs visible to TensorFlow: "
        f"{len(tf.config.list_physical_devices('GPU'))}"
    )


def report(include_tensorflow: bool = False) -> dict[str, Any]:
    """Everything above as one JSON-friendly dictionary (benchmarks record it)."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cuda_driver": cuda_driver_version(),
        "gpus": [asdict(g) for g in gpus()],
        "no_gpu_reason": no_gpu_reason(),
        "simulator": simulator_enabled(),
        "cupy": cupy_status()[1],
        "cupy_usable": cupy_status()[0],
        "packages": package_versions(),
    }
    if info["gpus"]:  # importing numba-cuda costs a second: only where there is a GPU to test
        info["numba_cuda_usable"], info["numba_cuda"] = numba_cuda_status()
    if include_tensorflow:
        info["tensorflow"] = tensorflow_status()
    return info


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
