"""The Open OnDemand app refuses a scheduler table it cannot submit with, in one line.

The app (deploy/ondemand/gpu-course/course.rb) fills its submission from
session.yml's scheduler table with the site file on top. A key the app asks for
that the table lacks, a key no course job reads (an old name, a typo), a word
naming a value the app does not fill in, or a scheduler without a table would
otherwise give a submission that silently leaves an option out (no time limit, no
memory) or a Ruby KeyError; each stops the form and the submission with a line
that names the file and the entry, as the hub (deploy/course_session.py) says for
the same site file. Rendered with Ruby as OnDemand does; no scheduler runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from deploy_helpers import APP, Session, needs_ruby, render_erb, write_site

pytestmark = needs_ruby

FORM = {
    "cores": "2",
    "gpus": "1",
    "gpu_type": "",
    "memory_gb": "8",
    "hours": "1",
    "partition": "",
    "account": "",
    "reservation": "",
}


def _refused(app: Path, site: Path) -> str:
    """The error the app's submission and form stop with (both read the checked settings)."""
    with pytest.raises(AssertionError) as submit:
        render_erb(app / "submit.yml.erb", FORM, site)
    with pytest.raises(AssertionError) as form:
        render_erb(app / "form.yml.erb", {}, site)
    assert "GpuCourse::SettingsError" in str(submit.value), submit.value
    assert "GpuCourse::SettingsError" in str(form.value), form.value
    return str(submit.value)


def _app_with(tmp_path: Path, change) -> Path:
    """A copy of the app, installed as a site does (``cp -rL``), its session.yml changed."""
    app = tmp_path / "gpu-course"
    shutil.copytree(APP, app)  # symlinks=False: session.yml becomes a file
    session = app / "session.yml"
    settings = yaml.safe_load(session.read_text())
    change(settings)
    session.write_text(yaml.safe_dump(settings))
    return app


def test_the_description_as_shipped_is_accepted(tmp_path: Path) -> None:
    site = write_site(tmp_path / "site.yml", scheduler="lsf")
    submit = yaml.safe_load(render_erb(APP / "submit.yml.erb", FORM, site))
    assert "-W" in submit["script"]["native"]  # the time limit is asked for


def test_a_site_key_no_course_job_reads_is_refused_as_the_hub_refuses_it(tmp_path: Path) -> None:
    site = write_site(
        tmp_path / "site.yml", scheduler_options={"slurm": {"memory_gb": ["--mem={memory_mb}M"]}}
    )
    message = _refused(APP, site)
    assert f"{site}: scheduler_options.slurm has memory_gb, which no course job reads" in message
    with pytest.raises(ValueError, match=r"slurm has memory_gb, which no course job reads"):
        Session(site)


@pytest.mark.parametrize(
    "settings, expected",
    [
        ({"scheduler_options": {"pbs": {"cores": ["-l", "ncpus={cores}"]}}}, "pbs: no such"),
        ({"scheduler": "pbs"}, 'scheduler must be slurm or lsf, not "pbs"'),
        (
            {"scheduler_options": {"slurm": {"time": ["--time={hours}:00:00"]}}},
            "scheduler_options.slurm.time names hours, which the app does not fill in",
        ),
        (
            {"scheduler_options": {"slurm": {"memory": "--mem={memory_mb}M"}}},
            "scheduler_options.slurm.memory must be a list of words",
        ),
    ],
)
def test_a_bad_site_entry_is_named_in_one_line(tmp_path: Path, settings, expected) -> None:
    site = write_site(tmp_path / "site.yml", **settings)
    assert expected in _refused(APP, site)


def test_a_key_the_app_asks_for_that_the_table_lacks_is_refused(tmp_path: Path) -> None:
    """Without its time key the session would be submitted with the cluster's default limit."""
    app = _app_with(tmp_path, lambda s: s["scheduler_options"]["slurm"].pop("time"))
    site = write_site(tmp_path / "site.yml", scheduler="slurm")
    message = _refused(app, site)
    assert "scheduler_options.slurm has no time: a session would be submitted without it" in message
    # The other scheduler's table is whole: a site that uses it is not held up.
    lsf = write_site(tmp_path / "lsf.yml", scheduler="lsf")
    assert yaml.safe_load(render_erb(app / "submit.yml.erb", FORM, lsf))["script"]["native"]


def test_a_description_without_the_apps_job_name_is_refused(tmp_path: Path) -> None:
    app = _app_with(tmp_path, lambda s: s["job_names"].pop("ondemand"))
    site = write_site(tmp_path / "site.yml")
    assert "job_names has no ondemand" in _refused(app, site)
