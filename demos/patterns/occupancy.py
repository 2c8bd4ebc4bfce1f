"""How many blocks of a kernel a multiprocessor holds at once: chapter 4d's occupancy model.

A multiprocessor (SM) runs the blocks resident on it side by side. How many fit
is decided by four budgets, each with its own rounding:

* **warps**: a block takes ``ceil(threads / 32)`` whole warps of the SM's
  ``max_threads_per_sm / 32``;
* **blocks**: at most ``max_blocks_per_sm`` blocks, however small;
* **registers**: a warp's registers (registers per thread x 32, rounded up to
  ``register_unit``) come from one of ``register_partitions`` equal parts of
  the register file, so each part holds a whole number of warps;
* **shared memory**: a block's shared memory plus ``shared_reserved_per_block``
  (the system's part), rounded up to ``shared_unit``, out of ``shared_per_sm``.

The smallest of the four is the answer; occupancy is the resident warps over
the SM's maximum. The limits per compute capability are published figures
kept in ``demos/results/gpu_specs.json`` (``compute_capabilities``); on a GPU,
:func:`device_limits` reads the same quantities from the driver. A compiled
kernel's registers and shared memory come from Numba (:func:`kernel_resources`),
and the driver's own answer from its occupancy calculator
(:func:`driver_blocks_per_sm`), so the model can be checked against it.
"""

from __future__ import annotations

import math
from typing import Any

from demos import shipped_results

__all__ = [
    "FACTORS",
    "blocks_by_factor",
    "blocks_per_sm",
    "device_limits",
    "driver_blocks_per_sm",
    "kernel_resources",
    "largest_shared",
    "limits_for",
    "occupancy",
    "smallest_shared_for",
]

FACTORS = ("warps", "blocks", "registers", "shared memory")
#: The keys a limits dictionary needs (the rest of a gpu_specs.json entry is documentation).
KEYS = (
    "warp_size",
    "max_threads_per_block",
    "max_threads_per_sm",
    "max_blocks_per_sm",
    "registers_per_sm",
    "register_unit",
    "register_partitions",
    "shared_per_sm",
    "shared_unit",
    "shared_reserved_per_block",
)


def limits_for(compute_capability: str) -> dict[str, Any]:
    """The published limits of one compute capability ("8.0", "9.0") from gpu_specs.json."""
    table = (shipped_results.load("gpu_specs.json", required=True) or {})["compute_capabilities"]
    if compute_capability not in table or not isinstance(table[compute_capability], dict):
        known = ", ".join(k for k, v in table.items() if isinstance(v, dict))
        raise ValueError(
            f"no published limits for compute capability {compute_capability!r}; "
            f"gpu_specs.json lists {known}"
        )
    return dict(table[compute_capability])


def _check(registers: int, threads: int, shared: int, limits: dict[str, Any]) -> None:
    missing = [k for k in KEYS if k not in limits]
    if missing:
        raise ValueError(f"limits lack {', '.join(missing)} (use limits_for or device_limits)")
    if not 1 <= threads <= limits["max_threads_per_block"]:
        raise ValueError(
            f"threads per block must be 1 to {limits['max_threads_per_block']}, not {threads}"
        )
    if registers < 0 or shared < 0:
        raise ValueError(f"registers ({registers}) and shared bytes ({shared}) must be >= 0")


def blocks_by_factor(
    registers: int, threads: int, shared: int, limits: dict[str, Any]
) -> dict[str, int]:
    """Blocks per SM each budget allows on its own: {"warps": .., "blocks": .., ...}."""
    _check(registers, threads, shared, limits)
    warp = limits["warp_size"]
    warps = math.ceil(threads / warp)
    unit = limits["register_unit"]
    per_warp = math.ceil(registers * warp / unit) * unit
    parts = limits["register_partitions"]
    if per_warp:
        by_registers = (limits["registers_per_sm"] // parts // per_warp) * parts // warps
    else:
        by_registers = limits["max_blocks_per_sm"]
    step = limits["shared_unit"]
    per_block = math.ceil((shared + limits["shared_reserved_per_block"]) / step) * step
    return {
        "warps": limits["max_threads_per_sm"] // warp // warps,
        "blocks": limits["max_blocks_per_sm"],
        "registers": by_registers,
        "shared memory": limits["shared_per_sm"] // per_block,
    }


def blocks_per_sm(registers: int, threads: int, shared: int, limits: dict[str, Any]) -> int:
    """Blocks of *threads* threads, *registers* registers per thread and *shared* bytes of shared
    memory that one SM holds at once (0: the block cannot run at all)."""
    return min(blocks_by_factor(registers, threads, shared, limits).values())


def occupancy(registers: int, threads: int, shared: int, limits: dict[str, Any]) -> float:
    """Resident warps over the SM's maximum, from 0 to 1."""
    warps = math.ceil(threads / limits["warp_size"])
    most = limits["max_threads_per_sm"] // limits["warp_size"]
    return blocks_per_sm(registers, threads, shared, limits) * warps / most


def largest_shared(blocks: int, limits: dict[str, Any]) -> int:
    """The most shared memory (bytes) a block may use so that *blocks* of them fit on one SM."""
    if not 1 <= blocks <= limits["max_blocks_per_sm"]:
        raise ValueError(f"blocks must be 1 to {limits['max_blocks_per_sm']}, not {blocks}")
    step = limits["shared_unit"]
    return limits["shared_per_sm"] // blocks // step * step - limits["shared_reserved_per_block"]


def smallest_shared_for(blocks: int, limits: dict[str, Any]) -> int:
    """The least shared memory per block that keeps an SM to *blocks* blocks (0 for the most):
    one byte more than lets one more block in."""
    if blocks >= limits["max_blocks_per_sm"]:
        return 0
    return largest_shared(blocks + 1, limits) + 1


def device_limits(device: Any = None) -> dict[str, Any]:
    """The limits of a real GPU as its driver reports them (numba-cuda on a GPU), with the
    allocation units of its compute capability from gpu_specs.json (the driver reports none)."""
    from numba import cuda

    device = device or cuda.get_current_device()
    cc = "{}.{}".format(*device.compute_capability)
    try:
        published = limits_for(cc)
    except ValueError:  # a GPU the table does not list: the units have been the same since 5.x
        published = limits_for("9.0")
    return {
        **{k: published[k] for k in ("register_unit", "register_partitions", "shared_unit")},
        "compute_capability": cc,
        "warp_size": device.WARP_SIZE,
        "max_threads_per_block": device.MAX_THREADS_PER_BLOCK,
        "max_threads_per_sm": device.MAX_THREADS_PER_MULTIPROCESSOR,
        "max_blocks_per_sm": device.MAX_BLOCKS_PER_MULTIPROCESSOR,
        "registers_per_sm": device.MAX_REGISTERS_PER_MULTIPROCESSOR,
        "shared_per_sm": device.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        "max_shared_per_block": device.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        "shared_reserved_per_block": device.RESERVED_SHARED_MEMORY_PER_BLOCK,
        "multiprocessors": device.MULTIPROCESSOR_COUNT,
        "l2_cache_bytes": device.L2_CACHE_SIZE,
    }


def _only(value: Any) -> Any:
    """A dispatcher's per-signature answer for its one compiled signature."""
    if isinstance(value, dict):
        if len(value) != 1:
            raise ValueError(f"compile the kernel for exactly one signature, not {len(value)}")
        return next(iter(value.values()))
    return value


def kernel_resources(kernel: Any) -> dict[str, int] | None:
    """Registers per thread, static shared and local bytes of a kernel compiled on a GPU (launch it
    once first), or None where Numba cannot say (the simulator compiles nothing)."""
    if not hasattr(kernel, "get_regs_per_thread") or not getattr(kernel, "overloads", None):
        return None
    return {
        "registers": int(_only(kernel.get_regs_per_thread())),
        "shared_bytes": int(_only(kernel.get_shared_mem_per_block())),
        "local_bytes": int(_only(kernel.get_local_mem_per_thread())),
    }


def driver_blocks_per_sm(kernel: Any, threads: int, dynamic_shared: int = 0) -> int | None:
    """The driver's occupancy calculator on a compiled kernel, or None where it cannot answer."""
    overloads = getattr(kernel, "overloads", None)
    if not overloads or len(overloads) != 1:
        return None
    try:
        from numba import cuda

        function = next(iter(overloads.values()))._codelibrary.get_cufunc()
        context = cuda.current_context()
        return int(context.get_active_blocks_per_multiprocessor(function, threads, dynamic_shared))
    except Exception:  # noqa: BLE001  (an older numba-cuda or driver: the model's answer stands)
        return None


SHOWN = (
    ("max_threads_per_sm", "threads per SM"),
    ("max_blocks_per_sm", "blocks per SM"),
    ("registers_per_sm", "32-bit registers per SM"),
    ("register_unit", "registers given to a warp in multiples of"),
    ("register_partitions", "parts of the register file"),
    ("shared_per_sm", "shared memory per SM (bytes)"),
    ("shared_reserved_per_block", "reserved per block (bytes)"),
    ("shared_unit", "a block's shared memory rounded up to (bytes)"),
    ("max_threads_per_block", "threads per block"),
)


def _number(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "-"


def print_limits(columns: dict[str, dict[str, Any] | None]) -> None:
    """Print limits side by side, one column per (title, limits); a None column is left out."""
    columns = {title: limits for title, limits in columns.items() if limits}
    width = max(len(label) for _, label in SHOWN) + 2
    print("".ljust(width) + "".join(title.ljust(24) for title in columns))
    for key, label in SHOWN:
        cells = "".join(_number(limits.get(key)).ljust(24) for limits in columns.values())
        print(label.ljust(width) + cells)
