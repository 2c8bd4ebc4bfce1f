"""Figures the docs derive from a result file, for the templates to quote.

A template writes what a result file holds; when a sentence quotes a figure
computed from several entries (a share, a spread, a sum over assignments), it
is computed here once, with a name, so that the template stays readable and
the arithmetic is tested like code.
"""

from __future__ import annotations

from typing import Any


class ClaimError(ValueError):
    """A sentence of a page no longer holds for the result it quotes."""


def require(condition: bool, claim: str) -> None:
    """Stop the rendering when the prose's ``claim`` is false for the data; writes nothing.

    Figures re-render by themselves, but a sentence such as "short of the library's
    sum" or "against the target of 10" must be re-read by a person when it stops holding.
    """
    if not condition:
        raise ClaimError(f"the docs claim {claim!r}, which the result files no longer support")


def sweep_cell(result: dict[str, Any], backend: str, n: int, timing: str) -> float:
    """The median seconds of one backend at one size of a distance sweep."""
    for run in result["results"]["runs"]:
        if run["backend"] == backend and run["n"] == n:
            return run[timing]["median_s"]
    raise KeyError(f"no {backend} at n={n} in the sweep")


def sweep_times(
    result: dict[str, Any],
    timing: str,
    sizes: list[int],
    backends: list[str] | None = None,
    gpu_only: bool = False,
) -> list[float]:
    """The median seconds of every run at ``sizes`` (of ``backends``; of GPU backends only)."""
    return [
        run[timing]["median_s"]
        for run in result["results"]["runs"]
        if run["n"] in sizes
        and timing in run
        and (backends is None or run["backend"] in backends)
        and (not gpu_only or "device" in run)
    ]


def column(rows: list[dict[str, Any]], key: str) -> list[Any]:
    """One key of every row (a key with a dot in it, like ``cp.einsum``, included)."""
    return [row[key] for row in rows]


def complete_run(result: dict[str, Any]) -> dict[str, Any]:
    """A grading run the docs quote: always one that graded its whole class."""
    if result.get("complete", True) is not True:
        raise ValueError("an incomplete grading run would be quoted as a finished one")
    if "complete" in result and result["graded_notebooks"] != result["total_notebooks"]:
        raise ValueError("a grading run marked complete did not grade every notebook")
    return result


def score(kind: dict[str, Any]) -> str:
    """One kind of student's score, ``10/10``: every notebook of a kind scored alike."""
    if len(kind["scores"]) != 1:
        raise ValueError(f"a kind scored differently across its notebooks: {kind['scores']}")
    return f"{kind['scores'][0]:g}/10"


def spread(values: list[float], decimals: int = 1) -> str:
    """``low to high`` (``1.1 to 3.2``), or the one value when both round alike."""
    low, high = (f"{v:.{decimals}f}" for v in (min(values), max(values)))
    return low if low == high else f"{low} to {high}"


def grading(result: dict[str, Any]) -> dict[str, Any]:
    """The derived figures of one ``python -m grader bench`` run."""
    run = complete_run(result)
    assignments = run["assignments"]
    looping = [a["by_kind"]["looping"] for a in assignments.values()]
    seconds = sum(a["notebook_seconds"] for a in assignments.values())
    looping_seconds = sum(k["count"] * k["mean_seconds"] for k in looping)
    good = {name: a["by_kind"]["good"]["mean_seconds"] for name, a in assignments.items()}
    phases = [a["by_kind"]["good"].get("mean_phase_seconds") for a in assignments.values()]
    return {
        "wall": run["wall_seconds"],
        "notebooks": sum(k["count"] for a in assignments.values() for k in a["by_kind"].values()),
        "notebook_seconds": seconds,
        "per_worker": seconds / run["workers"],
        "alone": run["wall_seconds"] - seconds / run["workers"],
        "looping": sum(k["count"] for k in looping),
        "looping_share": looping_seconds / seconds,
        "looping_low": min(k["mean_seconds"] for k in looping),
        "looping_high": max(k["mean_seconds"] for k in looping),
        "good": good,
        "phase": {
            name: spread([p[name] for p in phases])
            for name in ("start", "hidden_tests", "grader_cpu")
            if all(p and name in p for p in phases)
        },
        "serial": {
            n: a.get("serial_nbgrader_seconds_per_notebook") for n, a in assignments.items()
        },
    }


GLOBALS = {
    "require": require,
    "column": column,
    "sweep_cell": sweep_cell,
    "sweep_times": sweep_times,
    "grading": grading,
    "score": score,
    "spread": spread,
}
