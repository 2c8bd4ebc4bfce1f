"""Tests of the cluster launch script ``bin/gpu-jupyter``.

Option checking, ``--help`` and the generated LSF/Slurm job scripts are tested
as text. The end-to-end tests run the script against a REAL Slurm (slurmctld +
slurmd for this one machine) reached through a REAL sshd on 127.0.0.1: the
"login node" and the "compute node" are both this machine. The script runs as
an unprivileged "laptop" user whose cluster account has another name, with host
keys checked, like a student's. LSF, which cannot be installed, is played by
the bsub/bjobs/bkill stand-in ``tests/slurm/fake-lsf``. The end-to-end tests
need root (to start the daemons and create the users) and the Debian packages
``slurm-wlm munge openssh-server`` (CI installs them); they skip with the
missing piece named otherwise. One cluster serves the whole module.
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from helpers import ROOT, needs_local_slurm

SCRIPT = ROOT / "bin" / "gpu-jupyter"
PARTS = SCRIPT.parent / "gpu-jupyter.d"  # sourced by it, and the job script template
READY = r"JupyterLab is ready: (http://127\.0\.0\.1:(\d+)/lab\?token=(\w+))"
# Short intervals keep the tests fast; the defaults (30 s for squeue/bjobs) are
# what a class on a shared login node needs.
FAST = {
    "GPU_JUPYTER_CHECK_INTERVAL": "1",
    "GPU_JUPYTER_SCHED_INTERVAL": "2",
    "GPU_JUPYTER_CANCEL_WINDOW": "60",
}
SMALL_JOB = ("--gpus", "0", "--cores", "1", "--mem", "500M", "--time", "10", "--timeout", "60")


def run_script(
    *args: str, timeout: float = 20, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


# ---------------------------------------------------------------- no cluster needed


def test_help_lists_every_option() -> None:
    result = run_script("--help")
    assert result.returncode == 0
    for option in (
        "--scheduler",
        "--cores",
        "--gpus",
        "--gpu-type",
        "--mem",
        "--time",
        "--module",
        "--conda-env",
        "--venv",
        "--workdir",
        "--local-port",
        "--queue",
        "--account",
        "--reservation",
        "--qos",
        "--constraint",
        "--sched-arg",
        "--lsf-gpu-syntax",
        "--idle-timeout",
        "--attach",
        "--timeout",
        "--dry-run",
    ):
        assert option in result.stdout, option


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "two"], "--gpus must be a whole number"),
        (["--gpus", "-1"], "--gpus must be a whole number"),
        (["--cores", "0"], "--cores must be a whole number >= 1"),
        (["--time", "1:75"], "minutes must be below 60"),
        (["--time", "2h"], "--time must be HH:MM or a number of minutes"),
        (["--mem", "lots"], "--mem must be a size"),
        (["--scheduler", "pbs"], "--scheduler must be 'slurm' or 'lsf'"),
        (["--local-port", "80"], "--local-port must be a number from 1024"),
        (["--timeout", "soon"], "--timeout must be a number of seconds"),
        (["--idle-timeout", "soon"], "--idle-timeout must be a whole number of minutes"),
        (["--queue", "gpu;rm -rf ~"], "characters such a name cannot have"),
        (["--account", "a b"], "--account 'a b' has characters"),
        (["--reservation", "$(id)"], "--reservation '$(id)' has characters"),
        (["--qos", "high`x`"], "--qos 'high`x`' has characters"),
        (["--gpu-type", "a100\nx"], "--gpu-type"),
        (["--constraint", "a100;reboot"], "--constraint 'a100;reboot' has characters"),
        (["--sched-arg", "exclusive"], "must be one option starting with '-'"),
        (["--sched-arg", "--comment=$(id)"], "without quotes, $ or newlines"),
        (["--lsf-gpu-syntax", "old"], "--lsf-gpu-syntax must be 'new' or 'rusage'"),
        (
            ["--scheduler", "lsf", "--lsf-gpu-syntax", "rusage", "--gpu-type", "a100"],
            "--gpu-type needs --lsf-gpu-syntax new",
        ),
        (["--scheduler", "lsf", "--qos", "high"], "--qos exists only for Slurm"),
        (["--gpus", "0", "--gpu-type", "a100"], "--gpu-type needs --gpus 1 or more"),
        (["--attach", "latest"], "--attach needs a job id"),
        (["--frobnicate"], "unknown option"),
        ([], "no login host given"),
    ],
)
def test_bad_values_are_refused_before_connecting(args: list[str], message: str) -> None:
    # The host does not exist: a refusal must come before any SSH attempt.
    host = [] if not args else ["nobody@host.invalid"]
    result = run_script(*args, *host)
    assert result.returncode == 2
    assert message in result.stderr
    assert "connecting" not in result.stderr


def test_lsf_job_script_has_what_bsub_accepts() -> None:
    result = run_script(
        "--dry-run",
        "--scheduler",
        "lsf",
        "--cores",
        "8",
        "--gpus",
        "2",
        "--gpu-type",
        "NVIDIAA100_SXM4_80GB",
        "--mem",
        "32G",
        "--time",
        "90",
        "--queue",
        "gpu_a100",
        "--account",
        "course42",
        "--reservation",
        "lab",
        "--constraint",
        "avx512",
        "--sched-arg=-x",
        "--module",
        "cuda/12.4",
        "--conda-env",
        "gpu course",
        "me@login",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    bsub = [line for line in out.splitlines() if line.startswith("#BSUB")]
    assert bsub == [
        "#BSUB -J gpu-jupyter",
        "#BSUB -n 8",
        '#BSUB -R "span[hosts=1]"',
        '#BSUB -R "rusage[mem=32768MB]"',
        "#BSUB -M 32768MB",
        '#BSUB -gpu "num=2:gmodel=NVIDIAA100_SXM4_80GB"',
        "#BSUB -W 1:30",
        "#BSUB -q gpu_a100",
        "#BSUB -P course42",
        "#BSUB -U lab",
        '#BSUB -R "select[avx512]"',
        "#BSUB -o .gpu-jupyter/job-%J.out",
        "#BSUB -e .gpu-jupyter/job-%J.out",
        "#BSUB -x",
    ]
    # bsub reads #BSUB lines only from a script given on stdin.
    assert "bsub < .gpu-jupyter/session-DRYRUN.job" in out
    assert "bkill JOBID" in out
    assert "module load cuda/12.4" in out
    assert r"conda activate gpu\ course" in out
    assert "#SBATCH" not in out


def test_lsf_rusage_gpu_syntax() -> None:
    """Sites without LSB_GPU_NEW_SYNTAX ask for GPUs as a resource."""
    result = run_script(
        "--dry-run", "--scheduler", "lsf", "--gpus", "2", "--lsf-gpu-syntax", "rusage", "me@login"
    )
    assert result.returncode == 0, result.stderr
    assert '#BSUB -R "rusage[ngpus_excl_p=2]"' in result.stdout
    assert "-gpu" not in result.stdout


def test_slurm_job_script_and_cpu_only_job() -> None:
    result = run_script(
        "--dry-run",
        "--scheduler",
        "slurm",
        "--gpus",
        "0",
        "--time",
        "00:45",
        "--mem",
        "8000M",
        "--partition",
        "short",
        "--idle-timeout",
        "30",
        "--venv",
        "~/gpu course/.venv",
        "me@login",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "#SBATCH --time=0:45:00" in out
    assert "#SBATCH --mem=8000M" in out
    assert "#SBATCH --partition=short" in out
    assert "gres" not in out  # --gpus 0 asks for no GPU
    assert "sbatch --parsable" in out
    # ~ is the home directory on the cluster, expanded there, not on this machine.
    assert r'. "$HOME"/gpu\ course/.venv/bin/activate' in out
    assert str(Path.home()) not in out
    # Security properties of the job side: a Unix socket in the private folder,
    # no TCP port, the token from a private file.
    assert "umask 077" in out
    assert '--ServerApp.sock="$sock"' in out and "--ServerApp.sock_mode=0600" in out
    assert "--ip" not in out and "--port" not in out
    assert "JUPYTER_TOKEN_FILE" in out
    assert "--IdentityProvider.token" not in out and "--token" not in out
    # Idle culling: kernels, terminals, then the server itself after 30 minutes.
    for option in (
        "--ServerApp.shutdown_no_activity_timeout=1800",
        "--MappingKernelManager.cull_idle_timeout=1800",
        "--TerminalManager.cull_inactive_timeout=1800",
    ):
        assert option in out
    # In a copy of the course, JupyterLab starts in student mode (the shipped settings)
    # with the course's own extension (jupyter/data/labextensions).
    assert 'JUPYTER_CONFIG_PATH="$PWD/jupyter/student:$PWD/jupyter/common' in out
    assert 'JUPYTER_PATH="$PWD/jupyter/data' in out


def test_slurm_scheduler_options() -> None:
    result = run_script(
        "--dry-run",
        "--scheduler",
        "slurm",
        "--gpus",
        "2",
        "--gpu-type",
        "h100",
        "--account",
        "course42",
        "--reservation",
        "lab_monday",
        "--qos",
        "debug",
        "--constraint",
        "ib&(a100|h100)",
        "--sched-arg",
        "--exclusive",
        "--sched-arg=--mail-type=END",
        "me@login",
    )
    assert result.returncode == 0, result.stderr
    sbatch = [line for line in result.stdout.splitlines() if line.startswith("#SBATCH")]
    for line in (
        "#SBATCH --gres=gpu:h100:2",
        "#SBATCH --account=course42",
        "#SBATCH --reservation=lab_monday",
        "#SBATCH --qos=debug",
        "#SBATCH --constraint=ib&(a100|h100)",
        "#SBATCH --exclusive",
        "#SBATCH --mail-type=END",
    ):
        assert line in sbatch, line
    # Raw arguments come last, so that they can override the script's own choices.
    assert sbatch[-2:] == ["#SBATCH --exclusive", "#SBATCH --mail-type=END"]


def test_missing_token_tools_fail_before_login(tmp_path: Path) -> None:
    """Without openssl and python3 no token can be made: say so before logging in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "ssh"):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"no {tool} here")
        (bin_dir / tool).symlink_to(found)
    result = run_script("nobody@host.invalid", env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    assert result.returncode == 1
    assert "needs openssl or python3" in result.stderr
    assert "connecting" not in result.stderr


def test_local_port_in_use_is_refused_before_connecting() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_script("--local-port", str(port), "nobody@host.invalid")
    assert result.returncode == 1
    assert f"local port {port} is already in use" in result.stderr
    assert "connecting" not in result.stderr


def _whole_launcher() -> str:
    """The launcher with its sourced parts (gpu-jupyter.d/*.sh) put in place: one program.

    shellcheck -x reads a sourced file only for its variables and functions, and
    each part alone uses the others' globals: the whole is what can be checked.
    """

    def part(match: re.Match) -> str:
        return (PARTS / match.group(1)).read_text()

    return re.sub(r'^\. "\$parts/([\w.]+)"$', part, SCRIPT.read_text(), flags=re.M)


# Bash 4 and later only: macOS ships bash 3.2, which has none of these.
BASH_4_ONLY = (
    "declare -A",  # associative arrays
    "local -A",
    "declare -n",  # namerefs (4.3)
    "local -n",
    "mapfile",
    "readarray",
    ",,}",  # ${var,,} and ${var^^}: case conversion
    "^^}",
    "@Q}",  # ${var@Q} (4.4)
    "&>>",
    "|&",
    ";&",  # case fall-through (also ;;&)
    "wait -n",
    "${!arr[",
    "coproc",
    "exec {",  # {fd}> automatic file descriptors (4.1)
    "[[ -v ",  # (4.2)
    "[-1]}",  # negative array indices (4.3)
    "EPOCHSECONDS",  # (5.0)
)


def test_script_is_shellcheck_clean_and_bash_32_compatible(tmp_path: Path) -> None:
    """No bash 3.2 can be installed here (Debian and PyPI have none): what is checked
    instead is that the launcher parses, uses none of the later features, and is
    shellcheck-clean as bash."""
    whole = tmp_path / "gpu-jupyter"
    whole.write_text(_whole_launcher())
    assert '. "$parts/' not in whole.read_text()
    assert subprocess.run(["bash", "-n", str(whole)], check=False).returncode == 0
    texts = {path.name: path.read_text() for path in (SCRIPT, *sorted(PARTS.iterdir()))}
    for name, text in texts.items():
        for later in BASH_4_ONLY:
            assert later not in text, (name, later)
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    # The project's choices (bin/.shellcheckrc) apply to the whole as to bin/gpu-jupyter.
    shutil.copy(SCRIPT.parent / ".shellcheckrc", tmp_path / ".shellcheckrc")
    result = subprocess.run(
        ["shellcheck", "--shell=bash", str(whole)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout
    # The job script, as the cluster runs it (filled in from job.sh.in).
    dry = run_script("--dry-run", "--scheduler", "slurm", "--module", "cuda", "me@login")
    job = dry.stdout.split("# ---- submitted")[0].split("\n", 1)[1]
    (tmp_path / "job.sh").write_text(job)
    result = subprocess.run(
        ["shellcheck", str(tmp_path / "job.sh")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--dry-run", "--gpus", "2", "--constraint", "ib&(a100|h100)", "--module", "cuda/12"],
        ["--dry-run", "--venv", "~/gpu course/.venv", "--sched-arg=--exclusive", "--time", "1:05"],
        ["--time", "1:75"],
        ["--constraint", "a100;reboot"],
        ["--sched-arg", "--comment=$(id)"],
    ],
)
def test_bash_32_compatibility_mode_changes_nothing(args: list[str]) -> None:
    """BASH_COMPAT=32: bash 5 behaves as 3.2 where the two differ in behaviour (not
    in syntax: that is test_script_is_shellcheck_clean_and_bash_32_compatible's)."""
    now = run_script(*args, "me@login")
    old = run_script(*args, "me@login", env={**os.environ, "BASH_COMPAT": "32"})
    assert (old.returncode, old.stdout, old.stderr) == (now.returncode, now.stdout, now.stderr)


def test_the_launcher_finds_its_parts_through_a_link(tmp_path: Path) -> None:
    """Linked from ~/bin, say: its parts are found next to the real file."""
    link = tmp_path / "gpu-jupyter"
    link.symlink_to(SCRIPT)
    result = subprocess.run(
        [str(link), "--dry-run", "--scheduler", "lsf", "me@login"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "#BSUB -J gpu-jupyter" in result.stdout


# ----------------------------------------------------------- helpers


def api_status(port: int, token: str | None) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status")
    if token is not None:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_until(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    pytest.fail(f"timed out after {seconds}s waiting for {what}")


class Launch:
    """One run of the launch script as the laptop user, its output in a file."""

    def __init__(
        self, cluster: LocalCluster, log: Path, *args: str, host: str = "testlogin", **popen: object
    ) -> None:
        self.log = log
        self.started = time.monotonic()
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [str(SCRIPT), "--ssh-config", str(cluster.ssh_config), *args, host],
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                env=cluster.laptop.env(**FAST),
                **cluster.laptop.popen_args(),
                **popen,
            )

    def text(self) -> str:
        return self.log.read_text()

    def wait_for(self, pattern: str, seconds: float = 75) -> re.Match:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            match = re.search(pattern, self.text())
            if match:
                return match
            if self.process.poll() is not None:
                pytest.fail(
                    f"the launch script exited early ({self.process.returncode}):\n" + self.text()
                )
            time.sleep(0.3)
        pytest.fail(f"no {pattern!r} after {seconds}s:\n{self.text()}")

    def ready(self) -> tuple[int, str, str]:
        """(local port, token, job id) once the script says it is ready."""
        match = self.wait_for(READY)
        print(f"ready after {time.monotonic() - self.started:.1f}s")
        job_id = re.search(r"(?:submitted|attaching to) job (\d+)", self.text()).group(1)
        return int(match.group(2)), match.group(3), job_id

    def stop(self, sig: int = signal.SIGINT, seconds: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def job_alive(cluster: LocalCluster, scheduler: str, job_id: str) -> bool:
    if scheduler == "slurm":
        return job_id in cluster.squeue().split()
    pid = int((cluster.home / ".fake-lsf" / f"{job_id}.pid").read_text())
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def assert_ended(cluster: LocalCluster, job_id: str, port: int, scheduler: str = "slurm") -> None:
    wait_until(lambda: not job_alive(cluster, scheduler, job_id), 30, f"job {job_id} to end")
    wait_until(lambda: not port_open(port), 15, f"port {port} to close")

    # The job's own exit removes its session files: give it a moment after the cancel.
    def session_files() -> list[Path]:
        return list((cluster.home / ".gpu-jupyter").glob("session-*"))

    wait_until(lambda: not session_files(), 15, f"no session files left, not {session_files()}")
    assert not list((cluster.laptop.home / ".gpu-jupyter" / "tunnels").glob(f"job-{job_id}.*"))


def tcp_listeners(pid: int) -> list[str]:
    """The listening TCP sockets (as /proc/net lines) that process pid holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append(line)
    return found


def as_user(user, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=user.env(),
        check=False,
        timeout=30,
        **user.popen_args(),
    )


# ----------------------------------------------------------- real Slurm + sshd


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    needs_local_slurm()
    with LocalCluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_jobs_left(request: pytest.FixtureRequest):
    """A failed test must not leave jobs that make the next one wait for cores."""
    yield
    if "cluster" in request.fixturenames:
        running = request.getfixturevalue("cluster")
        for job in running.squeue(check=False).split():
            subprocess.run(["scancel", job], env=running.env, check=False)


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_end_to_end(cluster: LocalCluster, tmp_path: Path, scheduler: str) -> None:
    """Slurm is real; LSF is the bsub/bjobs/bkill stand-in in tests/slurm/fake-lsf."""
    # Slurm: the scheduler is detected on the login node (sbatch is found first).
    choice = ["--scheduler", "lsf"] if scheduler == "lsf" else []
    known_hosts = cluster.laptop.home / ".ssh" / "known_hosts"
    node = socket.gethostname().split(".")[0]
    node_was_known = node in known_hosts.read_text()
    launch = Launch(cluster, tmp_path / "launch.log", *choice, *SMALL_JOB, "--venv", sys.prefix)
    port, token, job_id = launch.ready()
    text = launch.text()
    if scheduler == "slurm":
        assert "scheduler: slurm" in text
    # The login shell's "Quota 95" was not taken for the node; the node's new
    # host key was accepted visibly, with the cluster account's name.
    assert f"JupyterLab runs on {node}" in text
    assert node in known_hosts.read_text()
    assert node_was_known or "host key is accepted and remembered" in text
    assert len(token) >= 32
    assert api_status(port, token) == 200
    assert api_status(port, None) in (401, 403)
    assert api_status(port, "0" * 48) in (401, 403)
    assert job_alive(cluster, scheduler, job_id)

    # Nothing secret is world-readable, and the token is on no command line,
    # not even in part (the session's file names).
    state = cluster.home / ".gpu-jupyter"
    assert state.stat().st_mode & 0o077 == 0
    for path in state.glob("*"):
        assert path.stat().st_mode & 0o077 == 0, path
        assert token[:6] not in path.name
    assert (state / f"job-{job_id}.out").exists()
    command_lines = subprocess.run(
        ["ps", "-eo", "args"], capture_output=True, text=True, check=True
    ).stdout
    assert token not in command_lines

    # A neighbour on the node finds nothing to squat or reach: JupyterLab has
    # no TCP port, and its Unix socket lies in a folder only the student enters.
    status = (state / f"job-{job_id}.status").read_text()
    lab_pid = re.search(r"pid=(\d+)", status).group(1)
    sock = re.search(r"sock=(\S+)", status).group(1)
    assert not tcp_listeners(int(lab_pid))
    probe = as_user(
        cluster.neighbour,
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n"
        "    print('refused')\n"
        "try:\n    open(sys.argv[1] + '.squat', 'w')\nexcept PermissionError:\n"
        "    print('refused')\n",
        sock,
    )
    assert probe.stdout.split() == ["refused", "refused"], probe

    if scheduler == "lsf":
        # UNKWN (the host lost contact) is not "gone": the session goes on.
        forced = cluster.home / ".fake-lsf" / f"{job_id}.stat"
        forced.write_text("UNKWN\n")
        launch.wait_for(r"no clear answer from lsf", 20)
        forced.unlink()
        assert launch.process.poll() is None
        assert api_status(port, token) == 200

    assert launch.stop() == 130, launch.text()
    assert f"cancelling job {job_id} (Ctrl-C)" in launch.text()
    assert_ended(cluster, job_id, port, scheduler)


def test_closing_the_terminal_cancels_the_job(cluster: LocalCluster) -> None:
    """The terminal window closes: SIGHUP, and every write fails afterwards."""
    master, slave = pty.openpty()
    os.fchown(slave, cluster.laptop.uid, cluster.laptop.gid)

    # A new session whose controlling terminal is the pty, then the script.
    take_terminal = (
        "import fcntl, os, sys, termios\n"
        "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            take_terminal,
            str(SCRIPT),
            "--ssh-config",
            str(cluster.ssh_config),
            *SMALL_JOB,
            "--venv",
            sys.prefix,
            "testlogin",
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        env=cluster.laptop.env(**FAST),
        **cluster.laptop.popen_args(),
    )
    os.close(slave)
    output = b""
    deadline = time.monotonic() + 75
    try:
        while not re.search(READY.encode(), output) and time.monotonic() < deadline:
            try:
                output += os.read(master, 4096)
            except OSError:
                break
        match = re.search(READY.encode(), output)
        assert match, output.decode(errors="replace")
        port = int(match.group(2))
        job_id = re.search(rb"submitted job (\d+)", output).group(1).decode()
    finally:
        os.close(master)  # hang up
    rc = process.wait(timeout=60)
    assert rc == 129, f"exit {rc}:\n" + output.decode(errors="replace")
    assert_ended(cluster, job_id, port)


def test_tee_and_ctrl_c_cancel_the_job(cluster: LocalCluster, tmp_path: Path) -> None:
    """'gpu-jupyter ... | tee log' and Ctrl-C: tee dies first, writes get EPIPE."""
    log = cluster.laptop.home / "tee.log"
    command = (
        f"{SCRIPT} --ssh-config {cluster.ssh_config} {' '.join(SMALL_JOB)} "
        f"--venv {sys.prefix} testlogin 2>&1 | tee {log}"
    )
    shell = subprocess.Popen(
        ["bash", "-c", command],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
        env=cluster.laptop.env(**FAST),
        **cluster.laptop.popen_args(),
    )
    wait_until(lambda: log.exists() and re.search(READY, log.read_text()), 75, "ready")
    text = log.read_text()
    port = int(re.search(READY, text).group(2))
    job_id = re.search(r"submitted job (\d+)", text).group(1)
    os.killpg(shell.pid, signal.SIGINT)  # Ctrl-C reaches the whole pipeline
    shell.wait(timeout=30)
    assert_ended(cluster, job_id, port)


def test_scheduler_stall_is_not_the_end(cluster: LocalCluster, tmp_path: Path) -> None:
    """slurmctld stops answering: the session goes on; a stop then still cancels."""
    launch = Launch(cluster, tmp_path / "launch.log", *SMALL_JOB, "--venv", sys.prefix)
    port, token, job_id = launch.ready()
    assert cluster.slurmctld is not None
    cluster.slurmctld.send_signal(signal.SIGSTOP)
    try:
        launch.wait_for(r"no clear answer from slurm", 40)
        time.sleep(4)
        assert launch.process.poll() is None, launch.text()
        assert api_status(port, token) == 200
        launch.process.send_signal(signal.SIGINT)  # stop while the controller still stalls
        launch.wait_for(r"cancelling job", 20)
        time.sleep(4)
    finally:
        cluster.slurmctld.send_signal(signal.SIGCONT)
    assert launch.process.wait(timeout=90) == 130, launch.text()
    assert f"job {job_id} cancelled" in launch.text()
    assert_ended(cluster, job_id, port)


def test_killed_script_then_attach_and_tunnel_reconnects(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    first = Launch(cluster, tmp_path / "first.log", *SMALL_JOB, "--venv", sys.prefix)
    port, token, job_id = first.ready()
    first.stop(signal.SIGKILL)
    # The job and its tunnel outlive a killed script.
    assert job_alive(cluster, "slurm", job_id)
    assert api_status(port, token) == 200

    # The next start says so (this one is refused by Slurm right after).
    probe = Launch(cluster, tmp_path / "probe.log", "--partition", "no_such_partition")
    assert probe.process.wait(timeout=60) == 1
    text = probe.text()
    assert "your earlier sessions still in the queue" in text and job_id in text
    assert f"--attach {job_id}" in text
    assert f"orphaned tunnel from a killed run still serves 127.0.0.1:{port}" in text

    attached = Launch(cluster, tmp_path / "attach.log", "--attach", job_id)
    new_port, new_token, attached_id = attached.ready()
    assert "closing the orphaned tunnel" in attached.text()
    assert (new_port, new_token, attached_id) == (port, token, job_id)  # the same URL works

    # The tunnel dies (network change, laptop asleep): it comes back on the same port.
    ctl = cluster.laptop.home / ".gpu-jupyter" / "tunnels" / f"job-{job_id}.ctl"
    check = subprocess.run(
        ["ssh", "-S", str(ctl), "-O", "check", "x"], capture_output=True, text=True, check=False
    )
    tunnel_pid = int(re.search(r"pid=(\d+)", check.stderr).group(1))
    os.kill(tunnel_pid, signal.SIGKILL)
    attached.wait_for(r"tunnel reconnected", 40)
    assert api_status(port, token) == 200
    assert job_alive(cluster, "slurm", job_id)

    # Cancelled from outside: the script says so and closes the tunnel.
    subprocess.run(["scancel", job_id], env=cluster.env, check=True)
    assert attached.process.wait(timeout=60) == 1
    assert "cancelled from outside" in attached.text()
    assert_ended(cluster, job_id, port)


def test_two_simultaneous_starts_and_a_local_squatter(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Two starts in the same second get their own ports; a listener on the
    first port tried receives nothing (never a token)."""
    squatter = socket.socket()
    port = 8888
    while True:
        try:
            squatter.bind(("127.0.0.1", port))
            break
        except OSError:
            port += 1
    squatter.listen()
    received: list[bytes] = []

    def serve() -> None:
        squatter.settimeout(1)
        while not stop.is_set():
            try:
                connection, _ = squatter.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    received.append(connection.recv(65536))
                except OSError:
                    received.append(b"")

    stop = threading.Event()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    launches = [
        Launch(cluster, tmp_path / f"launch{i}.log", *SMALL_JOB, "--venv", sys.prefix)
        for i in range(2)
    ]
    try:
        (port1, token1, job1), (port2, token2, job2) = (one.ready() for one in launches)
        assert port1 != port2 and port not in (port1, port2)
        assert api_status(port1, token1) == 200 and api_status(port2, token2) == 200
        assert api_status(port1, token2) in (401, 403)
        # A killed script's tunnel closes by itself when its job ends.
        assert launches[1].stop(signal.SIGKILL) == -signal.SIGKILL
        assert api_status(port2, token2) == 200
        subprocess.run(["scancel", job2], env=cluster.env, check=True)
        wait_until(lambda: not port_open(port2), 30, "the orphaned tunnel to close")
    finally:
        code = launches[0].stop()
        launches[1].stop(signal.SIGKILL)
        stop.set()
        thread.join()
        squatter.close()
    assert code == 130
    # Not a byte (so no request, no token) reached the squatter. Bare connects
    # without data can come from other programs on a shared machine probing ports.
    assert b"".join(received) == b""
    assert_ended(cluster, job1, port1)


def test_rejected_submission_is_reported(cluster: LocalCluster, tmp_path: Path) -> None:
    launch = Launch(
        cluster,
        tmp_path / "launch.log",
        "--scheduler",
        "slurm",
        "--gpus",
        "0",
        "--cores",
        "1",
        "--mem",
        "100M",
        "--partition",
        "no_such_partition",
    )
    assert launch.process.wait(timeout=30) == 1
    text = launch.text()
    assert "the job was not accepted by slurm" in text
    assert "partition" in text.lower()


def test_job_that_dies_is_reported(cluster: LocalCluster, tmp_path: Path) -> None:
    before = set(cluster.squeue().split())
    launch = Launch(
        cluster, tmp_path / "launch.log", *SMALL_JOB, "--venv", str(tmp_path / "no-such-venv")
    )
    assert launch.process.wait(timeout=60) == 1, launch.text()
    text = launch.text()
    assert "the job ended" in text
    assert "no-such-venv" in text  # the job's log is shown
    assert set(cluster.squeue().split()) <= before


def test_queue_wait_past_timeout_cancels_the_job(cluster: LocalCluster, tmp_path: Path) -> None:
    # A job held by Slurm never starts, like one waiting in a busy queue.
    cluster.hold_new_jobs(True)
    try:
        launch = Launch(
            cluster,
            tmp_path / "launch.log",
            "--gpus",
            "0",
            "--cores",
            "1",
            "--mem",
            "100M",
            "--timeout",
            "5",
        )
        assert launch.process.wait(timeout=40) == 1, launch.text()
    finally:
        cluster.hold_new_jobs(False)
    text = launch.text()
    job_id = re.search(r"submitted job (\d+)", text).group(1)
    assert re.search(rf"job {job_id} is waiting in the queue \(\w+\); waited \d+s", text)
    assert "did not start within 5s" in text
    assert job_id not in cluster.squeue()


def test_ctrl_c_while_submitting_leaves_no_job(cluster: LocalCluster, tmp_path: Path) -> None:
    """Interrupted before the job id reached the laptop: the job is still cancelled."""
    before = set(cluster.squeue().split())
    launch = Launch(cluster, tmp_path / "launch.log", *SMALL_JOB, "--venv", sys.prefix)
    # Printed just before the submission starts; the signal's trap runs only when
    # the submitting ssh returns, before its answer (the job id) is read.
    launch.wait_for(r"scheduler: slurm", 20)
    assert launch.stop() == 130, launch.text()
    wait_until(lambda: not set(cluster.squeue().split()) - before, 15, "no new job")
    assert not list((cluster.home / ".gpu-jupyter").glob("session-*"))
