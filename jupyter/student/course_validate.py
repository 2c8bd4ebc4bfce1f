"""Validate that retries when its checker's kernel cannot start, and then says so.

nbgrader's Validate runs the notebook in a new kernel. On a node where many
students start kernels at once, one may die before it answers (a busy node; with
TCP kernels two could pick the same port, which the students' mode avoids with
``KernelManager.transport = "ipc"``). nbgrader would show the student a Python
traceback. This server extension (``jupyter_server_config.py`` beside it puts
this folder on the path, ``jupyter_server_config.json`` turns it on) answers
Validate in nbgrader's place: it tries up to three times and, if the kernel never
starts, returns a sentence saying so.
"""

from __future__ import annotations

import re
import time

from nbgrader.server_extensions.validate_assignment.handlers import ValidateAssignmentHandler

ATTEMPTS = 3
KERNEL_DID_NOT_START = re.compile(
    r"Kernel died before replying to kernel_info|Address already in use"
    r"|Kernel didn't respond in|DeadKernelError|kernel_info_request timed out",
    re.IGNORECASE,
)
SENTENCE = (
    "Validate could not start the Python kernel that checks your notebook "
    f"(tried {ATTEMPTS} times; the node may be busy). Your notebook is unchanged: "
    "please press Validate again in a moment."
)


class RetryingValidateHandler(ValidateAssignmentHandler):
    def validate_notebook(self, path):  # type: ignore[no-untyped-def]
        for attempt in range(1, ATTEMPTS + 1):
            result = super().validate_notebook(path)
            if result["success"] or not KERNEL_DID_NOT_START.search(str(result["value"])):
                return result
            self.log.warning("Validate %s: the kernel did not start (try %d)", path, attempt)
            if attempt < ATTEMPTS:
                time.sleep(attempt)
        return {"success": False, "value": SENTENCE}


def _jupyter_server_extension_points():
    return [{"module": "course_validate"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.utils import url_path_join

    webapp = serverapp.web_app
    # Loaded before nbgrader's extension (by name), so this route is matched first.
    route = url_path_join(webapp.settings["base_url"], r"/assignments/validate")
    webapp.add_handlers(".*$", [(route, RetryingValidateHandler)])


load_jupyter_server_extension = _load_jupyter_server_extension
