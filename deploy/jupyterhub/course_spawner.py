"""batchspawner's Slurm and LSF spawners, asking for a course session.

The form offers what deploy/session.yml and the site file allow (cores, GPUs
and their type, memory, hours, partition or queue, account, reservation); the
choice is checked by :meth:`course_session.Session.request` and becomes the job
script's scheduler lines through the same table the OnDemand app uses. The job
runs deploy/start-course.sh (environment, students' mode, the student's copy of
the notebooks) around batchspawner's ``batchspawner-singleuser
jupyterhub-singleuser``. Stopping the server, or the idle culler, cancels the
job (batchspawner's ``scancel``/``bkill``).

A scheduler that does not answer in time (a busy or restarting slurmctld) may
still take a submission that its ``sbatch`` reported as failed. Every
submission therefore carries a name of its own (``gpu-course-hub-<random>``,
session.yml's ``job_names: hub``);
when the submit fails or times out, the spawner asks the scheduler for that name
until it answers (a bounded wait) and takes the job over if it is there. A name
whose fate is still open when the wait ends is looked up again before the
student's next submission (a retry never books a
second one: the earlier job is cancelled first, as it holds the failed try's
credentials) and by a background check, which cancels the job when it appears.
What the student reads is a sentence, never the scheduler's raw output; a job
that ends before its server starts is reported with the path of its log.
"""

from __future__ import annotations

import asyncio
import html
import re
import secrets
import time
from functools import cached_property
from pathlib import Path
from typing import ClassVar

from batchspawner import LsfSpawner, SlurmSpawner, format_template
from course_session import CHOICES, Session, site_file
from tornado import web
from traitlets import Float, Unicode, default
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


class StudentMessage(web.HTTPError):
    """A failed spawn, told to the student in a sentence (JupyterHub's ``jupyterhub_message``)."""

    def __init__(self, sentence: str, status: int = 503) -> None:
        super().__init__(status, "%s", sentence)
        self.jupyterhub_message = sentence

    def __str__(self) -> str:
        return self.jupyterhub_message


class NoAnswer(Exception):
    """The scheduler did not answer a query."""


def _reason(error: BaseException | None) -> str:
    """The scheduler's reason without its program prefixes (``sbatch: error: ...``)."""
    text = str(error or "").strip().splitlines()
    lines = [re.sub(r"^\S+: error: (Batch job submission failed: )?", "", line) for line in text]
    return " ".join(line.strip() for line in lines if line.strip())[:300] or "no reason given"


class CourseSpawnerMixin(Configurable):
    """The course's form and job script on top of a batchspawner spawner."""

    scheduler = ""  # "slurm" or "lsf": which table of session.yml asks for the resources
    # The job names (per user) whose submission failed or timed out and that no
    # scheduler answer has settled yet: the job may still appear.
    _unsettled: ClassVar[dict[str, set[str]]] = {}
    _locks: ClassVar[dict[str, asyncio.Lock]] = {}
    # How the scheduler is asked for the jobs of given names: one job id per line.
    batch_find_cmd = Unicode("").tag(config=True)

    submit_recovery_seconds = Float(
        90.0,
        help="After a failed or timed-out submission, how long to wait for the scheduler "
        "to say whether it took the job after all.",
    ).tag(config=True)
    settle_seconds = Float(
        1800.0,
        help="How long a background check keeps asking about a submission whose fate "
        "was still open, to cancel the job if it appears.",
    ).tag(config=True)
    submit_poll_interval = Float(3.0, help="Seconds between those questions.").tag(config=True)

    job_name = Unicode("")
    submitted_job_id = Unicode("")

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
        name = self.job_name or self.session.job_name("hub")
        subvars["directives"] = "\n".join(self.session.directives(request, self.scheduler, name))
        warning = self.session.warning_words(self.scheduler)
        subvars["warning"] = "\n".join(self.session.as_directives(warning, self.scheduler))
        subvars["body"] = self.session.job_body(subvars["cmd"])
        return format_template(self.batch_script, **subvars)

    # ------------------------------------------------- submitting, exactly once
    def _lock(self) -> asyncio.Lock:
        return self._locks.setdefault(self.user.name, asyncio.Lock())

    find_names_together = True  # the find command takes a comma-separated list

    async def _find(self, names: set[str]) -> list[str]:
        """The ids of live jobs with one of *names*; NoAnswer when the scheduler is silent."""
        if not self.find_names_together and len(names) > 1:
            return [found for name in sorted(names) for found in await self._find({name})]
        subvars = {**self.get_req_subvars(), "job_names": ",".join(sorted(names))}
        cmd = " ".join(
            (
                format_template(self.exec_prefix, **subvars),
                format_template(self.batch_find_cmd, **subvars),
            )
        )
        try:
            out = await self.run_command(cmd, env=self.get_env())
        except Exception as error:  # a time-out, or the scheduler's own error
            if re.search(r"no (unfinished )?job found|job <[^>]*> is not found", str(error), re.I):
                return []  # LSF's bjobs says so, with an error status, when none matches
            raise NoAnswer(_reason(error)) from error
        return [line.split()[0] for line in out.splitlines() if line.strip()]

    async def _cancel(self, job_id: str) -> None:
        subvars = {**self.get_req_subvars(), "job_id": job_id}
        cmd = " ".join(
            (
                format_template(self.exec_prefix, **subvars),
                format_template(self.batch_cancel_cmd, **subvars),
            )
        )
        try:
            await self.run_command(cmd, env=self.get_env())
        except Exception as error:
            self.log.warning("Could not cancel job %s of %s: %s", job_id, self.user.name, error)

    async def _settle(self, names: set[str], seconds: float) -> list[str] | None:
        """Ask for *names* until the scheduler answers (ids, maybe none) or *seconds* pass."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                return await self._find(names)
            except NoAnswer as error:
                self.log.warning("No answer about jobs %s yet: %s", sorted(names), error)
            if time.monotonic() + self.submit_poll_interval > deadline:
                return None
            await asyncio.sleep(self.submit_poll_interval)

    async def _take_over_earlier(self) -> str:
        """Settle this student's earlier, unsettled submissions before a new one."""
        names = set(self._unsettled.get(self.user.name, ()))
        if not names:
            return ""
        found = await self._settle(names, min(self.submit_recovery_seconds, 15.0))
        if found is None:
            raise StudentMessage(
                "The cluster's scheduler has not answered since your last try, so it is not "
                "known yet whether that request is in the queue; nothing new was booked. "
                "Please try again in a minute or two."
            )
        self._unsettled.get(self.user.name, set()).difference_update(names)
        # Such a job carries the failed try's credentials (its API token is revoked):
        # it is cancelled, and this try submits its own.
        for job_id in found:
            self.log.warning("Cancelling job %s of %s's failed try", job_id, self.user.name)
            await self._cancel(job_id)
        return ""

    async def _settle_in_background(self, name: str) -> None:
        """Cancel the job of a submission the student was told had failed, when it shows up."""
        deadline = time.monotonic() + self.settle_seconds
        while time.monotonic() < deadline:
            await asyncio.sleep(self.submit_poll_interval)
            async with self._lock():
                if name not in self._unsettled.get(self.user.name, set()):
                    return  # settled by a retry
                try:
                    found = await self._find({name})
                except NoAnswer:
                    continue
                self._unsettled[self.user.name].discard(name)
                for job_id in found:
                    self.log.warning(
                        "Cancelling job %s of %s: submitted while the scheduler did not answer",
                        job_id,
                        self.user.name,
                    )
                    await self._cancel(job_id)
                return

    async def submit_batch_script(self) -> str:
        async with self._lock():
            earlier = await self._take_over_earlier()
            if earlier:
                self.job_id = self.submitted_job_id = earlier
                return earlier
            self.job_name = f"{self.session.job_name('hub')}-{secrets.token_hex(6)}"
            error: BaseException | None = None
            try:
                job_id = await super().submit_batch_script()
            except Exception as failed:
                job_id, error = "", failed
            if job_id:
                self.submitted_job_id = job_id
                return job_id
            self.log.warning("Submission %s of %s failed: %s", self.job_name, self.user.name, error)
            unsettled = self._unsettled.setdefault(self.user.name, set())
            unsettled.add(self.job_name)
            found = await self._settle({self.job_name}, self.submit_recovery_seconds)
            if found is None:
                asyncio.ensure_future(self._settle_in_background(self.job_name))
                raise StudentMessage(
                    "The cluster's scheduler did not answer in time (it may be busy or "
                    "restarting), so your session could not be started. Please try again in "
                    "a minute or two; if your request still reaches the queue, it is "
                    "cancelled, so that you never hold two sessions."
                )
            unsettled.discard(self.job_name)
            for extra in found[1:]:
                await self._cancel(extra)
            if found:
                self.log.info("Job %s of %s was submitted after all", found[0], self.user.name)
                self.job_id = self.submitted_job_id = found[0]
                return found[0]
            raise StudentMessage(
                f"The cluster's scheduler did not accept your session: {_reason(error)}. "
                "Please try again with other choices, or ask your instructor."
            )

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
                    f"Your session could not be started: {_reason(error)}"
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
