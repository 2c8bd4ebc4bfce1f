"""The hub's spawn form: what a student may ask for, as HTML fields.

Number fields within the limits of deploy/session.yml (with the site file's
values on top) and menus of the site's lists (partitions or queues, accounts,
reservations, GPU types); a list the site left empty is not shown. The OnDemand
app builds the same form from the same description (deploy/ondemand/gpu-course/
course.rb). What comes back is checked by :meth:`course_session.Session.request`.
"""

from __future__ import annotations

import html

from course_session import CHOICES, Session

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
