"""One scheduler description: deploy/session.yml, and what its five consumers ask of Slurm and LSF.

The launcher (bin/gpu-jupyter), the hub's spawner, the Open OnDemand app, the
Dask workers (dask-jobqueue) and the grader's Slurm array write no scheduler
option of their own: each asks what session.yml says, read directly or through
the copies deploy/render_schedulers.py writes. Here: the copies are fresh; a
bad entry is refused in one line; the launcher, the hub and the grader ask what
the description says (OnDemand's test is test_session.py's
test_ondemand_app_asks_what_the_hub_asks, dask-jobqueue's is in
tests/demos/cluster/test_cluster_units.py); and an option added to a copy of
the description, in that one place, reaches all five. No scheduler runs: every
consumer renders its job script or its submission.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from deploy_helpers import (
    APP,
    DEPLOY,
    ROOT,
    Session,
    needs_ruby,
    render_erb,
    render_schedulers,
    write_site,
)
from scheduler_words import described

from demos.cluster import dask_jobs, schedulers
from grader.run import slurm as grader_slurm

NEW_OPTION = {"slurm": ["--mail-type=NONE"], "lsf": ["-sla", "teaching"]}


def _launcher_header(launcher: Path, *args: str) -> list[str]:
    """The #SBATCH/#BSUB lines of the job script bin/gpu-jupyter would submit (its dry run)."""
    result = subprocess.run(
        [str(launcher), "--dry-run", *args, "me@login"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return [line for line in result.stdout.splitlines() if line.startswith(("#SBATCH", "#BSUB"))]


def _grader_script(course: Path) -> str:
    run = SimpleNamespace(
        course=course, assignment="simt", work=course / "work", wall_seconds=600, workers=2
    )
    return grader_slurm.job_script(run, 3, ["--partition=debug"])


def _hub_script(site: Path, scheduler: str) -> str:
    from course_spawner import spawner_for

    spawner = spawner_for(scheduler)(
        user=SimpleNamespace(name="alice", url="/user/alice/"),
        site=str(site),
        req_homedir="/home/alice",
        req_keepvars="PATH",
    )
    spawner.user_options = spawner.options_from_form({})
    return asyncio.run(spawner._get_batch_script())


def _dask_script(scheduler: str) -> str:
    parser = argparse.ArgumentParser()
    dask_jobs.add_arguments(parser)
    return dask_jobs.job_script(parser.parse_args(["--scheduler", scheduler]))


def test_the_committed_copies_are_fresh_renderings() -> None:
    """bin/gpu-jupyter.d/scheduler_options.sh and demos/cluster/schedulers.json say what
    session.yml says: edit session.yml, then run python deploy/render_schedulers.py."""
    for path, text in render_schedulers.rendered().items():
        assert path.read_text() == text, f"{path} is stale: python deploy/render_schedulers.py"
    check = subprocess.run(
        [sys.executable, str(DEPLOY / "render_schedulers.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (check.returncode, check.stdout) == (0, ""), check.stderr


def test_a_bad_entry_is_refused_in_one_line(tmp_path: Path) -> None:
    settings = yaml.safe_load((DEPLOY / "session.yml").read_text())
    settings["scheduler_options"]["slurm"]["nodes"] = ["--nodes={nodes}"]
    bad = write_site(tmp_path / "session.yml", **settings)
    with pytest.raises(ValueError, match=r"scheduler_options\.slurm\.nodes names unknown values"):
        render_schedulers.load(bad)
    settings["scheduler_options"]["slurm"]["nodes"] = "--nodes=2"
    write_site(bad, **settings)
    with pytest.raises(ValueError, match=r"slurm\.nodes must be a list of words"):
        render_schedulers.load(bad)
    # A site file's entry is checked as the hub reads it.
    site = write_site(tmp_path / "site.yml", scheduler_options={"lsf": {"qos": ["-q {qos_name}"]}})
    with pytest.raises(ValueError, match=r"site\.yml: scheduler_options\.lsf\.qos names unknown"):
        Session(site)
    # A key no course job reads (an old name, a typo) is refused, not ignored.
    old_name = write_site(
        tmp_path / "old.yml", scheduler_options={"slurm": {"memory_gb": ["--mem={memory_mb}M"]}}
    )
    with pytest.raises(ValueError, match=r"slurm has memory_gb, which no course job reads"):
        Session(old_name)
    # The launcher has a variable for every value a word may name.
    assert set(render_schedulers.LAUNCHER_VARIABLES) == set(schedulers.VALUES)


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_the_launcher_asks_what_the_description_says(scheduler: str) -> None:
    header = _launcher_header(
        ROOT / "bin" / "gpu-jupyter", f"--scheduler={scheduler}", "--gpus=2", "--time=1:05"
    )
    defaults = yaml.safe_load((DEPLOY / "session.yml").read_text())["resources"]
    expected = [
        *described(scheduler, "always"),
        *described(scheduler, "job_name", job_name="gpu-jupyter"),
        *described(scheduler, "cores", cores=defaults["cores"]["default"]),
        *described(scheduler, "gpus", gpus=2),
        *described(scheduler, "memory", memory_mb=defaults["memory_gb"]["default"] * 1024),
        *described(scheduler, "time", walltime="1:05"),
    ]
    assert header[: len(expected)] == expected  # then the job's log, the launcher's own


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_the_hub_asks_what_the_description_says(tmp_path: Path, scheduler: str) -> None:
    script = _hub_script(write_site(tmp_path / "site.yml", scheduler=scheduler), scheduler)
    lines = script.splitlines()
    for line in (
        *described(scheduler, "always"),
        *described(scheduler, "cores", cores=4),
        *described(scheduler, "time", walltime="2:00"),
        *described(scheduler, "warning", warn_seconds=600, warn_minutes=10),
    ):
        assert line in lines, (line, script)
    # Named as session.yml's job_names says (each submission adds -<random> to it).
    assert described(scheduler, "job_name", job_name="gpu-course-hub")[0] in lines


def test_the_grader_asks_what_the_description_says(tmp_path: Path) -> None:
    script = _grader_script(tmp_path)
    lines = script.splitlines()
    name = grader_slurm.queue.job_name(tmp_path, "simt")
    assert name.startswith("grade-simt-")
    for line in (
        *described("slurm", "always"),
        *described("slurm", "job_name", job_name=name),
        *described("slurm", "tag", tag=tmp_path / "work"),
        *described("slurm", "cores", cores=1),
        *described("slurm", "time", walltime="0:13"),  # 600 s per notebook and 3 minutes
    ):
        assert line in lines, (line, script)
    # The instructor's own --slurm-option comes after, and may override them.
    time = described("slurm", "time", walltime="0:13")[0]
    assert lines.index("#SBATCH --partition=debug") > lines.index(time)


@needs_ruby
@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_a_new_option_in_the_description_reaches_all_five_consumers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheduler: str
) -> None:
    """One edit, to a copy of session.yml (rendered as the instructor would), and the
    launcher, the hub, OnDemand, dask-jobqueue and the grader's array all ask for it."""
    import course_session

    # The one place: a copy of session.yml, with the option for every course job.
    settings = yaml.safe_load((DEPLOY / "session.yml").read_text())
    settings["scheduler_options"][scheduler]["always"] += NEW_OPTION[scheduler]
    description = tmp_path / "session.yml"
    description.write_text(yaml.safe_dump(settings, sort_keys=False))
    copies = render_schedulers.rendered(description)
    table_copy = tmp_path / "schedulers.json"
    table_copy.write_text(copies[render_schedulers.JSON_COPY])
    wanted = described(scheduler, "always", table_copy)[-1]
    assert wanted.endswith(NEW_OPTION[scheduler][-1])
    assert wanted not in described(scheduler, "always")  # not in the course's own
    site = write_site(tmp_path / "site.yml", scheduler=scheduler)

    # 1. The launcher, with its copy rendered from it.
    shutil.copytree(ROOT / "bin", tmp_path / "bin")
    (tmp_path / "bin" / "gpu-jupyter.d" / "scheduler_options.sh").write_text(
        copies[render_schedulers.BASH_COPY]
    )
    assert wanted in _launcher_header(tmp_path / "bin" / "gpu-jupyter", f"--scheduler={scheduler}")

    # 2. The hub's spawner, reading the description itself.
    monkeypatch.setattr(course_session, "SESSION_FILE", description)
    assert wanted in _hub_script(site, scheduler).splitlines()

    # 3. The OnDemand app (its session.yml is the description; OnDemand installs a copy).
    if shutil.which("ruby"):
        app = tmp_path / "app"
        shutil.copytree(APP, app)
        shutil.copy(description, app / "session.yml")
        form = {"cores": "4", "gpus": "1", "memory_gb": "16", "hours": "2"}
        form |= {"partition": "", "account": "", "reservation": "", "gpu_type": ""}
        submit = yaml.safe_load(render_erb(app / "submit.yml.erb", form, site))
        native = submit["script"]["native"]
        assert (
            native[: len(settings["scheduler_options"][scheduler]["always"])]
            == (settings["scheduler_options"][scheduler]["always"])
        )
    else:
        needs_ruby(lambda: None)  # noted, not failed: the form needs Ruby to render

    # 4. and 5. dask-jobqueue's job script and the grader's array, through the JSON copy.
    monkeypatch.setattr(schedulers, "TABLE_FILE", table_copy)
    assert wanted in _dask_script(scheduler).splitlines()
    if scheduler == "slurm":  # the grader's array runs on Slurm only
        assert wanted in _grader_script(tmp_path).splitlines()
