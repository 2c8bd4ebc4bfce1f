"""batchspawner's Slurm and LSF spawners, asking for a course session.

The form offers what deploy/session.yml and the site file allow (cores, GPUs
and their type, memory, hours, partition or queue, account, reservation); the
choice is checked by :meth:`course_session.Session.request` and becomes the job
script's scheduler lines through the same table the OnDemand app uses. The job
runs deploy/start-course.sh (environment, students' mode, the student's copy of
the notebooks) around batchspawner's ``batchspawner-singleuser
jupyterhub-singleuser``. Stopping the server, or the idle culler, cancels the
job (batchspawner's ``scancel``/``bkill``).
"""

from __future__ import annotations

import html
from functools import cached_property
from pathlib import Path

from batchspawner import LsfSpawner, SlurmSpawner, format_template
from course_session import CHOICES, Session, site_file
from traitlets import Unicode, default
from traitlets.config import Configurable

LABELS = {
    "cores": "CPU cores",
    "gpus": "GPUs",
    "memory_gb": "Memory (GB)",
    "hours": "Hours",
    "partition": "Partition / queue",
    "account": "Account",
    "reservation": "Reservation",
    "gpu_type": "GPU type",
}

# The job scripts, login shells like bin/gpu-jupyter's (the site's module system is
# set up there). {{directives}}: the scheduler lines of the student's choice;
# {{body}}: the course set-up and the server command (Session.job_body).
SLURM_SCRIPT = """#!/bin/bash -l
#SBATCH --job-name=gpu-course-hub
#SBATCH --output={{homedir}}/.gpu-course-hub-%j.log
#SBATCH --chdir={{homedir}}
#SBATCH --export={{keepvars}}
{{directives}}
set -eo pipefail
{{prologue}}
{{body}}
"""
LSF_SCRIPT = """#!/bin/bash -l
#BSUB -J gpu-course-hub
#BSUB -o {{homedir}}/.gpu-course-hub-%J.log
#BSUB -e {{homedir}}/.gpu-course-hub-%J.log
{{directives}}
set -eo pipefail
{{prologue}}
{{body}}
"""


class CourseSpawnerMixin(Configurable):
    """The course's form and job script on top of a batchspawner spawner."""

    scheduler = ""  # "slurm" or "lsf": which table of session.yml asks for the resources

    site = Unicode(
        help="The site file (default: $GPU_COURSE_SITE, else /etc/gpu-course/site.yml)"
    ).tag(config=True)

    @default("site")
    def _site_default(self) -> str:
        found = site_file()
        return str(found) if found else ""

    @cached_property
    def session(self) -> Session:
        return Session(Path(self.site) if self.site else None)

    @default("options_form")
    def _options_form_default(self) -> str:
        return options_form(self.session)

    def options_from_form(self, formdata: dict[str, list[str]]) -> dict:
        """The checked choice (ValueError, shown to the student, when it is not allowed)."""
        return self.session.request({k: v[0] for k, v in formdata.items() if v}).__dict__

    @default("apply_user_options")
    def _apply_user_options_default(self):
        # user_options may also come through the REST API: checked before the spawn
        # starts, so that a bad value is a clear 400 ("Invalid user options").
        return lambda spawner, user_options: spawner.session.request(user_options)

    async def _get_batch_script(self, **subvars) -> str:
        # batchspawner mixes user_options into the template's values; the script is
        # made from the spawner's own values and the checked request alone.
        request = self.session.request(self.user_options or {})
        subvars = {**self.get_req_subvars(), "cmd": self.cmd_formatted_for_batch()}
        subvars["directives"] = "\n".join(self.session.directives(request, self.scheduler))
        subvars["body"] = self.session.job_body(subvars["cmd"])
        return format_template(self.batch_script, **subvars)


class CourseSlurmSpawner(CourseSpawnerMixin, SlurmSpawner):
    scheduler = "slurm"
    batch_script = Unicode(SLURM_SCRIPT).tag(config=True)
    # The server runs in the job's batch step: scancel stops it, no srun needed.
    req_srun = Unicode("").tag(config=True)


class CourseLsfSpawner(CourseSpawnerMixin, LsfSpawner):
    scheduler = "lsf"
    batch_script = Unicode(LSF_SCRIPT).tag(config=True)

    def state_gethost(self) -> str | None:
        # bjobs names the host of a job with several cores as "4*node01".
        host = super().state_gethost()
        return host.split("*")[-1] if host else host


def spawner_for(scheduler: str) -> type:
    return {"slurm": CourseSlurmSpawner, "lsf": CourseLsfSpawner}[scheduler]


def options_form(session: Session) -> str:
    """The spawn form: number fields within the limits, lists where the site has them."""
    request = session.default_request()
    fields = {}
    for name, spec in session.resources.items():
        low = 0 if name == "gpus" else 1
        fields[name] = (
            f'<input class="form-control" type="number" id="{name}" name="{name}" '
            f'min="{low}" max="{spec["max"]}" value="{getattr(request, name)}">'
        )
    for list_name, field in CHOICES.items():
        options = session.choices(list_name)
        if field == "gpu_type" and options:
            options = ["", *options]
        items = "".join(
            f'<option value="{html.escape(o)}">{html.escape(o or "any")}</option>' for o in options
        )
        if items:
            fields[field] = (
                f'<select class="form-control" id="{field}" name="{field}">{items}</select>'
            )
    return "\n".join(
        f'<div class="form-group"><label for="{name}">{LABELS[name]}</label>{fields[name]}</div>'
        for name in session.settings["form"]
        if name in fields
    )
