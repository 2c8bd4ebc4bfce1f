"""One student's ``nbgrader autograde``, forked from a process that has nbgrader loaded.

Importing nbgrader takes about 3 s on a 2-core machine (most of it
in ``jsonschema``'s format checker, which nbformat pulls in and which compiles a
grammar at import), which was half of a student's grading time. So
:mod:`grader.run.batch` starts one multiprocessing *forkserver* that imports this
module once, and each student is graded in a fresh fork of it: a clean process
of its own (its own session, its own environment, killed with the grading
command) without paying for the imports again.
"""

from __future__ import annotations

import json
import os
import sys
from multiprocessing import forkserver

# Loaded once, in the forkserver; every fork starts with these modules in memory.
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader

# the grader's preprocessors that nbgrader_config.py names, with the hidden-test machinery
from grader.integration import grades, preprocessors, stderr  # noqa: F401
from grader.sandbox.processes import die_with_parent
from grader.verdicts.originality import course_fingerprints

# The fingerprints of the course's own functions (about a second of tokenizing on a
# 2-core machine), made once here rather than in every notebook's hidden tests.
course_fingerprints()


def _release_the_servers_lifeline() -> None:
    """Close this fork's copy of the grading command's end of the forkserver's "alive" pipe.

    The forkserver exits when that pipe's last writer closes, i.e. when the
    grading command dies; but multiprocessing hands every fork a copy of the
    writer (for forks of its own, which a grading never makes). With it open,
    a SIGKILLed command left its forkserver and every grading in flight alive
    as orphans (their ``die_with_parent`` waits on the forkserver), holding
    sandbox user ids whose clean-up then killed the next run's kernels.
    """
    server = forkserver._forkserver  # the module's one ForkServer (no public handle)
    alive = getattr(server, "_forkserver_alive_fd", None)
    if alive is not None:
        os.close(alive)
        server._forkserver_alive_fd = None


def grade(root: str, assignment: str, student: str, env: dict[str, str], log: str) -> None:
    """Autograde *student* in their course copy *root*; the outcome goes to ``result.json``.

    Runs in a forked child: it makes itself a session leader (so the grading
    command can kill it and the kernel it starts as one group), dies with the
    forkserver, and takes *env* as its whole environment.
    """
    os.setsid()
    die_with_parent()
    _release_the_servers_lifeline()
    if os.getppid() == 1:
        sys.exit("the grading command has ended")
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for stream in (1, 2):
        os.dup2(descriptor, stream)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(root)
    config = PyFileConfigLoader("nbgrader_config.py", path=root).load_config()
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    result = api.autograde(assignment, student, force=True, create=True)
    with open(os.path.join(root, "result.json"), "w") as f:
        json.dump(
            {
                "success": bool(result["success"]),
                "log": result.get("log") or "",
                "error": result.get("error") or "",
            },
            f,
        )
