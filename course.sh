#!/usr/bin/env bash
# One entry point for the things people do with this repository:
#
#   ./course.sh lab                  install (first time only) and open the course in JupyterLab
#   ./course.sh test                 install (first time only) and run the whole test suite
#   ./course.sh install [--gpu|--cpu] [--dry-run]  install only, start no server (a login node)
#   ./course.sh instructor           JupyterLab with nbgrader's Formgrader (instructor repository)
#   ./course.sh student-edition DIR  build the student edition into DIR (instructor repository)
#
# The install goes into .venv/ next to this script, pinned by
# requirements/constraints.txt, and is redone only when pyproject.toml, the
# constraints or the chosen extras change. Extra arguments go to JupyterLab or pytest.
# COURSE_TARGET=gpu|cpu picks the builds (default: GPU builds where nvidia-smi sees a GPU);
# COURSE_EXTRAS=test,cuda,... overrides the choice of extras entirely.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv="$repo/.venv"
python_bin=${PYTHON:-python3}

usage() {
    sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

die() { echo "course.sh: $*" >&2; exit 1; }
say() { echo "course.sh: $*" >&2; }

case "$(uname -s)" in
    MINGW*|MSYS*|CYGWIN*)
        die "native Windows is not supported: install WSL 2 (wsl --install), clone the course inside it and run ./course.sh there." ;;
esac

have_nvidia_gpu() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}

# The Python that will run the course: the environment's, once it exists.
course_python() {
    if [[ -x "$venv/bin/python" ]]; then echo "$venv/bin/python"; else echo "$python_bin"; fi
}

# TensorFlow 2.21 publishes no wheels for Python 3.14+ or for Intel macOS. There
# the course installs without it (every chapter but 5 works) instead of failing.
tensorflow_missing_reason() {
    local py platform
    py=$("$(course_python)" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    platform="$(uname -s)-$(uname -m)"
    if [[ "$platform" == Darwin-x86_64 ]]; then
        echo "TensorFlow has no build for Intel Macs"
    elif "$(course_python)" -c 'import sys; sys.exit(sys.version_info < (3, 14))'; then
        echo "TensorFlow has no build for Python $py yet"
    fi
}

# Which optional parts to install. target "gpu": CUDA builds of CuPy, numba-cuda and
# TensorFlow, even on a machine without a GPU (a cluster's login node installs for
# its compute nodes). "cpu": the smaller CPU builds. Default: what nvidia-smi finds.
choose_extras() {
    local target=$1 platform no_tf
    platform="$(uname -s)-$(uname -m)"
    if [[ -n "${COURSE_EXTRAS:-}" ]]; then
        echo "$COURSE_EXTRAS"
        return
    fi
    no_tf=$(tensorflow_missing_reason)
    case "$target" in
        gpu)
            [[ "$platform" == Linux-x86_64 || "$platform" == Linux-aarch64 ]] \
                || die "the GPU builds (CUDA) exist for Linux only, not $platform; use --cpu here and install on the GPU machine itself."
            if [[ -n "$no_tf" ]]; then echo "test,cuda,mpi"; else echo "test,cuda,tf-gpu,mpi"; fi ;;
        cpu)
            if [[ -n "$no_tf" ]]; then
                echo "test,mpi"
            elif [[ "$platform" == Linux-x86_64 ]]; then
                echo "test,cupy,tf-cpu,mpi"
            else
                echo "test,tf,mpi"
            fi ;;
        *) die "unknown install target '$target' (use gpu or cpu)" ;;
    esac
}

default_target() {
    case "${COURSE_TARGET:-}" in
        gpu|cpu) echo "$COURSE_TARGET" ;;
        "") if have_nvidia_gpu; then echo gpu; else echo cpu; fi ;;
        *) die "COURSE_TARGET must be gpu or cpu, not '$COURSE_TARGET'" ;;
    esac
}

ensure_installed() {
    local target=${1:-$(default_target)} dry_run=${2:-} extras stamp want no_tf
    "$python_bin" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
        || [[ -x "$venv/bin/python" ]] \
        || die "Python 3.11 or newer is needed (found: $("$python_bin" --version 2>&1)). Set PYTHON=/path/to/python3.12 and try again."
    extras=$(choose_extras "$target")
    if [[ -n "$dry_run" ]]; then
        echo "would install into $venv for $target: -e ${repo}[$extras] -c requirements/constraints.txt"
        [[ -z "$(tensorflow_missing_reason)" || -n "${COURSE_EXTRAS:-}" ]] \
            || say "$(tensorflow_missing_reason): without TensorFlow, chapter 5 and the 'cnn' exercise cannot run."
        return 0
    fi
    want=$(cat "$repo/pyproject.toml" "$repo/requirements/constraints.txt" <(echo "$extras") | sha256sum | cut -c1-16)
    stamp="$venv/.course-install-stamp"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    # COURSE_NO_INSTALL=1: use .venv as it is or stop (a copy that shares this
    # environment, such as a student edition under test, must never reinstall it).
    [[ -z "${COURSE_NO_INSTALL:-}" ]] \
        || die ".venv is out of date for this pyproject.toml and COURSE_NO_INSTALL is set: run ./course.sh install"
    say "installing the course environment into .venv for $target (extras: $extras); this happens once."
    no_tf=$(tensorflow_missing_reason)
    if [[ -n "$no_tf" && -z "${COURSE_EXTRAS:-}" ]]; then
        say "$no_tf: installing without it. Chapter 5 and the 'cnn' exercise need TensorFlow;"
        say "  for them use Python 3.11-3.13 (PYTHON=python3.12 ./course.sh ...) or a GPU cluster."
    fi
    if [[ ! -x "$venv/bin/python" ]]; then
        "$python_bin" -m venv "$venv" || die "could not create $venv (on Debian/Ubuntu: apt-get install python3-venv)"
    fi
    local uv
    if command -v uv >/dev/null 2>&1; then
        uv=$(command -v uv)
    else
        [[ -x "$venv/bin/uv" ]] || "$venv/bin/python" -m pip install -q --disable-pip-version-check uv \
            || die "could not install the 'uv' installer from PyPI; check your network or proxy settings"
        uv="$venv/bin/uv"
    fi
    # Byte-compile at install time: some machines set PYTHONDONTWRITEBYTECODE,
    # and without compiled files every import of TensorFlow is slow.
    UV_COMPILE_BYTECODE=1 "$uv" pip install --quiet --python "$venv/bin/python" \
        -c "$repo/requirements/constraints.txt" -e "${repo}[$extras]" \
        || die "installing the dependencies failed (see the messages above)"
    echo "$want" > "$stamp"
}

# JupyterLab with the settings the course ships in jupyter/ (see jupyter/README.md):
# mode "student" or "instructor" decides which nbgrader tools are on, and
# jupyter/data holds the course's own prebuilt JupyterLab extension.
start_lab() {
    local mode=$1
    shift
    ensure_installed
    export PATH="$venv/bin:$PATH"
    export JUPYTER_CONFIG_PATH="$repo/jupyter/$mode:$repo/jupyter/common${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
    export JUPYTER_PATH="$repo/jupyter/data${JUPYTER_PATH:+:$JUPYTER_PATH}"
    # JupyterLab's defaults are kept on purpose: it listens on localhost
    # only and requires the random token it prints.
    # (the ${a[@]+...} form below: bash 3.2, macOS's, calls an empty array unbound under set -u)
    local root_flag=()
    if [[ $(id -u) -eq 0 ]]; then
        # Common in containers; JupyterLab refuses root unless told. The token still applies.
        say "running as root, so starting JupyterLab with --allow-root"
        root_flag=(--allow-root)
    fi
    cd "$repo"
    exec "$venv/bin/jupyter" lab --ServerApp.root_dir="$repo" \
        --LabApp.default_url="/lab/tree/course/README.md" ${root_flag[@]+"${root_flag[@]}"} "$@"
}

require_instructor_repo() {
    [[ -f "$repo/nbgrader_config.py" && -d "$repo/solutions" ]] \
        || die "this is the student edition: '$1' works only in the instructor's repository (with solutions/ and nbgrader_config.py)."
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case "$cmd" in
    lab)
        start_lab student "$@"
        ;;
    instructor)
        require_instructor_repo instructor
        start_lab instructor "$@"
        ;;
    install)
        target=$(default_target) dry_run=
        for arg in "$@"; do
            case "$arg" in
                --gpu) target=gpu ;;
                --cpu) target=cpu ;;
                --dry-run) dry_run=1 ;;
                *) die "unknown option '$arg' for install (use --gpu, --cpu or --dry-run)" ;;
            esac
        done
        ensure_installed "$target" "$dry_run"
        [[ -n "$dry_run" ]] && exit 0
        say "the course environment is ready in $venv (start it with ./course.sh lab, or bin/gpu-jupyter --venv)"
        ;;
    test)
        ensure_installed
        # nbgrader calls the 'alembic' command: the environment's bin/ must be on PATH.
        export PATH="$venv/bin:$PATH"
        if ! have_nvidia_gpu; then
            # No GPU: run the Numba CUDA kernels in Numba's CUDA simulator.
            export NUMBA_ENABLE_CUDASIM=${NUMBA_ENABLE_CUDASIM:-1}
        fi
        cd "$repo"
        exec "$venv/bin/python" -m pytest -n "${COURSE_TEST_WORKERS:-2}" --dist loadfile \
            tests course --nbval-lax "$@"
        ;;
    student-edition)
        require_instructor_repo student-edition
        [[ $# -eq 1 ]] || die "usage: ./course.sh student-edition DIR (a new or empty folder)"
        exec "$python_bin" "$repo/tools/build_student_edition.py" "$1"
        ;;
    -h|--help|help)
        usage
        ;;
    *)
        usage >&2
        exit 2
        ;;
esac
