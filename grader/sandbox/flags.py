"""Flags for the reviewer, written while a notebook is graded and read by :mod:`grader.run.batch`.

The grading pieces that notice something (the integrity check in nbgrader's
process, the memory watcher beside the kernel) run in different processes, so
they append one JSON line each to the file named by ``GRADER_FLAGS_FILE``.
"""

from __future__ import annotations

import json
import os

#: Where flags are listed (one JSON line each), when the grader sets it.
FLAGS_ENV = "GRADER_FLAGS_FILE"


def record_flag(grade_id: str, reason: str) -> None:
    """Append one flag (*grade_id* may name a cell or a part such as ``memory``)."""
    path = os.environ.get(FLAGS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"grade_id": grade_id, "reason": reason}) + "\n")
