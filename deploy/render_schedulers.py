"""Write the copies of session.yml's scheduler description for the consumers that cannot read it.

``deploy/session.yml`` is the one place where Slurm and LSF options, the jobs'
names, the warning signal and the session defaults are written. The hub and the
OnDemand app read it; three consumers cannot:

* ``bin/gpu-jupyter`` is bash on a student's laptop, without a YAML reader: it
  sources ``bin/gpu-jupyter.d/scheduler_options.sh``, the table as bash functions
  that fill in the launcher's own variables;
* the Dask workers and the grader's Slurm array run from the student edition or
  the installed package, which carry no ``deploy/``: they read
  ``demos/cluster/schedulers.json`` (through :mod:`demos.cluster.schedulers`).

``python deploy/render_schedulers.py`` writes both after session.yml changes;
``--check`` only says whether the committed copies are stale (CI runs it through
tests/deploy/test_scheduler_description.py).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

from demos.cluster import schedulers

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SESSION_FILE = HERE / "session.yml"
BASH_COPY = ROOT / "bin" / "gpu-jupyter.d" / "scheduler_options.sh"
JSON_COPY = ROOT / "demos" / "cluster" / "schedulers.json"
#: What the copies carry of session.yml.
SHARED = ("scheduler_options", "job_names", "warn_minutes")
#: Each ``{value}`` of the table (schedulers.VALUES) and the launcher's variable holding it.
LAUNCHER_VARIABLES = {
    "cores": "cores",
    "gpus": "gpus",
    "gpu_type": "gpu_type",
    "memory_mb": "mem_mb",
    "walltime": "walltime",
    "partition": "queue",
    "account": "account",
    "reservation": "reservation",
    "qos": "qos",
    "constraint": "constraint",
    "job_name": "job_name",
    "tag": "session_tag",
    "warn_seconds": "warn_lead",
    "warn_minutes": "warn_minutes",
}
FIELD = schedulers.FIELD
HEADER = "Generated from deploy/session.yml by deploy/render_schedulers.py: do not edit"


def load(description: Path = SESSION_FILE) -> dict[str, Any]:
    """session.yml's settings, with a clear error where the table has a bad entry."""
    settings = yaml.safe_load(description.read_text())
    schedulers.check(settings["scheduler_options"], description)
    return settings


def _bash_word(word: str) -> str:
    """*word* as a double-quoted bash word, each ``{value}`` the launcher's variable."""
    parts = FIELD.split(word)  # literal, name, literal, name, ...
    text = "".join(
        f"${{{LAUNCHER_VARIABLES[part]}}}" if i % 2 else re.sub(r'(["$`\\])', r"\\\1", part)
        for i, part in enumerate(parts)
    )
    return f'"{text}"'


def bash_copy(settings: dict[str, Any]) -> str:
    """The launcher's copy: its defaults, its job name, and per scheduler S and key K the
    function ``S_words_K`` (the words, one a line) and ``S_fields_K`` (the values they need)."""
    resources = settings["resources"]
    lines = [
        "# shellcheck shell=bash",
        f"# {HEADER}.",
        "# bin/gpu-jupyter's defaults, its jobs' name and each scheduler's options, filled in",
        "# from the launcher's variables (schedulers.sh: scheduler_words).",
        "# shellcheck disable=SC2034,SC2154 # read through ${!name}; the launcher sets the values",
        "{",
        f"default_cores={int(resources['cores']['default'])}",
        f"default_gpus={int(resources['gpus']['default'])}",
        f"default_memory_gb={int(resources['memory_gb']['default'])}",
        f"default_hours={int(resources['hours']['default'])}",
        f"default_idle_minutes={int(settings['idle_minutes'])}",
        f"most_warn_minutes={int(settings['warn_minutes'])}",
        f"job_name={settings['job_names']['launcher']}",
    ]
    for scheduler, table in settings["scheduler_options"].items():
        keys = [key for key in table if key != "directive"]
        lines += [
            f"{scheduler}_directive='{table['directive']}'",
            f'{scheduler}_keys="{" ".join(keys)}"',
        ]
        for key in keys:
            names = dict.fromkeys(FIELD.findall(" ".join(table[key])))
            fields = " ".join(LAUNCHER_VARIABLES[name] for name in names)
            lines.append(f'{scheduler}_fields_{key}="{fields}"')
            words = " ".join(_bash_word(word) for word in table[key])
            lines.append(f"{scheduler}_words_{key}() {{ printf '%s\\n' {words}; }}")
    return "\n".join([*lines, "}"]) + "\n"


def json_copy(settings: dict[str, Any]) -> str:
    """The Python consumers' copy (demos.cluster.schedulers reads it)."""
    return json.dumps({"_": HEADER, **{k: settings[k] for k in SHARED}}, indent=1) + "\n"


def rendered(description: Path = SESSION_FILE) -> dict[Path, str]:
    """Each copy's path and the text a fresh rendering of *description* gives it."""
    settings = load(description)
    return {BASH_COPY: bash_copy(settings), JSON_COPY: json_copy(settings)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether a copy is stale")
    args = parser.parse_args(argv)
    try:
        copies = rendered()
    except (ValueError, KeyError) as error:
        print(f"render_schedulers: {error}", file=sys.stderr)
        return 2
    stale = [path for path, text in copies.items() if not path.exists() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run python deploy/render_schedulers.py")
        return 1 if stale else 0
    for path in stale:
        path.write_text(copies[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
