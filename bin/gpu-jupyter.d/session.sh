# shellcheck shell=bash
# gpu-jupyter's session: the connection to the login node, the job's submission,
# the one polling loop, and the stop (cancel, clean up). Sourced by bin/gpu-jupyter.

now() { date +%s; }
nap() { sleep "$1" & wait $! || true; } # a sleep that signals interrupt at once
have() { command -v "$1" >/dev/null 2>&1; }

# ------------------------------------------------------------- connection
# One authenticated connection, reused by every later ssh call: 2FA users log in once.
connect_setup() {
    local_dir="$HOME/$state_dir/tunnels"
    mkdir -p "$local_dir" && chmod 700 "$HOME/$state_dir" "$local_dir" \
        || fail "cannot create the private folder $local_dir"
    ctl_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpuj.XXXXXX") # mktemp -d makes it mode 700
    ctl="$ctl_dir/master"
    echo "$$" > "$ctl_dir/launcher" # a later start removes the folder once this run is gone
    ssh_base=(ssh)
    if [[ -n "$ssh_config" ]]; then ssh_base+=(-F "$ssh_config"); fi
    ssh_login=("${ssh_base[@]}" -o ControlMaster=auto -o "ControlPath=$ctl" -o ControlPersist=600
               -o ConnectTimeout=30 -o ServerAliveInterval=15 -o ServerAliveCountMax=4)
}

remote() { "${ssh_login[@]}" "$target" "$@"; }
# Scheduler commands run in a login shell (sent on stdin): on many clusters
# only that puts sbatch/bjobs on the PATH (LSF's profile.lsf, module setups).
# Paths on the cluster are relative to the home directory.
remote_sh() { printf 'cd ~ || exit 1\n%s\n' "$1" | remote 'bash -l -s'; }
# The value of key=... on the last "GPUJ" line of $1 that has that key.
field() { printf '%s\n' "$1" | grep '^GPUJ ' | tr ' ' '\n' | sed -n "s/^$2=//p" | tail -n1; }

# Runs a scheduler command ($1, shell code) in a login shell on the login node.
# Its exit status comes back as "GPUJ rc=N" and each line of its answer as
# "GPUJ| line", so that a login banner is never taken for either; sets
# answer_rc ("" when the login node did not answer) and answer.
ask_login_node() {
    local reply
    reply=$(remote_sh "out=\$($1 2>&1)"$'\n'"$(report_answer)" </dev/null 2>/dev/null || true)
    answer_rc=$(field "$reply" rc)
    answer=$(printf '%s\n' "$reply" | sed -n 's/^GPUJ| //p')
}
report_answer() { # the login node's half of ask_login_node, after out=$(command)
    cat <<'EOF_ANSWER'
rc=$?
echo "GPUJ rc=$rc"
printf '%s\n' "$out" | sed 's/^/GPUJ| /'
EOF_ANSWER
}

# Asks the scheduler about job $1; sets sched_state (PENDING, RUNNING, GONE or
# UNKNOWN), sched_raw (its own word for the state), sched_reason (why it waits)
# and sched_final (the final state once GONE; PURGED when no longer listed).
ask_scheduler() {
    local line rest
    ask_login_node "$("${scheduler}_status" "$1")"
    line=$(printf '%s\n' "$answer" | grep '|' | head -n1 | tr ' ' _ || true)
    sched_raw=${line%%|*} rest=${line#*|}
    sched_reason=${rest#*|}
    if [[ -z $answer_rc ]]; then
        sched_state=UNKNOWN
    else
        sched_state=$("${scheduler}_state" "$sched_raw" "$answer_rc" "$answer")
    fi
    sched_final=""
    if [[ $sched_state == GONE ]]; then sched_final=${sched_raw:-PURGED}; fi
}

# One login shell: the cluster user name, the scheduler (when not given) and the
# user's earlier sessions still in the queue, as GPUJ lines.
hello_script() {
    local s
    # $(id -un) and $s expand on the login node.
    printf 'echo "GPUJ user=$(id -un)"\ns=%s\n' "$scheduler"
    for s in $schedulers; do
        printf 'if [ -z "$s" ] && command -v %s >/dev/null 2>&1; then s=%s; fi\n' "$("${s}_program")" "$s"
    done
    echo 'echo "GPUJ scheduler=$s"'
    for s in $schedulers; do
        printf 'if [ "$s" = %s ]; then %s 2>/dev/null | grep "|" | sed "s/^/GPUJ session=/"; fi\n' \
            "$s" "$("${s}_sessions")"
    done
}

log_in() {
    local hello earlier line
    info "connecting to $target (you may be asked to log in once)"
    remote true </dev/null >/dev/null \
        || fail "could not connect to $target with ssh (check the host name, your key and 'ssh $target' by hand)"
    hello=$(remote_sh "$(hello_script)" </dev/null 2>/dev/null || true)
    cluster_user=$(field "$hello" user)
    [[ -n "$cluster_user" ]] || fail "the login shell on $target did not answer (try 'ssh $target' by hand)"
    if [[ -z "$scheduler" ]]; then
        scheduler=$(field "$hello" scheduler)
        [[ -n "$scheduler" ]] || fail "neither sbatch (Slurm) nor bsub (LSF) found on $target; use --scheduler if they are set up by a module"
        info "scheduler: $scheduler"
    fi
    earlier=$(printf '%s\n' "$hello" | sed -n 's/^GPUJ session=//p' | tr '|' ' ' | grep -v "^$attach " || true)
    # A session of yours already runs (this script was killed, or runs in
    # another window): attach to it rather than book a second GPU.
    if [[ -z "$attach" && $new == 0 ]]; then
        attach=$(printf '%s\n' "$earlier" | awk '$2 == "RUNNING" || $2 == "RUN" { print $1 }' | sort -n | tail -n1)
        if [[ -n "$attach" ]]; then
            info "your session job $attach already runs: attaching to it instead of booking a second one (--new starts another)"
            earlier=$(printf '%s\n' "$earlier" | grep -v "^$attach " || true)
        fi
    fi
    if [[ -n "$earlier" ]]; then
        info "your earlier sessions still in the queue (job state elapsed node):"
        while read -r line; do info "  $line"; done <<< "$earlier"
        info "  reconnect with '$prog --attach JOBID $target'; stop one with '$("${scheduler}_cancel" JOBID)' there"
    fi
}

# ----------------------------------------------------------------- submit
# What the login shell runs to submit: token, job script and submission travel
# on its stdin, so nothing secret is on a command line. The submit command's
# answer is also kept in a file, so that a Ctrl-C arriving before it reaches
# this machine still finds the job to cancel.
submission_script() {
    local files="$state_dir/session-$sid"
    echo "set -e; umask 077; cd ~; mkdir -p $state_dir; chmod 700 $state_dir"
    # printf is a bash builtin: the token appears in no process's arguments.
    # No newline: JupyterLab takes the file's whole content as the token.
    echo "printf %s '$token' > $files.token"
    echo "cat > $files.job <<'GPUJ_JOB_EOF'"
    job_script "$scheduler" "$sid"
    echo "GPUJ_JOB_EOF"
    echo "set +e; $("${scheduler}_submit" "$files.job") > $files.submitted 2>&1; rc=\$?"
    echo "sed 's/^/GPUJ submitted=/' $files.submitted; cat $files.submitted >&2; exit \$rc"
}

job_id_in_answer() { sed -n "$("${scheduler}_job_id_sed")" | tail -n1; } # stdin: the answer

submit_job() {
    local out reply
    if have openssl; then
        token=$(openssl rand -hex 24)
    else
        token=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
    fi
    [[ ${#token} -ge 32 ]] || fail "could not generate a random token (need openssl or python3)"
    sid=$(date +%s)-$$-$RANDOM$RANDOM # names the session's files; random, no part of the token
    session_tag="gpuj-$sid" # as job_script (run in a subshell below) writes it
    own_job=1
    out=$(submission_script | remote 'bash -l -s' 2>&1) || true
    reply=$(printf '%s\n' "$out" | sed -n 's/^GPUJ submitted=//p')
    job_id=$(printf '%s\n' "$reply" | job_id_in_answer)
    if [[ -z "$job_id" ]]; then find_lost_submission "$reply"; fi
    job_known=1
    info "submitted job $job_id; waiting for it to start (up to ${timeout}s)"
}

# The submission failed, or its answer was lost (a stalled controller may still
# create the job once it resumes): the scheduler is asked for a job with this
# session's tag until it answers clearly twice, for at most cancel_window
# seconds. A job found is this session's; none means the job was refused.
find_lost_submission() { # $1 = the scheduler's answer to the submission
    local said deadline=$(( $(now) + cancel_window )) clear=0
    said=$(printf '%s\n' "$1" | sed '/^[[:space:]]*$/d; s/^/    /')
    info "$scheduler did not confirm the submission; checking whether the job exists"
    while (( $(now) < deadline )); do
        ask_login_node "$("${scheduler}_find" "$session_tag")"
        # LSF's bjobs says "not found", with an error status, when it lists no job.
        if [[ $answer_rc == 0 ]] || { [[ -n $answer_rc ]] && "${scheduler}_forgot" "$answer"; }; then
            job_id=$(printf '%s\n' "$answer" | sed -n "s/^\([0-9][0-9]*\)|$session_tag\$/\1/p" | head -n1)
            if [[ -n "$job_id" ]]; then info "the job was created after all"; return 0; fi
            clear=$((clear + 1))
            (( clear < 2 )) || fail "the job was not accepted by $scheduler; it said:"$'\n'"${said:-    (nothing)}"
        fi
        nap 2
    done
    fail "$scheduler did not answer for ${cancel_window}s, so no session was started. Try again later: a job of this attempt that the scheduler creates after all ends by itself at once. It said:"$'\n'"${said:-    (nothing)}"
}

# ------------------------------------------------------------ the polling loop
# One loop for both phases of a session: "waiting" (until the job's JupyterLab
# listens) and "running" (until the job ends or the user stops it). Each turn
# runs the phase's cheap check, <phase>_check (a file read, the tunnel's state;
# true when the phase is over), and at most every sched_interval asks the
# scheduler, then <phase>_heard. No clear answer means "unknown": nothing is
# touched, and the next question waits twice as long (at most 300 s).
poll_job() { # $1 = phase, $2 = when the scheduler was last asked
    local phase=$1 last_sched=$2 sched_wait=$sched_interval
    while :; do
        if "${phase}_check"; then return 0; fi
        if (( $(now) - last_sched >= sched_wait )); then
            last_sched=$(now)
            ask_scheduler "$job_id"
            case $sched_state in
                GONE) job_over "$sched_final" ;;
                PENDING|RUNNING) sched_wait=$sched_interval; "${phase}_heard" ;;
                *) info "no clear answer from $scheduler about job $job_id${sched_raw:+ ($sched_raw)}; asking again later, the job is not touched"
                   sched_wait=$(( sched_wait * 2 > 300 ? 300 : sched_wait * 2 )) ;;
            esac
        fi
        nap "$check_interval"
    done
}

# The job's status file, read without a login shell or the scheduler.
# Fails when the login node does not answer.
job_status() { remote "cat $state_dir/job-$job_id.status 2>/dev/null; true" </dev/null 2>/dev/null; }

waiting_check() { # true once JupyterLab listens: sets node, sock, lab_pid
    local status
    status=$(job_status) || status=""
    case "$(field "$status" state)" in
        running) node=$(field "$status" node) sock=$(field "$status" sock) lab_pid=$(field "$status" pid)
                 if [[ -n "$attach" ]]; then sid=$(field "$status" session)
                 elif [[ $(field "$status" start) =~ ^[0-9]+$ ]]; then
                     ends_at=$(( $(field "$status" start) + minutes * 60 ))
                 fi
                 return 0 ;;
        ended) job_over "" ;;
    esac
    if [[ -z "$attach" ]] && (( $(now) - wait_start >= timeout )); then
        stopping="not started within ${timeout}s"
        fail "job $job_id did not start within ${timeout}s (queue busy?); it is cancelled now. Try a longer --timeout, fewer resources or another --queue."
    fi
    return 1
}

waiting_heard() {
    local msg
    [[ $sched_state == PENDING ]] || return 0
    msg="job $job_id is waiting in the queue ($sched_reason); waited $(( $(now) - wait_start ))s"
    [[ $msg == "$last_shown" ]] || info "$msg"
    last_shown=$msg
    [[ -z "$attach" ]] || fail "job $job_id has not started yet; attach again when it runs"
}

# Reports how the job ended (the reason, the last lines of its log) and exits.
job_over() { # $1 = final scheduler state, or "" when the job itself said it ended
    local final=$1 try reason log
    job_id_done=$job_id
    job_id="" # nothing left to cancel
    close_tunnel
    # The job said it ended; the scheduler may still be finishing it (COMPLETING).
    for try in 1 2 3 4; do
        [[ -z "$final" ]] || break
        ask_scheduler "$job_id_done"
        final=$sched_final
        [[ -n "$final" || $try == 4 ]] || nap 2
    done
    if reason=$("${scheduler}_ended" "$final"); then
        info "$reason."
        exit 0
    fi
    info "$reason."
    log=$(remote_sh "tail -n 20 $state_dir/job-$job_id_done.out 2>/dev/null" </dev/null 2>/dev/null || true)
    [[ -z "$log" ]] || say "Last lines of ~/$state_dir/job-$job_id_done.out on $target:"$'\n'"$log"
    exit 1
}

# ------------------------------------------------------------------- stop
# Cancels the job, retrying while the scheduler does not answer. True when done.
cancel_job() {
    local deadline=$(( $(now) + cancel_window )) wait_s=2
    while :; do
        ask_login_node "$("${scheduler}_cancel" "$job_id")"
        if [[ $answer_rc == 0 ]] || "${scheduler}_forgot" "$answer"; then return 0; fi
        (( $(now) < deadline )) || return 1
        info "the scheduler did not answer the cancel request; retrying in ${wait_s}s"
        nap "$wait_s"
        wait_s=$(( wait_s * 2 > 30 ? 30 : wait_s * 2 ))
    done
}

cleanup() {
    local rc=$? files="$state_dir/session-$sid"
    # Nothing may interrupt the cleanup: not a second Ctrl-C, not the closed
    # terminal (HUP), not a reader that went away (PIPE), not a failed write.
    trap '' INT TERM HUP PIPE
    trap - EXIT
    set +e
    # A command may notice the closed terminal (an I/O error) before the HUP trap
    # runs: the terminal is still the reason, and the exit status says so.
    if (( on_terminal && rc != 129 )) && ! stty -g <&2 >/dev/null 2>&1; then
        rc=129 stopping="terminal closed"
    fi
    close_tunnel
    if [[ -n "$job_id" && -n "$attach" && ( $live == 0 || $second_window == 1 ) ]]; then
        info "detached: job $job_id is left running; attach again with '$prog --attach $job_id $target'"
    elif [[ -n "$job_id" ]]; then
        info "stopping: cancelling job $job_id${stopping:+ ($stopping)}"
        if cancel_job; then
            info "job $job_id cancelled"
        else
            info "could not cancel job $job_id: cancel it by hand on $target with '$("${scheduler}_cancel" "$job_id")'"
        fi
    elif [[ -n "$sid" && $own_job == 1 && $job_known == 0 ]]; then
        # Interrupted while submitting: cancel whatever job the answer names.
        info "stopping: cancelling the job submitted just now, if any"
        ask_login_node "cat $files.submitted"
        job_id=$(printf '%s\n' "$answer" | job_id_in_answer)
        if [[ -n "$job_id" ]]; then cancel_job; fi
    fi
    if [[ -n "$sid" && $own_job == 1 ]]; then
        remote_sh "rm -f $files.token $files.job $files.submitted" </dev/null >/dev/null 2>&1
    fi
    if [[ -n "${ctl_dir:-}" ]]; then
        "${ssh_base[@]}" -o "ControlPath=$ctl" -O exit "$target" >/dev/null 2>&1
        rm -rf "$ctl_dir"
    fi
    exit "$rc"
}

catch_signals() {
    on_terminal=0
    if [[ -t 2 ]]; then on_terminal=1; fi
    trap cleanup EXIT
    trap 'stopping="Ctrl-C"; exit 130' INT
    trap 'stopping="terminated"; exit 143' TERM
    trap 'stopping="terminal closed"; exit 129' HUP
    trap 'stopping="output closed"; exit 141' PIPE
}
