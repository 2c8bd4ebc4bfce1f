"""Slurm's and LSF's words for a course job, filled in from the course's one description.

``deploy/session.yml`` is the only place where the course writes a Slurm or LSF
option (see its opening comment). The Python that submits jobs asks for them
here, so that every Python consumer fills and quotes the table alike: the
course hub (``deploy/course_session.py``, with session.yml and the site file
read by itself), and the Dask workers (:mod:`demos.cluster.dask_jobs`) and the
grader's Slurm array (:mod:`grader.run.slurm`), which read ``schedulers.json``
beside this module: a copy of the description that
``python deploy/render_schedulers.py`` writes, because the student edition and
the installed package have no ``deploy/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

#: The rendered copy of deploy/session.yml's scheduler description.
TABLE_FILE = Path(__file__).with_name("schedulers.json")
#: A value that needs no quotes in a job script's header line (bin/gpu-jupyter's is_name).
NAME = re.compile(r"^[A-Za-z0-9_.+:-]+$")
#: A value's place in a word: ``{cores}``.
FIELD = re.compile(r"\{(\w+)\}")
#: The values a word may name (what the consumers fill in).
VALUES = (
    *("cores", "gpus", "gpu_type", "memory_mb", "walltime", "partition", "account"),
    *("reservation", "qos", "constraint", "job_name", "tag", "warn_seconds", "warn_minutes"),
)


def description(path: Path | None = None) -> dict[str, Any]:
    """The scheduler description (``scheduler_options``, ``job_names``, ``warn_minutes``)."""
    return json.loads((path or TABLE_FILE).read_text())


def check(options: Mapping[str, Any], source: object) -> None:
    """Refuse, in one line naming *source* and the entry, a table the consumers could not fill.

    *options* is the description's ``scheduler_options`` (one table per scheduler).
    """
    for scheduler, table in options.items():
        for key, entry in table.items():
            where = f"{source}: scheduler_options.{scheduler}.{key}"
            if key == "directive":
                if not isinstance(entry, str) or not entry.startswith("#"):
                    raise ValueError(f"{where} must be a header prefix such as '#SBATCH'")
                continue
            if not isinstance(entry, list) or not all(isinstance(w, str) for w in entry):
                raise ValueError(f"{where} must be a list of words")
            unknown = sorted(set(FIELD.findall(" ".join(entry))) - set(VALUES))
            if unknown:
                raise ValueError(
                    f"{where} names unknown values {unknown} (known: {', '.join(VALUES)})"
                )


def words(table: Mapping[str, Any], keys: Collection[str], values: Mapping[str, Any]) -> list[str]:
    """The words of the *keys* of one scheduler's *table*, in the table's order, filled in.

    A key whose values are empty or 0 (no reservation, 0 GPUs) adds nothing, so a
    consumer may ask for every key it knows and pass only what it has.
    """
    found: list[str] = []
    for key, entry in table.items():
        if key not in keys:
            continue
        if any(not values.get(name) for name in FIELD.findall(" ".join(entry))):
            continue
        found += [FIELD.sub(lambda m: str(values[m.group(1)]), word) for word in entry]
    return found


def option_lines(found: list[str]) -> list[str]:
    """Words as options, each with its values on one line (LSF's header wants some quoted)."""
    lines: list[list[str]] = []
    for word in found:
        if word.startswith("-") or not lines:
            lines.append([word])
        else:
            lines[-1].append(word if NAME.match(word) else f'"{word}"')
    return [" ".join(line) for line in lines]


def as_directives(found: list[str], table: Mapping[str, Any]) -> list[str]:
    """Words as a job script's header lines: ``#SBATCH --mem=...``, ``#BSUB -R "..."``."""
    return [f"{table['directive']} {line}" for line in option_lines(found)]


def walltime(minutes: int) -> str:
    """A run-time limit as the description's ``{walltime}``: H:MM."""
    return f"{minutes // 60}:{minutes % 60:02d}"


def memory_mb(gigabytes: float) -> int:
    """The description's ``{memory_mb}`` (MiB, as both schedulers count) of *gigabytes* GiB."""
    return round(gigabytes * 1024)
