#!/usr/bin/env bash
# One entry point for the two things people do with this repository:
#
#   ./course.sh lab    install (first time only) and open the course in JupyterLab
#   ./course.sh test   install (first time only) and run the whole test suite
#
# The install goes into .venv/ next to this script, pinned by
# requirements/constraints.txt, and is redone only when pyproject.toml or the
# constraints change. Extra arguments are passed on to JupyterLab or pytest.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv="$repo/.venv"
python_bin=${PYTHON:-python3}

usage() {
    sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

die() { echo "course.sh: $*" >&2; exit 1; }

have_nvidia_gpu() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
}

# Which optional parts to install: GPU builds where an NVIDIA driver answers,
# the smaller CPU builds elsewhere. COURSE_EXTRAS overrides the choice.
choose_extras() {
    if [[ -n "${COURSE_EXTRAS:-}" ]]; then
        echo "$COURSE_EXTRAS"
    elif have_nvidia_gpu; then
        echo "test,cuda,tf,mpi"
    elif [[ "$(uname -s)-$(uname -m)" == Linux-x86_64 ]]; then
        echo "test,cupy,tf-cpu,mpi"
    else
        echo "test,tf,mpi"
    fi
}

ensure_installed() {
    local extras stamp want
    extras=$(choose_extras)
    want=$(cat "$repo/pyproject.toml" "$repo/requirements/constraints.txt" <(echo "$extras") | sha256sum | cut -c1-16)
    stamp="$venv/.course-install-stamp"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    "$python_bin" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
        || die "Python 3.11 or newer is needed (found: $("$python_bin" --version 2>&1)). Set PYTHON=/path/to/python3.11 and try again."
    echo "course.sh: installing the course environment into .venv (extras: $extras); this happens once." >&2
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
        -c "$repo/requirements/constraints.txt" -e "$repo[$extras]" \
        || die "installing the dependencies failed (see the messages above)"
    echo "$want" > "$stamp"
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case "$cmd" in
    lab)
        ensure_installed
        export PATH="$venv/bin:$PATH"
        # JupyterLab's defaults are kept on purpose: it listens on localhost
        # only and requires the random token it prints.
        root_flag=()
        if [[ $(id -u) -eq 0 ]]; then
            # Common in containers; JupyterLab refuses root unless told. The token still applies.
            echo "course.sh: running as root, so starting JupyterLab with --allow-root" >&2
            root_flag=(--allow-root)
        fi
        exec "$venv/bin/jupyter" lab --ServerApp.root_dir="$repo" \
            --LabApp.default_url="/lab/tree/course/README.md" "${root_flag[@]}" "$@"
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
    -h|--help|help)
        usage
        ;;
    *)
        usage >&2
        exit 2
        ;;
esac
