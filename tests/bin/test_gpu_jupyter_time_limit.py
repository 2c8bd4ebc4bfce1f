"""Warned before the end, in the launcher and in JupyterLab: a session of bin/gpu-jupyter
on the REAL local Slurm with a three-minute limit, seen in a real headless Chromium.

Slurm signals the job (--signal=B:USR1@60) before its limit; the job script tells
the launcher, which prints the time left, and passes the signal on to JupyterLab:
in the course's students' mode (jupyter/student/course_time_limit.py and the
course's lab extension) a notification with the time left appears and the open
notebook the student had typed into, unsaved, is saved, before the job ends.
JupyterLab's own autosave is off here, so the save can only be the warning's.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from gpu_jupyter_helpers import SMALL_JOB, Launch, api_status, assert_ended, job_alive
from local_cluster import LocalCluster

from helpers import ROOT, needs_chromium

pytestmark = [pytest.mark.slow, needs_chromium]

from browser_helpers import EC, By, _chromium, _kernel_idle, _type_into, _wait, step  # noqa: E402 (skips without selenium)

TYPED = "typed_before_the_limit = 1"
NOTEBOOK = {
    "cells": [{"cell_type": "code", "metadata": {}, "source": "", "outputs": [],
               "execution_count": None}],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}  # fmt: skip


def course_copy(cluster: LocalCluster) -> Path:
    """A folder in the student's home with the course's students' mode and a notebook."""
    folder = cluster.home / "course-copy"
    for part in ("student", "common", "data"):
        shutil.copytree(ROOT / "jupyter" / part, folder / "jupyter" / part)
    (folder / "notes.ipynb").write_text(json.dumps(NOTEBOOK))
    settings = cluster.home / ".jupyter/lab/user-settings/@jupyterlab/docmanager-extension"
    settings.mkdir(parents=True)
    (settings / "plugin.jupyterlab-settings").write_text('{"autosave": false}')
    for path in (folder, cluster.home / ".jupyter"):
        shutil.chown(path, cluster.student.uid, cluster.student.gid)
        for inner in path.rglob("*"):
            shutil.chown(inner, cluster.student.uid, cluster.student.gid)
    return folder


def test_jupyterlab_warns_and_saves_before_the_limit(cluster: LocalCluster, tmp_path: Path) -> None:
    folder = course_copy(cluster)
    launch = Launch(
        cluster,
        tmp_path / "launch.log",
        *SMALL_JOB[:-4],  # a three-minute limit instead of ten
        "--time",
        "3",
        "--timeout",
        "60",
        "--venv",
        sys.prefix,
        "--workdir",
        "~/course-copy",
        "--new",  # a session of its own, never one an earlier test left running
        env={"GPU_JUPYTER_WARN_LEAD": "60"},
    )
    port, token, job_id = launch.ready()
    driver = _chromium(tmp_path)
    try:
        with step(driver, "time-limit-1-type"):
            driver.get(f"http://127.0.0.1:{port}/lab/tree/notes.ipynb?token={token}&reset")
            _kernel_idle(driver)
            _type_into(driver, ".jp-Notebook .jp-Cell .cm-content", TYPED)
            _wait(driver, 20).until(
                EC.presence_of_element_located((By.CSS_SELECTOR, ".lm-TabBar-tab.jp-mod-dirty"))
            )
            assert TYPED not in (folder / "notes.ipynb").read_text()  # not saved yet
        with step(driver, "time-limit-2-warned"):
            toast = _wait(driver, 150).until(
                lambda d: next(
                    (t for t in d.find_elements(By.CSS_SELECTOR, ".Toastify__toast")
                     if "time limit" in t.text),
                    None,
                )
            )  # fmt: skip
            assert "minute" in toast.text and "were saved" in toast.text, toast.text
            _wait(driver, 20).until(lambda _d: TYPED in (folder / "notes.ipynb").read_text())
            assert not driver.find_elements(By.CSS_SELECTOR, ".lm-TabBar-tab.jp-mod-dirty")
    finally:
        driver.quit()
    assert job_alive(cluster, "slurm", job_id), "the warning came after the end"
    assert api_status(port, token) == 200  # the warning stops nothing
    launch.wait_for(r"your session ends in 1 minute: save your work", 30)
    log = (cluster.home / ".gpu-jupyter" / f"job-{job_id}.out").read_text()
    assert "the run-time limit is near" in log
    assert launch.stop() == 130, launch.text()
    assert_ended(cluster, job_id, port)
