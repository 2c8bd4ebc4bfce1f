"""Where and how a student's kernel runs: the grading sandbox.

Student code runs with the grader's rights unless something stops it, and the
grader can write the gradebook, every submission and the course. So the
kernel nbgrader starts is not ``ipykernel`` but :mod:`grader.sandbox.kernel`,
which reads a :class:`Policy` and then, strongest first, whatever this machine
allows:

``bwrap+uid``  (root, user namespaces allowed): a user id of its own, and
    bubblewrap with no network, its own process tree (everything it started
    dies with the kernel) and a file system that holds only what is put back:
    the system folders (:data:`SYSTEM_FOLDERS`, read-only), the Python
    environment and ``demos`` (read-only), a copy of the notebook's folder and
    its runtime folder (writable), and small ``/tmp`` and ``/dev/shm`` of its
    own. Nothing else of the machine is there, so a second copy of the course
    elsewhere (a backup, another checkout) is not readable either;
``bwrap``      (not root): the same without a user id of its own (bubblewrap's
    options are spelled out in :mod:`grader.sandbox.bwrap`);
``uid``        (root, no user namespaces, e.g. an unprivileged container): a
    user id of its own, so nothing of the grader's is writable and the
    gradebook copies (mode 600) are unreadable, and every process of that
    user id is killed after the notebook; world-readable files stay readable
    and the network stays open;
``limits``     (neither, or the course environment is not readable by another
    user id: make its folders and their parents ``o+rx``): resource limits
    only, with a warning.

At every level the kernel works in a copy of the notebook's folder
(:attr:`Policy.workdir`), never in the folder nbgrader writes the graded
notebook into, so nothing the student's code leaves there (a link to the
gradebook, say) is ever written through or copied by the grader. Every level
limits memory (the resident memory a notebook really writes, kept by
:mod:`grader.sandbox.memory_watch`, so that a GPU kernel is not stopped for the address
space its libraries reserve, and a memory cgroup where one can be made:
:mod:`grader.sandbox.cgroups`), the files it writes (:attr:`Policy.disk_bytes`), CPU
time and processes.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from grader.sandbox import bwrap
from grader.sandbox.bwrap import SYSTEM_FOLDERS
from grader.sandbox.policy import LEVEL_MEANING, Policy, in_bubblewrap, own_user
from grader.sandbox.processes import BASE_UID


def _works(args: list[str]) -> bool:
    try:
        return subprocess.run(args, capture_output=True, timeout=20, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


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
    bwrap_program = shutil.which("bwrap")
    isolation = [*bwrap.NAMESPACES, *bwrap.system_arguments()]
    probe = [*isolation, "true"]  # the isolation the kernel will get, around a no-op
    if (
        root
        and bwrap_program
        and shutil.which("setpriv")
        and _works(
            [
                bwrap_program,
                *isolation,
                "setpriv",
                f"--reuid={BASE_UID}",
                f"--regid={BASE_UID}",
                "--clear-groups",
                "true",
            ]
        )
    ):
        return "bwrap+uid"
    if not root and bwrap_program and _works([bwrap_program, "--unshare-user", *probe]):
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


def visible_paths(level: str, private: list[Path]) -> list[str]:
    """What a sandboxed kernel at *level* can read (for ``python -m grader sandbox``)."""
    if not in_bubblewrap(level):
        return ["every world-readable file of this machine (no user namespaces here)"]
    system = [p for p in SYSTEM_FOLDERS if os.path.isdir(p) and not os.path.islink(p)]
    environment = [p for p in course_environment_paths(private) if not bwrap.is_system(p)]
    return [
        *(f"{p} (read-only)" for p in [*system, *environment]),
        "a copy of the notebook's folder, its own HOME, /tmp, /dev/shm (writable, removed after)",
    ]


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


def _confined(
    policy: Policy, program: list[str], workdir: str | None, devices: list[str]
) -> list[str]:
    """*program* wrapped in the sandbox *policy* describes (bubblewrap, its user id, or neither)."""
    drop = []
    if policy.uid is not None and own_user(policy.level):
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
            *bwrap.arguments(policy, workdir, devices),
            *drop,
            *program,
        ]
    if policy.level == "bwrap":
        return [
            shutil.which("bwrap") or "bwrap",
            "--unshare-user",
            *bwrap.arguments(policy, workdir, devices),
            *program,
        ]
    return drop + program


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
    # GPU device files, so that a GPU grader grades on the GPU as the students ran it.
    devices = []
    if policy.gpu:
        devices = sorted(glob.glob("/dev/nvidia*")) + sorted(glob.glob("/dev/dri"))
    return _confined(policy, kernel, workdir, devices)


def runner_command(policy: Policy) -> list[str]:
    """The command that starts the kernel runner (:mod:`demos.grading.kernel_host`) sandboxed.

    Its own bubblewrap, beside the notebook's: the same user id and limits, no
    GPU, no folder of the notebook's and nothing writable but its own ``/tmp``.
    """
    return _confined(policy, [sys.executable, "-m", "demos.grading.kernel_host"], None, [])


def install_kernelspec(folder: Path, policy_file: Path) -> str:
    """Write the ``grader-sandbox`` kernelspec under *folder* (add it to JUPYTER_PATH)."""
    spec = folder / "kernels" / "grader-sandbox"
    spec.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "grader.sandbox.kernel", str(policy_file), "{connection_file}"]
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


def main(course: Path, args: object = None) -> int:
    """``python -m grader sandbox``: what a grading kernel is kept from on this machine."""
    from grader.sandbox.cgroups import describe

    level = detect_level()
    print(f"grading sandbox: {level}: {LEVEL_MEANING[level]}")
    print(describe())
    print("a kernel can read:")
    for path in visible_paths(level, private=[course]):
        print(f"  {path}")
    for warning in environment_warnings():
        print(f"warning: {warning}")
    return 0
