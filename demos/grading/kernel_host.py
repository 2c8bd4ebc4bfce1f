"""The process that runs a student's checked kernels for the grader, inside the grading sandbox.

The grader (:class:`grader.verdicts.kernel_runner.KernelRunner`) starts this
module in a sandbox of its own, next to the notebook's: its own process tree
(the notebook's kernel cannot see, signal or trace it), no network, no
writable folder but its own ``/tmp``, the notebook's user id, memory cgroup
and limits. It lives in ``demos`` because that is what a sandbox can import;
the course folder, with ``grader``, is not there.

Only kernels that :mod:`grader.verdicts.kernel_source` accepted are sent here,
so what a launch reports (results, canaries, every read, write, atomic and
barrier) is an observation of code that cannot reach anything but its
arrays; the sandbox is there in case the checker is ever wrong. The
simulator is used on every grader, with or without a GPU, so a kernel gets
the same verdict on a laptop and on a GPU node.

Requests and replies are lines of :mod:`demos.grading.wire` text on stdin and
stdout: ``define`` (the kernel's checked source and the names it may use),
``launch`` (grid, block and arguments: numbers, arrays, or ``{"$guarded":
buffer, "pad": p}`` for an output surrounded by canaries) and ``report`` (one
of the counted launches of :mod:`demos.patterns.reports` or :mod:`.compaction`).
"""

from __future__ import annotations

import ctypes
import sys
import threading
import types
from typing import Any

import numpy as np

from demos.grading import wire

#: Stack of each simulated thread: a block of 1,024 threads then reserves 512 MiB of
#: address space instead of 8 GiB, so the sandbox's address-space limit can be tight.
THREAD_STACK_BYTES = 512 << 10

_PR_SET_DUMPABLE = 4


def _not_traceable() -> None:
    """Make this process untraceable by its own user id (``PR_SET_DUMPABLE`` 0).

    Where there is no bubblewrap, the notebook's kernel runs under the same user
    id in the same process tree; without this it could attach to this process
    and change what it answers.
    """
    try:
        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0)
    except (OSError, AttributeError):  # not Linux: nothing to do
        pass


def _namespace(allowed: dict[str, list[str]], constants: dict[str, Any]) -> dict[str, Any]:
    """The globals a checked kernel is defined in: the names its checker allowed, no more.

    ``numba`` and ``np`` are stand-ins holding only the scalar types (a kernel
    writes ``numba.float32``), so that even an attribute path the checker let
    through by mistake leads nowhere.
    """
    import builtins as python_builtins
    import math

    import numba
    from numba import cuda

    builtins = {
        name: getattr(python_builtins, name)
        for name in [*allowed["builtins"], *allowed["exceptions"]]
        if hasattr(python_builtins, name)
    }
    scalar_types = {t: getattr(numba, t) for t in allowed["types"] if hasattr(numba, t)}
    names: dict[str, Any] = {
        "__builtins__": builtins,
        "cuda": cuda,
        "math": math,
        "numba": types.SimpleNamespace(cuda=cuda, **scalar_types),
        "np": types.SimpleNamespace(**scalar_types),
        "numpy": types.SimpleNamespace(**scalar_types),
    }
    return names | scalar_types | constants


class _Session:
    """The kernels defined so far for one notebook."""

    def __init__(self) -> None:
        self.kernels: dict[str, Any] = {}

    def define(self, request: dict) -> dict:
        source = request["source"]
        names = _namespace(request["allowed"], dict(source["constants"]))
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
            else:
                args.append(arg)
        kernel[tuple(request["grid"]), tuple(request["block"])](*args)
        return {
            "arrays": [a if isinstance(a, np.ndarray) else None for a in args],
            "guarded": [b.copy_to_host() for b in guarded],
        }

    def report(self, request: dict) -> dict:
        from demos.grading import compaction
        from demos.patterns import reports

        kernel = self.kernels[request["kernel"]]
        function = {
            "histogram": reports.histogram_report,
            "block_sum": reports.block_sum_report,
            "weighted_histogram": reports.weighted_histogram_report,
            "block_max": reports.block_max_report,
            "compaction_count": compaction.count_report,
            "compaction_scatter": compaction.compact_report,
        }[request["kind"]]
        return {"report": function(kernel, *request["args"], **request.get("kwargs", {}))}


def serve(lines: Any = sys.stdin, out: Any = sys.stdout) -> None:
    """Answer each request line until the grader closes the pipe."""
    from demos.patterns.simulator import enable_warp_shuffles

    enable_warp_shuffles(force=True)
    session = _Session()
    for line in lines:
        try:
            request = wire.loads(line)
            reply = (
                getattr(session, request["op"])(request)
                if request["op"] in ("define", "launch", "report")
                else {"error": "unknown request"}
            )
        except Exception as error:  # noqa: BLE001  (the kernel's failure is the answer)
            reply = {"error": f"{type(error).__name__}: {error}"[:300]}
        out.write(wire.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    import os

    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported: never a real GPU here
    _not_traceable()
    threading.stack_size(THREAD_STACK_BYTES)
    serve()
