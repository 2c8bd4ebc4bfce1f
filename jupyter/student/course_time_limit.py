"""When the batch job that runs this server reaches its time limit, for the lab page.

A course session is a Slurm or LSF job: at its time limit the scheduler kills
JupyterLab, and with it the kernels and whatever was not saved. Every job that
starts the course asks the scheduler for a warning signal (SIGUSR1) some minutes
before the limit (Slurm ``--signal=B:USR1@SECONDS``, LSF ``-wa USR1 -wt
MINUTES``); the job's shell passes it on to this server, or it arrives here
directly (the hub's job runs the server in place of its shell). This server
extension records it and answers ``GET <base_url>/gpu-course/time-limit``, which
the course's JupyterLab plugin asks every few seconds: when the warning has come
it shows a notification with the time left and saves the open documents.

The job's environment says the rest: ``COURSE_WARN_SECONDS``, how long before
the limit the signal comes, and ``COURSE_JOB_ENDS_AT``, the limit itself (Unix
time) where the job knows it; a server that is no job (``./course.sh lab``)
knows neither and never warns.
"""

from __future__ import annotations

import json
import os
import signal
import time

from jupyter_server.base.handlers import APIHandler
from tornado import web

ROUTE = "/gpu-course/time-limit"
POLL_SECONDS = 10  # how often the page asks; the warning comes minutes before the limit


def _number(name: str) -> float | None:
    """The environment variable *name* as a number, or None when unset or no number."""
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return None


class TimeLimit:
    """The job's limit as far as this server knows it: its end time and the warning."""

    def __init__(self) -> None:
        self.warn_seconds = _number("COURSE_WARN_SECONDS")
        self.ends_at = _number("COURSE_JOB_ENDS_AT")
        self.warned_at: float | None = None

    def signalled(self, *_args: object) -> None:
        """The scheduler's warning arrived (a second one changes nothing)."""
        if self.warned_at is None:
            self.warned_at = time.time()
            if self.warn_seconds is not None:
                signalled_end = self.warned_at + self.warn_seconds
                self.ends_at = min(self.ends_at or signalled_end, signalled_end)

    def state(self, now: float) -> dict[str, object]:
        """What the page needs: whether to warn, the seconds left (None: unknown), and
        when to ask again (None: never)."""
        warned = self.warned_at is not None
        if not warned and self.ends_at is not None and self.warn_seconds is not None:
            warned = now >= self.ends_at - self.warn_seconds  # no signal came (yet)
        left = None if self.ends_at is None else max(0, round(self.ends_at - now))
        # A server that is no course job (./course.sh lab) is not asked again.
        job = self.warn_seconds is not None or self.ends_at is not None
        return {
            "warned": warned,
            "seconds_left": left,
            "poll_seconds": POLL_SECONDS if job else None,
        }


class TimeLimitHandler(APIHandler):
    # The page asks all the time: that is no activity, or the idle limit never comes.
    _track_activity = False

    @web.authenticated
    def get(self) -> None:
        self.finish(json.dumps(self.settings["course_time_limit"].state(time.time())))


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "course_time_limit"}]


def _load_jupyter_server_extension(serverapp) -> None:  # type: ignore[no-untyped-def]
    from jupyter_server.utils import url_path_join

    limit = TimeLimit()
    # Jupyter's own SIGUSR1 handler (it prints the server's state) is set up before
    # extensions load: this one takes its place.
    signal.signal(signal.SIGUSR1, limit.signalled)
    webapp = serverapp.web_app
    webapp.settings["course_time_limit"] = limit
    route = url_path_join(webapp.settings["base_url"], ROUTE)
    webapp.add_handlers(".*$", [(route, TimeLimitHandler)])
    serverapp.log.info("course_time_limit: warned %s s before the limit", limit.warn_seconds)


load_jupyter_server_extension = _load_jupyter_server_extension
