"""grader.sandbox.isolation: the kernel's box (bubblewrap, environment, visible paths), warnings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grader.sandbox import environment as sandbox_environment
from grader.sandbox import isolation as sandbox
from helpers import ROOT


def test_sandbox_command_shows_only_what_is_put_back_and_drops_the_user(tmp_path: Path) -> None:
    policy = sandbox.Policy(
        level="bwrap+uid",
        uid=61003,
        readonly=[str(ROOT / "demos")],
        writable=[str(tmp_path / "rt")],
        workdir=str(tmp_path / "rt" / "work"),
    )
    notebook = str(tmp_path / "autograded" / "alice" / "simt")
    command = sandbox.kernel_command(policy, str(tmp_path / "rt" / "k.json"), notebook)
    text = " ".join(command)
    for option in (
        "--unshare-net",
        "--unshare-pid",
        "--die-with-parent",
        "--tmpfs /tmp",
        "--ro-bind /usr /usr",
        f"--ro-bind {ROOT / 'demos'}",
        f"--bind {tmp_path / 'rt' / 'work'} {notebook}",  # a copy, at the notebook's path
        f"--chdir {notebook}",
        "--reuid=61003",
    ):
        assert option in text, option
    # an allow-list: the machine's root is never bound, so solutions/ (or a second
    # copy of the course anywhere else) does not exist inside
    bound = [command[i + 1] for i, arg in enumerate(command) if arg in ("--bind", "--ro-bind")]
    assert "/" not in bound and "/home" not in bound and "/root" not in bound
    assert not any(str(ROOT / "solutions").startswith(b + "/") or b == str(ROOT) for b in bound)
    # /tmp and /dev/shm of its own, each of a bounded size
    sizes = [command[i + 1] for i, arg in enumerate(command) if arg == "--size"]
    assert sizes == [str(policy.disk_bytes)] * 2 + [str(policy.memory_bytes)]
    assert command.index("--reuid=61003") > command.index("--")  # dropped inside the box
    assert sandbox.detect_level() in sandbox.LEVEL_MEANING
    assert "CANNOT" in sandbox.LEVEL_MEANING["uid"]


def test_kernel_gets_its_share_of_the_cores_and_no_gpu_where_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox.glob, "glob", lambda pattern: ["/dev/nvidia0", "/dev/nvidiactl"])
    shared = sandbox.Policy(level="bwrap", threads=4)
    env = sandbox_environment.kernel_environment(shared)
    assert {env[name] for name in sandbox_environment.THREAD_VARIABLES} == {"4"}
    assert "CUDA_VISIBLE_DEVICES" not in env and "XLA_FLAGS" not in env
    assert "--dev-bind /dev/nvidia0" in " ".join(sandbox.kernel_command(shared, "k.json", "/nb"))

    alone = sandbox.Policy(level="bwrap", threads=1, gpu=False)
    env = sandbox_environment.kernel_environment(alone)
    assert env["OMP_NUM_THREADS"] == "1" and "intra_op_parallelism_threads=1" in env["XLA_FLAGS"]
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["JAX_PLATFORMS"] == "cpu"
    assert "/dev/nvidia" not in " ".join(sandbox.kernel_command(alone, "k.json", "/nb"))
    assert (
        sandbox_environment.kernel_environment(sandbox.Policy(level="bwrap")) == {}
    )  # no limit asked

    # a HOME of the notebook's own, also inside bubblewrap
    own = sandbox.Policy(level="bwrap+uid", uid=60001, threads=2, home="/work/s1/runtime/home")
    env = sandbox_environment.kernel_environment(own)
    assert env["HOME"] == "/work/s1/runtime/home" and env["OMP_NUM_THREADS"] == "2"
    # at the "uid" level no bubblewrap sets it: the variable alone gives the kernel its HOME
    alone_uid = sandbox.Policy(level="uid", uid=60001, threads=1, home="/work/s1/runtime/home")
    assert sandbox_environment.kernel_environment(alone_uid)["HOME"] == "/work/s1/runtime/home"
    # without bubblewrap its own TMPDIR too; inside, /tmp is already its own
    tmp = "/work/s1/runtime/tmp"
    assert sandbox_environment.kernel_environment(
        sandbox.Policy(level="uid", uid=60001, tmpdir=tmp)
    ) == {"TMPDIR": tmp}
    assert "TMPDIR" not in sandbox_environment.kernel_environment(
        sandbox.Policy(level="bwrap", tmpdir=tmp)
    )
    assert "--setenv HOME /work/s1/runtime/home" in " ".join(
        sandbox.kernel_command(own, "k.json", "/nb")
    )


def test_pythonpath_folders_are_readable_in_the_sandbox_unless_they_show_the_course(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "cluster-software"
    shared.mkdir()
    course = tmp_path / "course"
    (course / "src").mkdir(parents=True)
    monkeypatch.setenv(
        "PYTHONPATH", ":".join([str(shared), str(course), str(course / "src"), str(tmp_path)])
    )
    paths = sandbox.course_environment_paths(private=[course])
    assert str(shared.resolve()) in paths
    # the course itself, a folder inside it, and a folder holding it stay hidden
    for secret in (course, course / "src", tmp_path):
        assert str(secret.resolve()) not in paths


def test_grader_warns_when_the_kernels_packages_have_no_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandboxed kernel cannot write __pycache__, so uncompiled packages cost every notebook."""
    import compileall
    import importlib

    package = tmp_path / "site" / "freshpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    importlib.invalidate_caches()
    assert sandbox.missing_bytecode(("freshpkg", "no_such_package")) == ["freshpkg"]
    monkeypatch.setattr(sandbox, "missing_bytecode", lambda: ["freshpkg"])
    (warning,) = sandbox.environment_warnings()
    assert "freshpkg have no compiled bytecode" in warning
    assert f"-m compileall -q {tmp_path / 'site'}" in warning
    monkeypatch.undo()
    assert compileall.compile_dir(str(package), quiet=1)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert sandbox.missing_bytecode(("freshpkg",)) == []
