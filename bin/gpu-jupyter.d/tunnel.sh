# shellcheck shell=bash
# gpu-jupyter's tunnel: laptop -> login node -> the job's Unix socket on the
# compute node. Sourced by bin/gpu-jupyter.
#
# The tunnel is a second SSH connection, to the node itself, through the login
# connection (like ProxyJump), with the cluster user name. It runs a loop on the
# node that ends with JupyterLab, so the tunnel closes when the job ends even if
# gpu-jupyter was killed. It forwards a Unix socket in the private
# ~/.gpu-jupyter/tunnels/ (never a TCP port) to the job's socket; the local
# port belongs to the port keeper (relay.py), which holds it for the whole
# session and relays to that socket: a dying ssh never frees the port, so no
# other user of this machine can take it while a browser tab still sends the
# token to it. Each tunnel's files share a name, job-<id>.<launcher pid>.*:
# the control socket (.ctl), the forwarded socket (.sock), ssh's messages
# (.log) and the info file (.info): "jobid target port launcher-pid keeper-pid
# login-control-folder" (its ssh goes through that login connection). A tunnel
# whose launcher is gone is an orphan.

tunnel_alive() { [[ -n "$tunnel" ]] && "${ssh_base[@]}" -S "$tunnel.ctl" -O check x >/dev/null 2>&1; }
close_master() { # the ssh connection only; the port keeper stays
    "${ssh_base[@]}" -S "$1.ctl" -O exit x >/dev/null 2>&1 || true
    rm -f "$1.ctl"
}
close_tunnel() {
    if [[ -n "$tunnel" ]]; then
        close_master "$tunnel"
        rm -f "$tunnel.info" "$tunnel.log" "$tunnel.sock" # the keeper ends without its info file
        if [[ -n "$keeper_pid" ]]; then kill "$keeper_pid" 2>/dev/null || true; fi
        tunnel="" keeper_pid=""
    fi
}

# Tunnels left by a killed run: the one of the job being attached to is taken
# over (its port keeper too: the port is never free in between), others are
# named with the commands to use or close them. A tunnel of the attached job
# whose launcher still runs makes this run a second window: Ctrl-C only detaches.
handle_orphan_tunnels() {
    local info_file o_job o_target o_port o_pid o_keeper o_login o_base o_used
    for info_file in "$local_dir"/job-*.info; do
        [[ -f "$info_file" ]] || continue
        o_job="" o_target="" o_port="" o_pid="" o_keeper="" o_login=""
        read -r o_job o_target o_port o_pid o_keeper o_login < "$info_file" || true
        o_base=${info_file%.info}
        if kill -0 "${o_pid:-0}" 2>/dev/null; then # its launcher still runs
            if [[ "$o_job" == "$attach" && "$o_target" == "$target" ]]; then second_window=1; fi
            continue
        fi
        o_used=0 # its ssh still runs, or its port keeper still holds the port
        if "${ssh_base[@]}" -S "$o_base.ctl" -O check x >/dev/null 2>&1 \
            || { [[ ${o_keeper:-0} != 0 ]] && kill -0 "$o_keeper" 2>/dev/null; }; then
            o_used=1
        fi
        if (( ! o_used )); then
            rm -f "$o_base".*
        elif [[ "$o_job" == "$attach" && "$o_target" == "$target" && -z "$tunnel" ]]; then
            info "taking over the tunnel of job $o_job left by a killed run (port $o_port)"
            # Ours from now on, before its ssh is closed: the keeper keeps the port.
            echo "$o_job $o_target $o_port $$ $o_keeper $ctl_dir" > "$info_file"
            close_master "$o_base"
            # The killed run's login connection carried only that tunnel.
            "${ssh_base[@]}" -o "ControlPath=$o_login/master" -O exit x >/dev/null 2>&1 || true
            tunnel=$o_base keeper_pid=$o_keeper
            if [[ ${keeper_pid:-0} == 0 ]]; then keeper_pid=""; fi
            if [[ -n "$local_port" && "$local_port" != "$o_port" ]]; then
                info "note: it served port $o_port; --local-port $local_port is used now"
                close_tunnel
            else
                local_port=$o_port
            fi
        else
            info "an orphaned tunnel from a killed run still serves 127.0.0.1:$o_port for job $o_job on $o_target;"
            info "  take it over with '$prog --attach $o_job $o_target', or close it with 'ssh -S $o_base.ctl -O exit x; rm $o_base.info'"
        fi
    done
}

# Control folders of killed runs in the temporary folder (after handle_orphan_tunnels):
# their login connection is closed, unless an orphaned tunnel still goes through it.
clean_stale_control_folders() {
    local folder pid
    for folder in "${TMPDIR:-/tmp}"/gpuj.*; do
        [[ -d "$folder" && -O "$folder" && "$folder" != "$ctl_dir" ]] || continue
        pid=$(cat "$folder/launcher" 2>/dev/null || true)
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then continue; fi
        if grep -qsF " $folder" "$local_dir"/job-*.info; then continue; fi
        "${ssh_base[@]}" -o "ControlPath=$folder/master" -O exit x >/dev/null 2>&1 || true
        rm -rf "$folder"
    done
}

# True when an authenticated API request through our tunnel gets 200.
api_ok() { # $1 = local port
    local code url="http://127.0.0.1:$1/api/status?no_track_activity=1"
    if have curl; then
        code=$(printf 'header = "Authorization: token %s"\n' "$token" \
            | curl -s -m 10 -o /dev/null -w '%{http_code}' -K - "$url" 2>/dev/null || true)
    else
        code=$(printf '%s' "$token" | python3 -c '
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "token " + sys.stdin.read()})
try:
    print(urllib.request.urlopen(req, timeout=10).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print(0)' "$url" 2>/dev/null || true)
    fi
    [[ $code == 200 ]]
}

# Starts the tunnel's ssh and its forward of $tunnel.sock to the job's socket.
# Status 2: the node's host key changed (trying again cannot help).
open_tunnel() {
    local proxy
    proxy="$(printf '%q ' "${ssh_base[@]}" -o "ControlPath=$ctl")-W %h:%p $(printf %q "$target")"
    if ! ssh-keygen -F "$node" >/dev/null 2>&1; then
        info "first connection to $node: its host key is accepted and remembered (StrictHostKeyChecking=accept-new)"
    fi
    : > "$tunnel.log"
    rm -f "$tunnel.ctl" # a stale socket of a killed tunnel would disable the new one
    if ! "${ssh_base[@]}" -f -M -S "$tunnel.ctl" -o ControlPersist=no -o ExitOnForwardFailure=yes \
        -o StrictHostKeyChecking=accept-new -o ServerAliveInterval=15 -o ServerAliveCountMax=3 \
        -o StreamLocalBindUnlink=yes -o ConnectTimeout=30 -o "ProxyCommand=$proxy" -l "$cluster_user" "$node" \
        "while kill -0 $lab_pid 2>/dev/null && test -S $state_dir/job-$job_id.sock; do sleep 10; done; echo GPUJ tunnel=job-ended" \
        </dev/null >>"$tunnel.log" 2>&1; then
        grep -v '^GPUJ\|^Quota' "$tunnel.log" >&2 2>/dev/null
        if grep -q 'IDENTIFICATION HAS CHANGED' "$tunnel.log" 2>/dev/null; then return 2; fi
        return 1
    fi
    grep -i 'host key\|known hosts' "$tunnel.log" >&2 2>/dev/null || true
    if ! "${ssh_base[@]}" -S "$tunnel.ctl" -O forward -L "$tunnel.sock:$sock" x >/dev/null 2>&1; then
        info "the tunnel could not forward the job's socket"
        close_master "$tunnel"
        return 1
    fi
}

# The port keeper, started once per session on the first free port from $1
# (or 8888): the port is then this session's until it ends. With $2 = exact,
# only port $1 will do (a session's address never changes).
keep_port() {
    local try last
    if [[ -n "$keeper_pid" ]] && kill -0 "$keeper_pid" 2>/dev/null; then return 0; fi
    if [[ -n "$1" ]]; then try=$1; else try=8888; fi
    last=$(( try + 100 ))
    while (( try < last && try <= 65535 )); do
        echo "$job_id $target $try $$ 0 $ctl_dir" > "$tunnel.info"
        if keeper_pid=$(python3 "$parts/relay.py" "$try" "$tunnel.sock" "$tunnel.info" </dev/null 2>/dev/null); then
            local_port=$try
            echo "$job_id $target $local_port $$ $keeper_pid $ctl_dir" > "$tunnel.info"
            return 0
        fi
        keeper_pid=""
        [[ ${2:-} != exact ]] || return 1
        [[ -z "$1" || $try != "$1" ]] || info "local port $try is taken; using another"
        try=$(( try + 1 ))
    done
    info "no free local port in ${1:-8888}-$((last - 1))"
    return 1
}

# Opens the tunnel (three tries) and waits until JupyterLab answers through it.
start_tunnel() {
    local tries=0 ready=0 rc
    if [[ -z "$tunnel" ]]; then tunnel="$local_dir/job-$job_id.$$"; fi
    keep_port "$local_port" || fail "no local port for the session"
    while :; do
        rc=0
        open_tunnel || rc=$?
        (( rc != 0 )) || break
        if (( rc == 2 )); then
            fail "the host key of $node changed since your last connection (message above, printed once): ask your cluster's support; once they confirm it, remove the old key with 'ssh-keygen -R $node' and start again"
        fi
        tries=$((tries + 1))
        (( tries < 3 )) || fail "the SSH tunnel to $node failed (see the ssh message above)"
        info "the SSH tunnel to $node failed; trying again"
        nap $((tries * 3))
    done
    for _ in $(seq 30); do
        if api_ok "$local_port"; then ready=1; break; fi
        tunnel_alive || break
        nap 1
    done
    (( ready )) || fail "JupyterLab on $node did not answer an authenticated request through the tunnel"
}

# The running phase of poll_job: the tunnel's state is checked locally; a closed
# tunnel is reopened with a growing pause. The port keeper holds the port all
# along: the address and the open browser tabs stay the same.
running_check() {
    local status
    if tunnel_alive; then return 1; fi
    if status=$(job_status); then
        if [[ "$(field "$status" state)" == ended ]]; then job_over ""; fi
        info "the tunnel closed; reconnecting in ${backoff}s"
    else
        info "the cluster does not answer (network down or laptop asleep?); retrying in ${backoff}s"
    fi
    nap "$backoff"
    backoff=$(( backoff * 2 > 60 ? 60 : backoff * 2 ))
    # The keeper never ends before the session; if it was killed, only its own port will do.
    keep_port "$local_port" exact \
        || fail "the port keeper of 127.0.0.1:$local_port was killed and the port is taken now: close the browser tab"
    if open_tunnel && api_ok "$local_port"; then
        backoff=2
        info "tunnel reconnected: $url"
    fi
    return 1 # the session ends through job_over or a signal, never here
}

# The running phase's scheduler turn: the job's warning before its run-time
# limit (the scheduler's signal, written to the status file by the job) is
# passed on once.
running_heard() {
    local ends left
    (( warned == 0 )) || return 0
    ends=$(field "$(job_status)" ends)
    [[ -n "$ends" ]] || return 0
    warned=1
    left=$(( (ends - $(now) + 59) / 60 ))
    if (( left <= 1 )); then left="1 minute"; else left="$left minutes"; fi
    { echo "$prog: your session ends in $left: save your work (File > Save All)"; } 2>/dev/null || true
}
