# Source this at the start of a command run on a lent GPU machine (device tool),
# from the repository root, with `.whl` carried:
#   source tools/device/setup.sh
# It installs the carried pure-Python wheels (keras, dask, nbclient, nbval, ...)
# into /tmp/site, puts them, the repository and the device-only numpy shim on
# PYTHONPATH, and records the machine under $OUT.
# Once per machine: scripts run side by side (all.sh) must not reinstall into the same folder.
if [ ! -f /tmp/site/.installed ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || return 1
    touch /tmp/site/.installed
fi
export PYTHONPATH="$PWD/tools/device/site:/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PATH="/tmp/site/bin:$PATH"
export KERAS_BACKEND=${KERAS_BACKEND:-jax}
export PYTHONUNBUFFERED=1
mkdir -p "${OUT:-/tmp/out}"
nvidia-smi -L > "${OUT:-/tmp/out}/nvidia-smi.txt" 2>&1 || true
