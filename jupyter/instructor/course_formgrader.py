"""The Formgrader without nbgrader's exchange: no Release, Collect or Release Feedback.

This course hands out and collects files itself (README, instructors section:
``python -m grader collect``, feedback files handed back by the instructor), so
nbgrader's exchange folder does not exist and its buttons could only fail
(``ExchangeError: Unwritable directory``). This server extension, loaded after
nbgrader's Formgrader (``jupyter_server_config.py`` beside it puts this folder on
the path), hides those three columns of the "Manage Assignments" and
"Manage Submissions" pages and answers their API calls with a sentence.
"""

from __future__ import annotations

import json

from jinja2 import ChoiceLoader, DictLoader, PrefixLoader
from tornado import web

STYLE = """
<style id="course-no-exchange">
/* This course has no nbgrader exchange (see the note above the table). */
table.table th:nth-child(7), table.table th:nth-child(8), table.table th:nth-child(11),
td.release, td.collect, td.release-feedback,
.manage-submissions table.table th:nth-child(8) { display: none; }
</style>
"""
NOTE = (
    '<div class="alert alert-info" id="course-no-exchange-note">This course hands out '
    "and collects notebooks without nbgrader's exchange: release the student edition, "
    "collect with <code>python -m grader collect</code> and hand back the files of "
    "<code>feedback/</code> (README, instructors section).</div>"
)
TEMPLATES = {
    "manage_assignments.tpl": (
        '{%- extends "nbgrader/manage_assignments.tpl" -%}'
        "{%- block head -%}{{ super() }}" + STYLE + "{%- endblock -%}"
        "{%- block messages -%}" + NOTE + "{%- endblock -%}"
    ),
    "manage_submissions.tpl": (
        '{%- extends "nbgrader/manage_submissions.tpl" -%}'
        "{%- block head -%}{{ super() }}"
        + STYLE.replace("th:nth-child(7)", "th:nth-child(8)")
        + "{%- endblock -%}"
    ),
}
ACTIONS = ("release", "unrelease", "collect", "release_feedback")


class NoExchangeHandler(web.RequestHandler):
    """The exchange's API calls: a sentence, not a traceback."""

    def post(self, *args: str) -> None:
        self.set_status(409)
        self.finish(
            json.dumps(
                {
                    "success": False,
                    "error": "This course has no nbgrader exchange: collect with "
                    "'python -m grader collect' and hand back feedback/ yourself.",
                }
            )
        )


def _patch(webapp) -> bool:
    env = webapp.settings.get("nbgrader_jinja2_env")
    if env is None or getattr(env, "_course_no_exchange", False):
        return env is not None
    env.loader = ChoiceLoader(
        [DictLoader(TEMPLATES), PrefixLoader({"nbgrader": env.loader}), env.loader]
    )
    env._course_no_exchange = True
    env.cache = {} if env.cache is not None else None
    return True


def _jupyter_server_extension_points():
    return [{"module": "course_formgrader"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.utils import url_path_join
    from tornado.ioloop import IOLoop

    webapp = serverapp.web_app
    base = webapp.settings["base_url"]
    actions = "|".join(ACTIONS)
    webapp.add_handlers(
        ".*$",
        [
            (url_path_join(base, rf"/formgrader/api/assignment/([^/]+)/({actions})"),
                NoExchangeHandler),
            (url_path_join(base, r"/formgrader/api/assignment/([^/]+)/([^/]+)/release_feedback"),
                NoExchangeHandler),
        ],
    )  # fmt: skip
    if not _patch(webapp):  # nbgrader's Formgrader loads later: patch once all are loaded
        IOLoop.current().add_callback(_patch, webapp)


load_jupyter_server_extension = _load_jupyter_server_extension
