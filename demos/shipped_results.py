"""The measured results shipped in ``demos/results/``: one way to find and read them.

Every number a chapter prints beside a live measurement, every figure and
every check of the prose against data comes from a JSON file there, written by
the course's benchmark commands (:mod:`demos.benchmarks.record`). Readers ask
:func:`load` for a file by name and decide themselves what to say when a copy
of the course lacks it. Importing this module reads nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

#: Where the reference results live (the benchmarks' ``--output`` for a reference run).
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def read_json(path: str | os.PathLike) -> Any:
    """The JSON in *path* (UTF-8), shipped or a run of one's own."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def path_of(name: str) -> Path:
    """``demos/results/<name>``, with ``.json`` added when *name* has no suffix."""
    return RESULTS_DIR / (name if Path(name).suffix else f"{name}.json")


def load(name: str, *, required: bool = False) -> Any:
    """The shipped result *name* (``"lessons.json"`` or ``"lessons"``), None when not shipped.

    With *required*, a missing file raises :class:`FileNotFoundError` instead.
    """
    path = path_of(name)
    if not path.exists():
        if required:
            raise FileNotFoundError(f"no shipped result demos/results/{path.name}")
        return None
    return read_json(path)
