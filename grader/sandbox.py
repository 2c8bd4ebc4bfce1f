"""Where and how a student's kernel runs: the grading sandbox.

Student code runs with the grader's rights unless something stops it, and the
grader can write the gradebook, every submission and the course. So the
kernel nbgrader starts is not ``ipykernel`` but :mod:`grader.sandbox_kernel`,
which reads a :class:`Policy` and then, strongest first, whatever this machine
allows:

``bwrap+uid``  (root, user namespaces allowed): a user id of its own, and
    bubblewrap with no network, its own process tree (everything it started
    dies with the kernel), the course folder, the grading folder, ``/root``,
    ``/home`` and ``/tmp`` replaced by empty folders, and only the Python
    environment and ``demos`` (read-only) and the notebook's own folder
    (writable) put back;
``bwrap``      (not root): the same without a user id of its own;
``uid``        (root, no user namespaces, e.g. an unprivileged container): a
    user id of its own, so nothing of the grader's is writable and the
    gradebook copies (mode 600) are unreadable, and every process of that
    user id is killed after the notebook; world-readable files stay readable
    and the network stays open;
``limits``     (neither, or the course environment is not readable by another
    user id: make its folders and their parents ``o+rx``): resource limits
    only, with a warning.

Every level limits memory (the resident memory a notebook really writes, kept
by :mod:`grader.memory_watch`, so that a GPU kernel is not stopped for the
address space its libraries reserve), CPU time, processes and file size.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: First user id the sandboxes use; worker *k* uses ``BASE_UID + k``.
BASE_UID = 61000

LEVEL_MEANING = {
    "bwrap+uid": "own user id, no network, own process tree, course files hidden or read-only",
    "bwrap": "no network, own process tree, course files hidden or read-only (same user id)",
    "uid": "own user id: course files and gradebook not writable, gradebook copies unreadable, "
    "its processes killed after each notebook; CANNOT hide world-readable files "
    "(e.g. solutions/) or cut the network (no user namespaces here)",
    "limits": "resource limits only: CANNOT protect the gradebook or course files "
    "(run as root or allow user namespaces)",
}


@dataclass
class Policy:
    """What one sandboxed kernel may see and use (written as JSON next to the kernelspec)."""

    level: str
    uid: int | None = None
    memory_bytes: int = 4 << 30
    cpu_seconds: int = 600
    processes: int = 512
    file_bytes: int = 1 << 30
    #: Threads each numerical library may start (0: its own default, all cores).
    threads: int = 0
    #: Whether the kernel sees the GPUs (False for assignments whose tests need none).
    gpu: bool = True
    #: The notebook's own HOME, writable by it alone: libraries keep caches there
    #: (CuPy's compiled kernels, Keras' settings). Empty: /tmp inside bubblewrap,
    #: the grader's HOME otherwise.
    home: str = ""
    hide: list[str] = field(default_factory=list)
    readonly: list[str] = field(default_factory=list)
    writable: list[str] = field(default_factory=list)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        return cls(**json.loads(Path(path).read_text()))


def _works(args: list[str]) -> bool:
    try:
        return subprocess.run(args, capture_output=True, timeout=20, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# What every sandboxed kernel gets from bubblewrap (and what detect_level probes):
# no network, its own process tree, IPC and host name, killed with its parent, no
# terminal to inject into, the file system read-only, fresh /dev and /proc.
_ISOLATION = (
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--die-with-parent",
    "--new-session",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
)


def detect_level() -> str:
    """The strongest isolation this machine offers (see the module docstring).

    ``GRADER_SANDBOX_LEVEL`` chooses a weaker level on purpose (e.g. to test it).
    """
    chosen = os.environ.get("GRADER_SANDBOX_LEVEL")
    if chosen:
        if chosen not in LEVEL_MEANING:
            raise SystemExit(f"GRADER_SANDBOX_LEVEL must be one of {', '.join(LEVEL_MEANING)}")
        return chosen
    root = os.geteuid() == 0
    bwrap = shutil.which("bwrap")
    probe = [*_ISOLATION, "true"]  # the isolation the kernel will get, around a no-op
    if (
        root
        and bwrap
        and shutil.which("setpriv")
        and _works(
            [
                bwrap,
                *_ISOLATION,
                "setpriv",
                f"--reuid={BASE_UID}",
                f"--regid={BASE_UID}",
                "--clear-groups",
                "true",
            ]
        )
    ):
        return "bwrap+uid"
    if not root and bwrap and _works([bwrap, "--unshare-user", *probe]):
        return "bwrap"
    if (
        root
        and shutil.which("setpriv")
        and _works(
            [
                "setpriv",
                f"--reuid={BASE_UID}",
                f"--regid={BASE_UID}",
                "--clear-groups",
                sys.executable,
                "-c",
                "import ipykernel, demos",
            ]
        )
    ):
        return "uid"
    return "limits"


def course_environment_paths(private: list[Path] | tuple[Path, ...] = ()) -> list[str]:
    """Folders the kernel must read: the Python environment, its base interpreter, ``demos``.

    ``PYTHONPATH`` folders count too (clusters often provide packages that way),
    except one that is, holds or lies inside a *private* folder: the course
    root, for instance, holds ``solutions/`` and must not be put back.
    """
    import demos

    paths = [sys.prefix, sys.base_prefix, str(Path(demos.__file__).resolve().parent)]
    hidden = [Path(os.path.realpath(p)) for p in private]
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if not entry or not os.path.isdir(entry):
            continue
        real = Path(os.path.realpath(entry))
        if not any(real.is_relative_to(p) or p.is_relative_to(real) for p in hidden):
            paths.append(str(real))
    return list(dict.fromkeys(os.path.realpath(p) for p in paths))


#: Packages every grading kernel imports before the student's first line.
KERNEL_PACKAGES = ("ipykernel", "IPython", "jupyter_client", "zmq", "tornado", "numpy", "numba")


def missing_bytecode(packages: tuple[str, ...] = KERNEL_PACKAGES) -> list[str]:
    """The *packages* installed without compiled bytecode (``__pycache__``) for this Python.

    A sandboxed kernel may not write into the environment, so where an
    installer skipped byte-compiling (``uv`` does by default, as does ``pip
    --no-compile``) every kernel compiles IPython and its friends again, for
    every notebook graded.
    """
    import importlib.util

    missing = []
    for name in packages:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec else None
        if origin and origin.endswith(".py"):
            if not os.path.exists(importlib.util.cache_from_source(origin)):
                missing.append(name)
    return missing


def environment_warnings() -> list[str]:
    """What about this Python environment makes grading slower than it needs to be."""
    import importlib.util

    missing = missing_bytecode()
    if not missing:
        return []
    folders = sorted({str(Path(importlib.util.find_spec(n).origin).parent.parent) for n in missing})
    return [
        f"{', '.join(missing)} have no compiled bytecode in this environment, so every "
        "sandboxed kernel compiles them again (slower grading); compile them once with: "
        f"{sys.executable} -m compileall -q {' '.join(folders)}"
    ]


#: The thread pools of NumPy's BLAS, OpenMP, Numba and TensorFlow, each sized to
#: every core of the machine unless told otherwise.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
)


def kernel_environment(policy: Policy) -> dict[str, str]:
    """Variables the kernel starts with: its share of the cores, its HOME and, maybe, no GPU.

    Sixteen notebooks graded at once on sixteen cores, each with libraries that
    start a thread per core, would run 256 busy threads; a share each keeps the
    machine at one thread per core. A kernel without the GPU is told so in the
    variables CUDA, JAX and TensorFlow read, so that none of them tries to start one.
    A HOME of its own matters under its own user id: the grader's HOME is not
    writable there, and CuPy stops with a PermissionError when it cannot store
    a kernel it compiled; a HOME shared by students would let one plant
    compiled kernels for the next.
    """
    env = {"HOME": policy.home} if policy.home else {}
    if policy.threads > 0:
        env |= dict.fromkeys(THREAD_VARIABLES, str(policy.threads))
        if policy.threads == 1:
            env["XLA_FLAGS"] = " ".join(
                filter(
                    None,
                    [
                        os.environ.get("XLA_FLAGS", ""),
                        "--xla_cpu_multi_thread_eigen=false",
                        "intra_op_parallelism_threads=1",
                    ],
                )
            )
    if not policy.gpu:
        env |= {"CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}
    return env


def _bwrap_arguments(policy: Policy, workdir: str) -> list[str]:
    """bubblewrap options: hide, then put back read-only and writable folders."""
    args = list(_ISOLATION)
    # GPU device files, so that a GPU grader grades on the GPU as the students ran it.
    if policy.gpu:
        for device in sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri")):
            args += ["--dev-bind", device, device]
    hidden: list[str] = []
    for path in sorted(set(policy.hide), key=len):
        if os.path.isdir(path) and not any(path.startswith(h + "/") for h in hidden):
            hidden.append(path)
            args += [
                "--perms",
                "01777" if path in ("/tmp", "/var/tmp", "/dev/shm") else "0755",
                "--tmpfs",
                path,
            ]
    made: set[str] = set()
    for option, paths in (("--ro-bind", policy.readonly), ("--bind", [*policy.writable, workdir])):
        for path in dict.fromkeys(paths):
            # Folders above a put-back path inside a hidden one are new: let the user pass.
            parents = [
                p
                for p in reversed(Path(path).parents)
                if str(p) not in made
                and any(str(p) == h or str(p).startswith(h + "/") for h in hidden)
            ]
            for parent in [*parents[1:], Path(path)]:
                if str(parent) not in made:
                    args += ["--perms", "0755", "--dir", str(parent)]
                    made.add(str(parent))
            args += [option, path, path]
    return args + ["--setenv", "HOME", policy.home or "/tmp", "--chdir", workdir, "--"]


def kernel_command(policy: Policy, connection_file: str, workdir: str) -> list[str]:
    """The command that starts ipykernel in *workdir* inside the sandbox *policy* describes."""
    kernel = [
        sys.executable,
        "-m",
        "ipykernel_launcher",
        "-f",
        connection_file,
        "--HistoryManager.hist_file=:memory:",
    ]
    drop = []
    if policy.uid is not None and policy.level in ("bwrap+uid", "uid"):
        drop = [
            "setpriv",
            f"--reuid={policy.uid}",
            f"--regid={policy.uid}",
            "--clear-groups",
            "--inh-caps=-all",
        ]
    if policy.level == "bwrap+uid":  # bwrap as root builds the box, then we drop to the uid
        return [
            shutil.which("bwrap") or "bwrap",
            *_bwrap_arguments(policy, workdir),
            *drop,
            *kernel,
        ]
    if policy.level == "bwrap":
        return [
            shutil.which("bwrap") or "bwrap",
            "--unshare-user",
            *_bwrap_arguments(policy, workdir),
            *kernel,
        ]
    return drop + kernel


_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Have Linux kill this process when its parent ends (``PR_SET_PDEATHSIG``).

    For the grader's helper processes (a student's grading fork, the memory
    watcher), so that none outlives the process it works for.
    """
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def processes_of(uid: int) -> set[int]:
    """Every process of user *uid* (one ``stat`` each, no file read)."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    found.add(int(entry.name))
            except OSError:  # ended while we looked
                pass
    return found


def kill_user_processes(uid: int, grace: float = 0.5) -> int:
    """Kill every process of user *uid* (the sandbox's); how many there were."""
    victims = processes_of(uid)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(victims)


def unreachable(path: Path, uid: int) -> str | None:
    """The first folder above *path* that user *uid* cannot pass through, if any."""
    for folder in [*reversed(path.parents), path]:
        try:
            st = folder.stat()
        except OSError:
            return str(folder)
        mode = st.st_mode
        allowed = (mode & 0o100 if st.st_uid == uid else 0) or mode & 0o001
        if not allowed:
            return str(folder)
    return None


def install_kernelspec(folder: Path, policy_file: Path) -> str:
    """Write the ``grader-sandbox`` kernelspec under *folder* (add it to JUPYTER_PATH)."""
    spec = folder / "kernels" / "grader-sandbox"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "grader.sandbox_kernel", str(policy_file), "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": argv,
                "display_name": "Python (grading sandbox)",
                "language": "python",
                # signals do not reach into the sandbox: interrupt through a message
                "interrupt_mode": "message",
            }
        )
    )
    return "grader-sandbox"
