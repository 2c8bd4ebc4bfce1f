"""Run a student's checked kernels in Numba's CUDA simulator, in a process of the grader's own.

Started by :class:`KernelRunner` (``python -m grader.verdicts.kernel_runner``);
requests and replies are lines of :mod:`demos.grading.wire` text on stdin and
stdout. Only kernels that :mod:`.kernel_source` accepted are ever executed
here, with nothing in reach but their arrays, so what this process reports
(results, canaries, every read, write, atomic and barrier) is the grader's
own observation. The simulator is used on every grader, with or without a GPU:
the same kernel gets the same verdict on a laptop and on a GPU node.

Requests: ``define`` (the kernel's :meth:`KernelSource.as_plain`), ``launch``
(grid, block and arguments: numbers, arrays, or ``{"$guarded": buffer,
"pad": p}`` for an output surrounded by canaries), and ``report`` (one of the
counted launches of :mod:`demos.patterns.reports`).
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
from typing import Any

import numpy as np

from demos.grading import wire
from grader.verdicts import SECRET_VARIABLE

#: How long one request may take before the runner is stopped (seconds).
REQUEST_TIMEOUT = 60.0


class KernelRunnerError(RuntimeError):
    """The runner stopped, timed out or answered nonsense: the test cannot be decided."""


class KernelRunner:
    """A runner process for one notebook (started on first use, stopped by :meth:`close`)."""

    def __init__(self, timeout: float = REQUEST_TIMEOUT) -> None:
        self.timeout = timeout
        self._process: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        env = {k: v for k, v in os.environ.items() if k != SECRET_VARIABLE}
        env |= {"NUMBA_ENABLE_CUDASIM": "1", "PYTHONWARNINGS": "ignore"}
        return subprocess.Popen(
            [sys.executable, "-m", "grader.verdicts.kernel_runner"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )

    def start(self) -> None:
        """Start the process now (its imports then overlap with the notebook's kernel starting)."""
        if self._process is None or self._process.poll() is not None:
            self._process = self._start()

    def request(self, **request: Any) -> dict:
        """Send one request; its reply (``{"error": ...}`` when the kernel failed)."""
        self.start()
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        try:
            process.stdin.write(wire.dumps(request) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            self.close()
            raise KernelRunnerError("the kernel runner stopped") from None
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(self.timeout):
                self.close()
                raise KernelRunnerError(f"the kernel did not finish in {self.timeout:.0f} s")
        line = process.stdout.readline()
        if not line:
            self.close()
            raise KernelRunnerError("the kernel runner stopped")
        reply = wire.loads(line)
        if not isinstance(reply, dict):
            raise KernelRunnerError("the kernel runner answered nonsense")
        return reply

    def close(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def __enter__(self) -> KernelRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- the runner process ------------------------------------------------------------------
def _namespace(constants: dict[str, Any]) -> dict[str, Any]:
    import builtins as python_builtins
    import math

    import numba
    from numba import cuda

    from grader.verdicts.kernel_source import BUILTINS, EXCEPTIONS, TYPE_NAMES

    builtins = {name: getattr(python_builtins, name) for name in BUILTINS | EXCEPTIONS}
    names: dict[str, Any] = {
        "__builtins__": builtins,
        "cuda": cuda,
        "math": math,
        "numba": numba,
        "np": np,
        "numpy": np,
    }
    names |= {t: getattr(numba, t) for t in TYPE_NAMES if hasattr(numba, t)}
    names |= constants
    return names


class _Session:
    def __init__(self) -> None:
        self.kernels: dict[str, Any] = {}

    def define(self, request: dict) -> dict:
        from demos.patterns.simulator import enable_warp_shuffles

        enable_warp_shuffles()
        source = request["source"]
        names = _namespace(dict(source["constants"]))
        for text in source["functions"].values():
            exec(compile(text, f"<{source['name']}>", "exec"), names)  # noqa: S102  (checked source)
        self.kernels[source["name"]] = names[source["name"]]
        return {"ok": True}

    def launch(self, request: dict) -> dict:
        from numba import cuda

        kernel = self.kernels[request["kernel"]]
        args, guarded = [], []
        for arg in request["args"]:
            if isinstance(arg, dict) and "$guarded" in arg:
                buffer = cuda.to_device(np.asarray(arg["$guarded"]))
                pad = int(arg["pad"])
                region = tuple(slice(pad, s - pad) for s in buffer.shape)
                guarded.append(buffer)
                args.append(buffer[region])
            elif isinstance(arg, np.ndarray):
                args.append(arg)
            else:
                args.append(arg)
        kernel[tuple(request["grid"]), tuple(request["block"])](*args)
        return {
            "arrays": [a if isinstance(a, np.ndarray) else None for a in args],
            "guarded": [b.copy_to_host() for b in guarded],
        }

    def report(self, request: dict) -> dict:
        from demos.patterns import reports

        kernel = self.kernels[request["kernel"]]
        function = {
            "histogram": reports.histogram_report,
            "block_sum": reports.block_sum_report,
            "weighted_histogram": reports.weighted_histogram_report,
            "block_max": reports.block_max_report,
        }[request["kind"]]
        return {"report": function(kernel, *request["args"], **request.get("kwargs", {}))}


def _serve() -> None:
    session = _Session()
    for line in sys.stdin:
        try:
            request = wire.loads(line)
            reply = (
                getattr(session, request["op"])(request)
                if request["op"] in ("define", "launch", "report")
                else {"error": "unknown request"}
            )
        except Exception as error:  # noqa: BLE001  (the kernel's failure is the answer)
            reply = {"error": f"{type(error).__name__}: {error}"[:300]}
        sys.stdout.write(wire.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
