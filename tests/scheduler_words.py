"""What the course's scheduler description says, worked out independently of its readers.

The consumers' tests (the launcher, the hub, OnDemand, the Dask workers, the
grader's array) compare what each asks the scheduler with :func:`described`:
the header lines of one key of deploy/session.yml's table, filled in here by
plain text replacement rather than by the readers' own code. It reads the
copy in ``demos/cluster/schedulers.json`` (also in the student edition, which
has no deploy/); tests/deploy/test_scheduler_description.py keeps that copy
equal to session.yml.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from demos.cluster import schedulers


def described(
    scheduler: str, key: str, description: Path | None = None, **values: object
) -> list[str]:
    """The job-script header lines that *key* of *scheduler*'s table gives for *values*."""
    table: dict[str, Any] = schedulers.description(description)["scheduler_options"][scheduler]
    lines: list[str] = []
    for word in table[key]:
        for name, value in values.items():
            word = word.replace(f"{{{name}}}", str(value))
        if word.startswith("-"):
            lines.append(f"{table['directive']} {word}")
        else:  # a value: quoted unless it is a plain name
            lines[-1] += f" {word}" if re.fullmatch(r"[\w.+:-]+", word) else f' "{word}"'
    return lines
