# shellcheck shell=bash
# The course inside a batch job, for the hub (deploy/jupyterhub, which puts this
# file into each job script) and the Open OnDemand app (which ships it in its
# template folder): loads the environment, switches on the students' mode, gives
# the student their own copy of the notebooks and runs the server command.
# Expects the COURSE_* variables that deploy/course_session.py (or the app's
# course.rb) sets from deploy/session.yml and the site file.

# Copies the edition's notebooks into the student's folder, file by file, and
# only files that are not there: a student's own work is never overwritten, and
# a chapter added to the edition later appears at the next start.
course_copy_missing() { # $1 = edition, $2 = the student's folder, $3... = folders to copy
    local from=$1 to=$2 part rel
    shift 2
    for part in "$@"; do
        [ -d "$from/$part" ] || continue
        while IFS= read -r rel; do
            mkdir -p "$to/$rel"
        done < <(cd "$from" && find "$part" -type d)
        while IFS= read -r rel; do
            # -e and -L: an existing file, or a link (even a broken one), stays.
            if [ ! -e "$to/$rel" ] && [ ! -L "$to/$rel" ]; then
                cp -p "$from/$rel" "$to/$rel"
            fi
        done < <(cd "$from" && find "$part" -type f ! -name '*.pyc' ! -path '*/.ipynb_checkpoints/*')
    done
}

start_course() { # "$@" = the server command
    local module
    umask 077
    # A job submitted without the user's environment (OnDemand's copy_environment: false)
    # may start without HOME.
    : "${HOME:=$(getent passwd "$(id -un)" | cut -d: -f6)}"
    export HOME
    # A job shell that is no login shell may not know 'module' yet (the site's init is in /etc/profile).
    if [ -n "$COURSE_MODULES" ] && ! type module >/dev/null 2>&1; then
        # shellcheck disable=SC1091
        . /etc/profile
    fi
    for module in $COURSE_MODULES; do
        module load "$module" || { echo "start-course: module load $module failed" >&2; exit 3; }
    done
    # shellcheck disable=SC1091 # the course environment, made by ./course.sh install --gpu
    . "$COURSE_VENV/bin/activate" || { echo "start-course: no environment at $COURSE_VENV" >&2; exit 3; }
    # The students' mode: no instructor tools, Validate only on exercises (jupyter/README.md).
    export JUPYTER_CONFIG_PATH="$COURSE_CONFIG_PATH${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
    export JUPYTER_PATH="$COURSE_DATA_PATH${JUPYTER_PATH:+:$JUPYTER_PATH}"
    local workspace="$HOME/$COURSE_WORKSPACE"
    mkdir -p "$workspace"
    # shellcheck disable=SC2086 # COURSE_COPY is a list of folder names
    course_copy_missing "$COURSE_EDITION" "$workspace" $COURSE_COPY
    cd "$workspace" || exit 3
    echo "start-course: the course in $workspace (edition $COURSE_EDITION) on $(hostname)"
    # Idle kernels and terminals are stopped, then the server (and so the job), as
    # bin/gpu-jupyter does; the hub's culler also stops idle servers itself.
    exec "$@" \
        --ServerApp.shutdown_no_activity_timeout="$COURSE_IDLE_SECONDS" \
        --MappingKernelManager.cull_idle_timeout="$COURSE_IDLE_SECONDS" \
        --MappingKernelManager.cull_interval=60 \
        --TerminalManager.cull_inactive_timeout="$COURSE_IDLE_SECONDS" \
        --TerminalManager.cull_interval=60
}
