# Sourced by the tools in this folder; not run on its own.
# Sets REPO (the repository root), PY (the course environment's Python: .venv made
# by ./course.sh, else python3 on PATH) and OUTDIR (the first argument, created),
# and records the machine in OUTDIR/machine.txt.
set -uo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
usage_and_exit() {
    sed -n '2,/^set /p' "$0" | sed -e '/^set /d' -e 's/^# \{0,1\}//' >&2
    exit 2
}
[[ $# -ge 1 && "$1" != -* ]] || usage_and_exit
OUTDIR=$(mkdir -p "$1" && cd "$1" && pwd) || { echo "cannot create the output folder $1" >&2; exit 2; }
shift
if [[ -x "$REPO/.venv/bin/python" ]]; then PY="$REPO/.venv/bin/python"; else PY=${PYTHON:-python3}; fi
"$PY" -c 'import demos' 2>/dev/null || {
    echo "the course environment is not installed here: run ./course.sh test --co -q once (or set PYTHON)" >&2
    exit 2
}
cd "$REPO"
export PYTHONUNBUFFERED=1
{ date -u; nvidia-smi 2>&1; "$PY" -m demos info; } > "$OUTDIR/machine.txt" 2>&1
