"""One course session, as the hub and the Open OnDemand app start it.

Reads ``deploy/session.yml`` (the course's description: resources, how each
scheduler is asked for them, the environment and the students' mode) and a
site file on top (``deploy/site.example.yml``, copied to
``/etc/gpu-course/site.yml`` or named by ``GPU_COURSE_SITE``). A student's
choice from a form becomes a :class:`Request`, checked against the limits and
the site's lists before anything reaches a scheduler; :meth:`Session.scheduler_words`
turns it into scheduler options from the table in session.yml (filled in by
:mod:`demos.cluster.schedulers`, as for the course's other Python consumers),
which the OnDemand app reads as well (``ondemand/gpu-course/course.rb``).

``python deploy/course_session.py [--site FILE] [--scheduler lsf]`` prints the job script
the hub would submit for the default choices: a dry run for an instructor.
"""

from __future__ import annotations

import argparse
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from demos.cluster import schedulers

HERE = Path(__file__).resolve().parent
SESSION_FILE = HERE / "session.yml"
START_SCRIPT = HERE / "start-course.sh"
DEFAULT_SITE = Path("/etc/gpu-course/site.yml")
SCHEDULERS = ("slurm", "lsf")
# Names a scheduler option may carry: the launcher's rule (bin/gpu-jupyter, is_name).
NAME = schedulers.NAME
# The keys of session.yml's scheduler table that a session's job asks for (and gpus
# or gpus_of_type), in the table's order.
REQUEST_KEYS = (
    "always",
    "job_name",
    "cores",
    "memory",
    "time",
    "partition",
    "account",
    "reservation",
)
# The form's lists in the site file, and the request field each one fills.
CHOICES = {
    "partitions": "partition",
    "accounts": "account",
    "reservations": "reservation",
    "gpu_types": "gpu_type",
}


def _merge(base: dict, override: dict) -> dict:
    """*base* with *override* on top, nested dictionaries merged key by key."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _given(form: dict[str, Any], name: str, default: object) -> str:
    """The form's value for *name* as text, or *default* where the form left it out or empty."""
    value = form.get(name)
    return str(default if value is None or str(value).strip() == "" else value).strip()


def site_file() -> Path | None:
    """The site file in force: $GPU_COURSE_SITE, else /etc/gpu-course/site.yml if present."""
    named = os.environ.get("GPU_COURSE_SITE")
    if named:
        return Path(named)
    return DEFAULT_SITE if DEFAULT_SITE.exists() else None


@dataclass(frozen=True)
class Request:
    """A student's checked choice: whole numbers and names a scheduler accepts."""

    cores: int
    gpus: int
    memory_gb: int
    hours: int
    gpu_type: str = ""
    partition: str = ""
    account: str = ""
    reservation: str = ""


def _refuse_unknown_scheduler_keys(course: dict, site: dict, path: Path) -> None:
    """A site's scheduler_options may change the words of the keys session.yml has; a key it
    does not have (an old name such as ``memory_gb``, or a typo) would be read by nobody, so it
    is refused in one line instead of being ignored."""
    tables = course["scheduler_options"]
    known = sorted({key for table in tables.values() for key in table})  # keys jobs ask for
    for scheduler, table in (site.get("scheduler_options") or {}).items():
        if scheduler not in tables:
            raise ValueError(f"{path}: scheduler_options.{scheduler}: no such scheduler")
        unknown = sorted(set(table or {}) - set(known))
        if unknown:
            raise ValueError(
                f"{path}: scheduler_options.{scheduler} has {', '.join(unknown)}, which no course "
                f"job reads (the keys are: {', '.join(known)})"
            )


class Session:
    """The course's session description with the site's values on top."""

    def __init__(self, site: Path | None = None) -> None:
        self.settings: dict[str, Any] = yaml.safe_load(SESSION_FILE.read_text())
        self.site_path = site
        if site is not None:
            overrides = yaml.safe_load(site.read_text()) or {}
            _refuse_unknown_scheduler_keys(self.settings, overrides, site)
            self.settings = _merge(self.settings, overrides)
        schedulers.check(self.settings["scheduler_options"], site or SESSION_FILE)
        self.scheduler = self.settings.get("scheduler", "slurm")
        if self.scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler must be slurm or lsf, not {self.scheduler!r}")

    # ----------------------------------------------------------------- values
    @property
    def resources(self) -> dict[str, dict[str, int]]:
        return self.settings["resources"]

    def choices(self, name: str) -> list[str]:
        """A site list of the form (partitions, accounts, ...), maybe empty."""
        return [str(c) for c in self.settings.get("choices", {}).get(name) or []]

    def default_request(self) -> Request:
        values = {name: spec["default"] for name, spec in self.resources.items()}
        for name, field in CHOICES.items():
            options = self.choices(name)
            values[field] = options[0] if options and field != "gpu_type" else ""
        return Request(**values)

    # ---------------------------------------------------------------- checking
    def request(self, form: dict[str, Any]) -> Request:
        """The checked request for a form's values (strings); missing fields take defaults.

        Raises ValueError with a sentence a student can act on.
        """
        default = self.default_request()
        values: dict[str, Any] = {}
        for name, spec in self.resources.items():
            raw = _given(form, name, getattr(default, name))
            if not raw.isdigit():
                raise ValueError(f"{name} must be a whole number, not {raw!r}")
            number, low = int(raw), 0 if name == "gpus" else 1
            if not low <= number <= spec["max"]:
                raise ValueError(f"{name} must be from {low} to {spec['max']}, not {number}")
            values[name] = number
        for list_name, field in CHOICES.items():
            raw = _given(form, field, getattr(default, field))
            options = self.choices(list_name)
            if raw and not NAME.match(raw):
                raise ValueError(f"{field} {raw!r} has characters such a name cannot have")
            if raw and raw not in options:
                raise ValueError(f"{field} {raw!r} is not offered here (offered: {options})")
            values[field] = raw
        if values["gpu_type"] and not values["gpus"]:
            raise ValueError("a GPU type needs 1 GPU or more")
        return Request(**values)

    # ----------------------------------------------------------- the scheduler
    def table(self, scheduler: str | None = None) -> dict[str, Any]:
        """One scheduler's words in session.yml (with the site's on top)."""
        return self.settings["scheduler_options"][scheduler or self.scheduler]

    def job_name(self, consumer: str) -> str:
        """The name session.yml gives the jobs of *consumer* (hub, ondemand, ...)."""
        return str(self.settings["job_names"][consumer])

    def scheduler_words(
        self, request: Request, scheduler: str | None = None, job_name: str = ""
    ) -> list[str]:
        """The scheduler's command-line options for *request* (and the job's name, if given)."""
        values = {
            **request.__dict__,
            "memory_mb": schedulers.memory_mb(request.memory_gb),
            "walltime": schedulers.walltime(request.hours * 60),
            "job_name": job_name,
        }
        gpus = "gpus_of_type" if request.gpu_type else "gpus"
        return schedulers.words(self.table(scheduler), (*REQUEST_KEYS, gpus), values)

    def warning_words(self, scheduler: str | None = None) -> list[str]:
        """The options that have the scheduler signal the job before its time limit.

        The job passes the signal on to JupyterLab, which warns the student and saves
        their notebooks: without it the limit kills the session unannounced.
        """
        minutes = int(self.settings["warn_minutes"])
        values = {"warn_minutes": minutes, "warn_seconds": minutes * 60}
        return schedulers.words(self.table(scheduler), ("warning",), values)

    def directives(
        self, request: Request, scheduler: str | None = None, job_name: str = ""
    ) -> list[str]:
        """The same options as job-script lines: ``#SBATCH --mem=...``, ``#BSUB -R "..."``."""
        return self.as_directives(self.scheduler_words(request, scheduler, job_name), scheduler)

    def as_directives(self, words: list[str], scheduler: str | None = None) -> list[str]:
        """Scheduler options as job-script lines, an option and its values on one line."""
        return schedulers.as_directives(words, self.table(scheduler))

    # --------------------------------------------------------------- the job
    def job_environment(self) -> dict[str, str]:
        """What deploy/start-course.sh needs in the job: where things are, the mode, idling."""
        edition = Path(self.settings.get("edition", "/shared/gpu-course"))
        mode, workspace = self.settings["mode"], self.settings["workspace"]
        return {
            "COURSE_EDITION": str(edition),
            "COURSE_VENV": str(self.settings.get("venv") or edition / ".venv"),
            "COURSE_MODULES": " ".join(self.settings.get("modules") or []),
            "COURSE_WORKSPACE": workspace["folder"],
            "COURSE_COPY": " ".join(workspace["copy"]),
            "COURSE_CONFIG_PATH": ":".join(str(edition / p) for p in mode["config_path"]),
            "COURSE_DATA_PATH": ":".join(str(edition / p) for p in mode["data_path"]),
            "COURSE_DEFAULT_URL": mode["default_url"],
            "COURSE_IDLE_SECONDS": str(round(float(self.settings["idle_minutes"]) * 60)),
            "COURSE_WARN_SECONDS": str(int(self.settings["warn_minutes"]) * 60),
        }

    def job_body(self, command: str) -> str:
        """Shell code that sets up the course and runs *command* (already quoted) in it."""
        exports = "".join(
            f"export {key}={shlex.quote(value)}\n" for key, value in self.job_environment().items()
        )
        return f"{exports}{START_SCRIPT.read_text()}\nstart_course {command}\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=site_file(), help="the site file")
    parser.add_argument("--scheduler", choices=SCHEDULERS, help="instead of the site's")
    args = parser.parse_args(argv)
    session = Session(args.site)
    request = session.default_request()
    print("\n".join(session.directives(request, args.scheduler)))
    print("\n".join(session.as_directives(session.warning_words(args.scheduler), args.scheduler)))
    print(session.job_body("batchspawner-singleuser jupyterhub-singleuser"))


if __name__ == "__main__":
    main()
