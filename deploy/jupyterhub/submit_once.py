"""Submitting a batchspawner job exactly once, when the scheduler may not answer in time.

A scheduler that does not answer in time (a busy or restarting slurmctld) may
still take a submission that its ``sbatch`` reported as failed. Every
submission therefore carries a name of its own (the spawner's
:meth:`SubmitOnceMixin.job_name_prefix` and ``-<random>``); when the submit fails
or times out, the spawner asks the scheduler for that name until it answers (a
bounded wait) and takes the job over if it is there. A name whose fate is still
open when the wait ends is looked up again before the student's next submission
(a retry never books a second one: the earlier job is cancelled first, as it
holds the failed try's credentials) and by a background check, which cancels the
job when it appears. What the student reads is a sentence
(:class:`StudentMessage`), never the scheduler's raw output.

The course spawner (course_spawner.py) mixes this into batchspawner's Slurm and
LSF spawners; it says how the scheduler is asked for jobs by name
(``batch_find_cmd``).
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from typing import ClassVar

from batchspawner import format_template
from tornado import web
from traitlets import Float, Unicode
from traitlets.config import Configurable


class StudentMessage(web.HTTPError):
    """A failed spawn, told to the student in a sentence (JupyterHub's ``jupyterhub_message``)."""

    def __init__(self, sentence: str, status: int = 503) -> None:
        super().__init__(status, "%s", sentence)
        self.jupyterhub_message = sentence

    def __str__(self) -> str:
        return self.jupyterhub_message


class NoAnswer(Exception):
    """The scheduler did not answer a query."""


def scheduler_reason(error: BaseException | None) -> str:
    """The scheduler's reason without its program prefixes (``sbatch: error: ...``)."""
    text = str(error or "").strip().splitlines()
    lines = [re.sub(r"^\S+: error: (Batch job submission failed: )?", "", line) for line in text]
    return " ".join(line.strip() for line in lines if line.strip())[:300] or "no reason given"


class SubmitOnceMixin(Configurable):
    """batchspawner's ``submit_batch_script``, made safe against a scheduler that is silent."""

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

    def job_name_prefix(self) -> str:
        """The name every submission of this spawner starts with (a spawner says which)."""
        raise NotImplementedError

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
            raise NoAnswer(scheduler_reason(error)) from error
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
            self.job_name = f"{self.job_name_prefix()}-{secrets.token_hex(6)}"
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
                f"The cluster's scheduler did not accept your session: {scheduler_reason(error)}. "
                "Please try again with other choices, or ask your instructor."
            )
