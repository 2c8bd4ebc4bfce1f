"""batchspawner's Slurm and LSF spawners, asking for a course session.

The form (spawn_form.py) offers what deploy/session.yml and the site file allow
(cores, GPUs and their type, memory, hours, partition or queue, account,
reservation); the choice is checked by :meth:`course_session.Session.request` and
becomes the job script's scheduler lines through the same table the OnDemand app
uses. The job runs deploy/start-course.sh (environment, students' mode, the
student's copy of the notebooks) around batchspawner's ``batchspawner-singleuser
jupyterhub-singleuser``. Stopping the server, or the idle culler, cancels the
job (batchspawner's ``scancel``/``bkill``).

Every submission is made exactly once, even when the scheduler does not answer
in time (submit_once.py: a name of its own, ``gpu-course-hub-<random>`` from
session.yml's ``job_names: hub``, looked up after a failed or timed-out submit).
What the student reads is a sentence, never the scheduler's raw output; a job
that ends before its server starts is reported with the path of its log.
"""

from __future__ import annotations

import asyncio
from functools import cached_property
from pathlib import Path

from batchspawner import LsfSpawner, SlurmSpawner, format_template
from course_session import Session, site_file
from spawn_form import options_form
from submit_once import StudentMessage, SubmitOnceMixin, scheduler_reason
from traitlets import Unicode, default

# The job scripts, login shells like bin/gpu-jupyter's (the site's module system is
# set up there). {{directives}}: the scheduler lines of the student's choice and
# the job's name (session.yml's table, the only place that writes them);
# {{warning}}: the signal before the time limit, which reaches the server itself
# (start-course.sh ends in exec) and becomes JupyterLab's warning;
# {{body}}: the course set-up and the server command (Session.job_body).
SLURM_SCRIPT = """#!/bin/bash -l
#SBATCH --output={{homedir}}/.gpu-course-hub-%j.log
#SBATCH --chdir={{homedir}}
#SBATCH --export={{keepvars}}
{{directives}}
{{warning}}
set -eo pipefail
{{prologue}}
{{body}}
"""
LSF_SCRIPT = """#!/bin/bash -l
#BSUB -o {{homedir}}/.gpu-course-hub-%J.log
#BSUB -e {{homedir}}/.gpu-course-hub-%J.log
{{directives}}
{{warning}}
set -eo pipefail
{{prologue}}
{{body}}
"""


class CourseSpawnerMixin(SubmitOnceMixin):
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

    def job_name_prefix(self) -> str:
        """session.yml's ``job_names: hub``: every hub job's name begins with it."""
        return self.session.job_name("hub")

    async def _get_batch_script(self, **subvars) -> str:
        # batchspawner mixes user_options into the template's values; the script is
        # made from the spawner's own values and the checked request alone.
        request = self.session.request(self.user_options or {})
        subvars = {**self.get_req_subvars(), "cmd": self.cmd_formatted_for_batch()}
        name = self.job_name or self.job_name_prefix()
        subvars["directives"] = "\n".join(self.session.directives(request, self.scheduler, name))
        warning = self.session.warning_words(self.scheduler)
        subvars["warning"] = "\n".join(self.session.as_directives(warning, self.scheduler))
        subvars["body"] = self.session.job_body(subvars["cmd"])
        return format_template(self.batch_script, **subvars)

    def _log_path(self, job_id: str) -> str:
        return f"{self.req_homedir}/.gpu-course-hub-{job_id}.log"

    def state_gethost(self) -> str | None:
        self._job_running = True  # batchspawner waits for the server's port from here on
        return super().state_gethost()

    async def _watch(self, starting: asyncio.Future) -> None:
        """Wait for *starting*; a job that ends while its server is not up yet ends the wait.

        batchspawner notices a job that ends before it runs, but not one that ends
        between running and its server's first call to the hub (a missing or
        unreadable environment, a failed set-up): the student would wait for the
        whole start_timeout and then read an empty "timeout".
        """
        while not starting.done():
            await asyncio.wait({starting}, timeout=2)
            if starting.done() or not getattr(self, "_job_running", False) or self.port:
                continue
            status = await self.query_job_status()
            if status.name not in ("RUNNING", "PENDING", "UNKNOWN") and not starting.done():
                starting.cancel()
                raise RuntimeError(f"job {self.submitted_job_id} ended: {self.job_status}")

    async def start(self):
        self.submitted_job_id = ""
        self._job_running = False
        starting = asyncio.ensure_future(super().start())
        try:
            await self._watch(starting)
            return starting.result()
        except asyncio.CancelledError:
            starting.cancel()
            raise
        except StudentMessage:
            raise
        except Exception as error:
            job_id = self.submitted_job_id
            if not job_id:
                raise StudentMessage(
                    f"Your session could not be started: {scheduler_reason(error)}"
                ) from error
            await self._cancel(job_id)  # whatever is left of it
            log = self._log_path(job_id)
            tail = ""
            try:
                lines = Path(log).read_text(errors="replace").strip().splitlines()
                tail = " Its last line: " + lines[-1][:300] if lines else ""
            except OSError:
                pass
            raise StudentMessage(
                f"Your session (job {job_id}) ended before its server started. What it printed "
                f"is in {log}.{tail}",
                status=500,
            ) from error

    async def stop(self, now: bool = False):
        if not self.job_id:
            return  # nothing submitted (a failed try's job is settled as above)
        return await super().stop(now=now)


class CourseSlurmSpawner(CourseSpawnerMixin, SlurmSpawner):
    scheduler = "slurm"
    batch_script = Unicode(SLURM_SCRIPT).tag(config=True)
    # The server runs in the job's batch step: scancel stops it, no srun needed.
    req_srun = Unicode("").tag(config=True)
    batch_find_cmd = Unicode("squeue -h -n {job_names} -t PD,R,CF,S -o '%i'").tag(config=True)


class CourseLsfSpawner(CourseSpawnerMixin, LsfSpawner):
    scheduler = "lsf"
    batch_script = Unicode(LSF_SCRIPT).tag(config=True)
    # bjobs takes one name (or a pattern); the names differ after their common prefix.
    batch_find_cmd = Unicode("bjobs -noheader -o jobid -J {job_names}").tag(config=True)
    find_names_together = False

    def state_gethost(self) -> str | None:
        # bjobs names the host of a job with several cores as "4*node01".
        host = super().state_gethost()
        return host.split("*")[-1] if host else host


def spawner_for(scheduler: str) -> type:
    return {"slurm": CourseSlurmSpawner, "lsf": CourseLsfSpawner}[scheduler]
