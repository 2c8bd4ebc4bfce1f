"""The course session of deploy/: one description, read alike by the hub and the OnDemand app.

No cluster needed: a student's choice is checked and becomes scheduler options
(compared with what bin/gpu-jupyter asks for the same choice, and with what the
OnDemand app's ERB renders with Ruby); the hub's configuration is loaded by
JupyterHub's own config loader and its spawners write their job scripts; the
job's start script copies the notebooks without overwriting a student's work.
The real runs, under Slurm, are in test_ondemand.py and test_hub.py.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from deploy_helpers import APP, DEPLOY, ROOT, Request, Session, needs_ruby, render_erb, write_site

from helpers import needs_commands

LAUNCHER = ROOT / "bin" / "gpu-jupyter"
CHOICE = {
    "cores": "8",
    "gpus": "2",
    "gpu_type": "a100",
    "memory_gb": "32",
    "hours": "3",
    "partition": "gpu",
    "account": "course42",
    "reservation": "lab",
}


@pytest.fixture
def site(tmp_path: Path) -> Path:
    return write_site(
        tmp_path / "site.yml",
        scheduler="slurm",
        edition="/shared/gpu course",
        choices={
            "partitions": ["gpu", "gpu-long"],
            "accounts": ["course42"],
            "reservations": ["lab"],
            "gpu_types": ["a100", "h100"],
        },
        # No environment at that path here: the hub's start-up check is not run.
        hub={
            "state_dir": str(tmp_path / "state"),
            "allowed_group": "students",
            "check_environment": False,
        },
        ondemand={"origin": "https://ondemand.example.edu"},
    )


def test_example_site_file_is_complete() -> None:
    session = Session(DEPLOY / "site.example.yml")
    assert session.scheduler == "slurm"
    assert session.default_request() == Request(
        cores=4, gpus=1, memory_gb=16, hours=2, partition="gpu"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cores": "0"}, "cores must be from 1 to 16"),
        ({"cores": "17"}, "cores must be from 1 to 16"),
        ({"gpus": "two"}, "gpus must be a whole number"),
        ({"memory_gb": "-1"}, "memory_gb must be a whole number"),
        ({"hours": "9"}, "hours must be from 1 to 8"),
        ({"partition": "debug"}, "partition 'debug' is not offered here"),
        ({"account": "x;rm -rf ~"}, "has characters such a name cannot have"),
        ({"gpus": "0"}, "a GPU type needs 1 GPU or more"),
    ],
)
def test_a_choice_outside_the_limits_is_refused(site: Path, change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Session(site).request({**CHOICE, **change})


def test_site_values_override_the_course_defaults(tmp_path: Path) -> None:
    site = write_site(tmp_path / "site.yml", resources={"gpus": {"max": 1}}, idle_minutes=0.5)
    session = Session(site)
    assert session.resources["gpus"] == {"default": 1, "max": 1}
    assert session.resources["cores"] == {"default": 4, "max": 16}  # untouched
    assert session.job_environment()["COURSE_IDLE_SECONDS"] == "30"
    with pytest.raises(ValueError, match="gpus must be from 0 to 1"):
        session.request({"gpus": "2"})


def _launcher_lines(*args: str) -> list[str]:
    """The resource lines of the job script bin/gpu-jupyter would submit (its dry run)."""
    result = subprocess.run(
        [str(LAUNCHER), "--dry-run", *args, "me@login"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    own = re.compile(r"^#(SBATCH|BSUB) (--job-name=|--output=|-J |-o |-e )")
    return sorted(
        line
        for line in result.stdout.splitlines()
        if line.startswith(("#SBATCH", "#BSUB")) and not own.match(line)
    )


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_hub_and_launcher_ask_the_scheduler_the_same(site: Path, scheduler: str) -> None:
    session = Session(site)
    expected = _launcher_lines(
        f"--scheduler={scheduler}",
        "--cores=8",
        "--gpus=2",
        "--gpu-type=a100",
        "--mem=32G",
        "--time=03:00",
        "--partition=gpu",
        "--account=course42",
        "--reservation=lab",
    )
    assert sorted(session.directives(session.request(CHOICE), scheduler)) == expected
    # And the defaults: the launcher's are session.yml's (no partition: the cluster's own).
    defaults = Session(None).default_request()
    assert sorted(Session(None).directives(defaults, scheduler)) == _launcher_lines(
        f"--scheduler={scheduler}"
    )


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_hub_and_launcher_ask_for_the_same_warning(scheduler: str) -> None:
    """The signal before the time limit (JupyterLab's warning): the launcher asks for it
    on its submit line, the hub and OnDemand in their job scripts, with the same lead."""
    script = subprocess.run(
        [str(LAUNCHER), "--dry-run", f"--scheduler={scheduler}", "me@login"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    submit = script.split("# ---- submitted on")[1].splitlines()[1]
    assert f" {' '.join(Session(None).warning_words(scheduler))} " in f" {submit} ", submit


def test_launcher_starts_the_same_mode_and_idle_time() -> None:
    """bin/gpu-jupyter (in a copy of the course) sets the mode and idle time session.yml names."""
    script = subprocess.run(
        [str(LAUNCHER), "--dry-run", "me@login"], capture_output=True, text=True, check=True
    ).stdout
    settings = Session(None).settings
    config_path = ":".join(f"$PWD/{p}" for p in settings["mode"]["config_path"])
    data_path = ":".join(f"$PWD/{p}" for p in settings["mode"]["data_path"])
    assert f'export JUPYTER_CONFIG_PATH="{config_path}$' in script
    assert f'export JUPYTER_PATH="{data_path}$' in script
    idle = Session(None).job_environment()["COURSE_IDLE_SECONDS"]
    assert f"--ServerApp.shutdown_no_activity_timeout={idle} " in script


@needs_ruby
@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_ondemand_app_asks_what_the_hub_asks(tmp_path: Path, site: Path, scheduler: str) -> None:
    settings = yaml.safe_load(site.read_text())
    site = write_site(tmp_path / f"{scheduler}.yml", **{**settings, "scheduler": scheduler})
    session = Session(site)
    submit = yaml.safe_load(render_erb(APP / "submit.yml.erb", CHOICE, site))
    assert submit["batch_connect"] == {"template": "basic"}
    assert submit["script"]["native"] == [
        *session.scheduler_words(session.request(CHOICE)),
        *session.warning_words(),
    ]
    assert submit["script"]["job_environment"] == {
        **session.job_environment(),
        "COURSE_ONDEMAND_ORIGIN": "https://ondemand.example.edu",
    }
    assert submit["script"]["copy_environment"] is False
    # A choice outside the limits stops the submission (OnDemand shows the error).
    bad = {**CHOICE, "cores": "99"}
    with pytest.raises(AssertionError, match="cores must be from 1 to 16"):
        render_erb(APP / "submit.yml.erb", bad, site)


@needs_ruby
def test_ondemand_form_offers_the_limits_and_the_site_lists(site: Path) -> None:
    form = yaml.safe_load(render_erb(APP / "form.yml.erb", {}, site))
    session = Session(site)
    assert form["form"] == session.settings["form"]
    for name, spec in session.resources.items():
        field = form["attributes"][name]
        assert (field["widget"], field["value"], field["max"]) == (
            "number_field",
            spec["default"],
            spec["max"],
        )
    assert form["attributes"]["partition"]["options"] == ["gpu", "gpu-long"]
    assert form["attributes"]["gpu_type"]["options"][0] == ["any", ""]
    manifest = yaml.safe_load((APP / "manifest.yml").read_text())
    assert manifest["role"] == "batch_connect"
    # The app's links resolve inside the repository; `cp -rL` installs their targets.
    assert (APP / "session.yml").resolve() == DEPLOY / "session.yml"
    assert (APP / "template" / "start-course.sh").resolve() == DEPLOY / "start-course.sh"


def _load_hub_config(site: Path):
    from jupyterhub.app import JupyterHub

    os.environ["GPU_COURSE_SITE"] = str(site)
    umask = os.umask(0o022)
    try:
        hub = JupyterHub()
        hub.load_config_file(str(DEPLOY / "jupyterhub" / "jupyterhub_config.py"))
        assert os.umask(0o022) == 0o077  # the hub's files and jobs are private
    finally:
        os.umask(umask)  # the config sets the hub's; this test process keeps its own
        del os.environ["GPU_COURSE_SITE"]
    return hub.config


def test_hub_config_loads_with_jupyterhubs_loader(site: Path, tmp_path: Path) -> None:
    config = _load_hub_config(site)
    assert config.JupyterHub.spawner_class.__name__ == "CourseSlurmSpawner"
    assert config.PAMAuthenticator.allowed_groups == {"students"}
    assert config.Spawner.default_url == "/lab/tree/course/README.md"
    # The database and the cookie secret live in a folder only root enters.
    state = tmp_path / "state"
    assert (state.stat().st_mode & 0o777) == 0o700
    assert config.JupyterHub.cookie_secret_file == str(state / "jupyterhub_cookie_secret")
    assert str(state) in config.JupyterHub.db_url
    # The culler stops servers idle for the session's idle time, with the rights it needs.
    (culler,) = config.JupyterHub.services
    assert "--timeout=3600" in culler["command"]
    (role,) = config.JupyterHub.load_roles
    assert role["services"] == ["idle-culler"] and "delete:servers" in role["scopes"]
    # The documented defaults: runuser (no sudo), the scheduler's variables kept,
    # servers that outlive a restart of the hub.
    assert config.BatchSpawnerBase.exec_prefix == "runuser -u {username} --"
    assert {"PATH", "SLURM_CONF", "LSF_ENVDIR", "LSF_SERVERDIR"} <= set(config.Spawner.env_keep)
    assert config.JupyterHub.cleanup_servers is False


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_hub_spawner_job_script(site: Path, scheduler: str) -> None:
    from course_spawner import spawner_for

    spawner = spawner_for(scheduler)(
        user=SimpleNamespace(name="alice", url="/user/alice/"),
        site=str(site),
        req_homedir="/home/alice",
        req_keepvars="PATH,JUPYTERHUB_API_TOKEN",
    )
    form = spawner.options_form
    for name in CHOICE:
        assert f'name="{name}"' in form
    spawner.user_options = spawner.options_from_form({k: [v] for k, v in CHOICE.items()})
    with pytest.raises(ValueError, match="not offered"):
        spawner.options_from_form({"partition": ["debug"]})
    # What the hub stores is the checked choice, and it reads back the same (0 GPUs too).
    assert Session(site).request(spawner.user_options) == Session(site).request(CHOICE)
    no_gpu = spawner.options_from_form({"gpus": ["0"]})
    assert Session(site).request(no_gpu).gpus == 0
    # Template values smuggled in through user_options (the REST API) change nothing.
    script = asyncio.run(spawner._get_batch_script(prologue="rm -rf ~", homedir="/"))
    session = Session(site)
    for line in session.directives(session.request(CHOICE), scheduler):
        assert f"\n{line}\n" in script
    assert re.search(r"\nstart_course batchspawner-singleuser jupyterhub-singleuser.*\n$", script)
    assert "rm -rf" not in script and "/home/alice/.gpu-course-hub-" in script
    assert "export COURSE_EDITION='/shared/gpu course'\n" in script  # quoted for the shell
    if scheduler == "slurm":
        assert "#SBATCH --export=PATH,JUPYTERHUB_API_TOKEN\n" in script
        assert "#BSUB" not in script
    else:
        assert "#SBATCH" not in script
    if shutil.which("shellcheck"):
        lint = subprocess.run(
            ["shellcheck", "-s", "bash", "-"], input=script, capture_output=True, text=True
        )
        assert lint.returncode == 0, lint.stdout


def test_lsf_spawner_finds_the_host_of_a_job_with_several_cores(site: Path) -> None:
    from course_spawner import CourseLsfSpawner

    spawner = CourseLsfSpawner(user=SimpleNamespace(name="alice", url="/"), site=str(site))
    spawner.job_status = "RUN 4*node01"
    assert spawner.state_isrunning() and spawner.state_gethost() == "node01"
    spawner.job_status = "RUN node02"
    assert spawner.state_gethost() == "node02"


def _copy_missing(edition: Path, workspace: Path) -> None:
    subprocess.run(
        [
            "bash",
            "-c",
            'source "$0"; course_copy_missing "$1" "$2" course exercises',
            str(DEPLOY / "start-course.sh"),
            str(edition),
            str(workspace),
        ],
        check=True,
        timeout=30,
    )


def test_notebooks_are_copied_once_and_never_overwritten(tmp_path: Path) -> None:
    edition, home = tmp_path / "edition", tmp_path / "home" / "gpu-course"
    (edition / "course").mkdir(parents=True)
    (edition / "exercises" / "simt").mkdir(parents=True)
    (edition / "course" / "02-simt-model.ipynb").write_text("chapter")
    (edition / "exercises" / "simt" / "simt.ipynb").write_text("blank")
    (edition / "exercises" / "simt" / "data.txt").write_text("data")
    _copy_missing(edition, home)
    assert (home / "exercises" / "simt" / "simt.ipynb").read_text() == "blank"
    # The student works; the instructor updates the edition and adds a chapter.
    (home / "exercises" / "simt" / "simt.ipynb").write_text("my answer")
    (home / "exercises" / "simt" / "data.txt").unlink()
    (home / "exercises" / "simt" / "data.txt").symlink_to("/nonexistent")
    (edition / "exercises" / "simt" / "simt.ipynb").write_text("new blank")
    (edition / "course" / "03-cupy-drop-in.ipynb").write_text("new chapter")
    _copy_missing(edition, home)
    assert (home / "exercises" / "simt" / "simt.ipynb").read_text() == "my answer"
    assert (home / "exercises" / "simt" / "data.txt").is_symlink()  # not written through
    assert (home / "course" / "03-cupy-drop-in.ipynb").read_text() == "new chapter"


@needs_commands("shellcheck", install="apt-get install shellcheck")
def test_job_scripts_are_shellcheck_clean() -> None:
    scripts = [
        DEPLOY / "start-course.sh",
        APP / "template" / "script.sh.erb",
        APP / "template" / "before.sh.erb",
        APP / "template" / "after.sh",
    ]
    # before.sh and after.sh are sourced by OnDemand's job script, which defines
    # host, find_port, create_passwd, wait_until_port_used and clean_up.
    result = subprocess.run(
        ["shellcheck", "-s", "bash", "-e", "SC2154", "-x", *map(str, scripts)],
        capture_output=True,
        text=True,
        check=False,
        cwd=APP / "template",
    )
    assert result.returncode == 0, result.stdout
