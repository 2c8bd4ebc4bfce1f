"""Devices for the multi-GPU assignment: real GPUs through CuPy, or CPU stand-ins.

Both kinds follow the CUDA rule that matters there (copy to a device only while
it is current) and write what they do into a shared :class:`DeviceLog`, so a
grader can check each chunk went to its own device and that no device's result
was waited for before every device had its work. With ``devices(count)`` a
grader asks for the same number of devices on every machine (several logical
devices share a GPU when there are fewer), so the same answer gets the same
score on a laptop, a one-GPU node and a multi-GPU node.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np

from demos import cupy_standin, hardware

#: How many devices the CPU stand-in offers when there is no GPU: enough that
#: splitting work over "several devices" is a real split.
SIMULATED_DEVICE_COUNT = 3


class DeviceLog:
    """The order of copies to and from the devices: ``[("to_device", 0), ("to_host", 0), ...]``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []

    def started_all_before_waiting(self) -> bool:
        """True if every device got its data before the first result was copied back.

        Copying a result back waits for that device; doing it before the next
        device has its work serialises the devices.
        """
        first_wait = next((k for k, (kind, _) in enumerate(self.events) if kind == "to_host"), None)
        if first_wait is None:
            return True
        devices = {index for _, index in self.events}
        started = {index for kind, index in self.events[:first_wait] if kind == "to_device"}
        return started == devices


class _Device:
    """What both kinds share: being current (``with device:``), the copy rule, the log."""

    _current: _Device | None = None
    xp: Any = cupy_standin.module

    def __init__(self, index: int, log: DeviceLog | None = None) -> None:
        self.index = index
        self.log = log if log is not None else DeviceLog()
        self.received: list[Any] = []
        self._previous: list[_Device | None] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.index})"

    def __enter__(self) -> Self:
        self._previous.append(_Device._current)
        _Device._current = self
        return self

    def __exit__(self, *exc: object) -> None:
        _Device._current = self._previous.pop()

    def asarray(self, host_array: Any) -> Any:
        """Copy *host_array* to this device; only allowed while it is current."""
        current = _Device._current
        if current is not self:
            raise RuntimeError(
                f"copying to device {self.index} while "
                f"{'no device' if current is None else f'device {current.index}'} is current: "
                f"use 'with device:' around the work for that device"
            )
        array = self._to_device(host_array)
        self.received.append(array)
        self.log.events.append(("to_device", self.index))
        return array

    def asnumpy(self, array: Any) -> np.ndarray:
        """Copy a result back to the host (this waits for the device)."""
        self.log.events.append(("to_host", self.index))
        return self._to_host(array)

    def _to_device(self, host_array: Any) -> Any:
        raise NotImplementedError

    def _to_host(self, array: Any) -> np.ndarray:
        raise NotImplementedError


class SimulatedDevice(_Device):
    """A CPU stand-in for one GPU; its arrays are :mod:`demos.cupy_standin` arrays.

    Like CuPy arrays they are not NumPy arrays, so a result that was never
    copied back with :meth:`asnumpy` is caught here as on a GPU.
    """

    def _to_device(self, host_array: Any) -> Any:
        return cupy_standin.asarray(host_array)

    def _to_host(self, array: Any) -> np.ndarray:
        return np.array(cupy_standin.asnumpy(array), copy=True)


class GpuDevice(_Device):
    """One real GPU through CuPy (``physical`` is the CUDA device it runs on)."""

    def __init__(
        self, index: int, log: DeviceLog | None = None, physical: int | None = None
    ) -> None:
        super().__init__(index, log)
        self.cupy = hardware.require_cupy("GpuDevice")
        self.xp = self.cupy
        self.physical = index if physical is None else physical
        self._device = self.cupy.cuda.Device(self.physical)

    def __enter__(self) -> Self:
        super().__enter__()
        self._device.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._device.__exit__(*exc)
        super().__exit__(*exc)

    def _to_device(self, host_array: Any) -> Any:
        return self.cupy.asarray(host_array)

    def _to_host(self, array: Any) -> np.ndarray:
        return self.cupy.asnumpy(array)


def devices(count: int | None = None) -> list[SimulatedDevice] | list[GpuDevice]:
    """The devices to split work over, sharing one :class:`DeviceLog`.

    Without *count*: every GPU (through CuPy) when usable, else
    :data:`SIMULATED_DEVICE_COUNT` stand-ins. With *count*: exactly that many,
    taking the GPUs in turn when there are fewer (what graders use).
    """
    log = DeviceLog()
    if hardware.cupy_available():
        gpus = hardware.gpu_count()
        n = gpus if count is None else count
        return [GpuDevice(i, log, physical=i % gpus) for i in range(n)]
    n = SIMULATED_DEVICE_COUNT if count is None else count
    return [SimulatedDevice(i, log) for i in range(n)]
