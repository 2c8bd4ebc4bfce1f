"""The reference results of chapters 4a and 4b, and a helper for reading their timelines.

:func:`reference` reads a shipped result or says how to make one. The immediate
checks of chapter 4a's "your turn" cells are in :mod:`demos.checks.profiling_checks`,
with those of the other chapters.
"""

from __future__ import annotations

import json
from typing import Any

from demos.benchmarks.record import REFERENCE_DIR
from demos.profiling import timeline

#: Shipped reference results of this chapter and the command that makes each.
REFERENCES = {
    "profiling_h200": (
        "python -m demos bench profiling --output DIR  (then copy DIR/profiling.json)"
    ),
    "ncu_kernels_h200": "tools/gpu-node/ncu_kernels.sh DIR  (then copy DIR/ncu_kernels.json)",
    "patterns_h200": "python -m demos bench patterns --output DIR  (then copy DIR/patterns.json)",
}


def reference(name: str) -> dict[str, Any] | None:
    """``demos/results/<name>.json``, or None after saying that none is shipped and how to make
    it."""
    path = REFERENCE_DIR / f"{name}.json"
    if not path.exists():
        how = REFERENCES.get(name, "the chapter's benchmark command")
        print(
            f"No reference result demos/results/{name}.json "
            "is shipped with this copy of the course.\n"
            f"On a GPU node, make it with: {how}"
        )
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    gpus = data.get("environment", {}).get("gpus") or [{"name": "no GPU recorded"}]
    print(
        f"Reference: demos/results/{name}.json, measured on {gpus[0]['name']} "
        f"({data.get('environment', {}).get('date', 'date not recorded')})"
    )
    return data


def intervals_of(
    records: list[dict[str, Any]], name: str | None = None
) -> list[tuple[float, float]]:
    """(start, end) pairs of a recorded timeline, optionally only the steps called *name*."""
    return [(r["start_ms"], r["end_ms"]) for r in records if name is None or r["name"] == name]


__all__ = [
    "intervals_of",
    "reference",
    "timeline",
]
