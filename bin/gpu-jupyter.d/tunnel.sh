# shellcheck shell=bash
# gpu-jupyter's tunnel: laptop -> login node -> the job's Unix socket on the
# compute node. Sourced by bin/gpu-jupyter.
#
# The tunnel is a second SSH connection, to the node itself, through the login
# connection (like ProxyJump), with the cluster user name. It runs a loop on the
# node that ends with JupyterLab, so the tunnel closes when the job ends even if
# gpu-jupyter was killed. Ports are added with "-O forward": the bind is atomic,
# so two starts can never share a port. Each tunnel has, next to its control
# socket, an info file "jobid target port launcher-pid"; a tunnel whose launcher
# is gone is an orphan.

tunnel_alive() { [[ -n "$tunnel_ctl" ]] && "${ssh_base[@]}" -S "$tunnel_ctl" -O check x >/dev/null 2>&1; }
close_tunnel() {
    if [[ -n "$tunnel_ctl" ]]; then
        "${ssh_base[@]}" -S "$tunnel_ctl" -O exit x >/dev/null 2>&1 || true
        rm -f "$tunnel_ctl" "$tunnel_info" "${tunnel_log:-}"
    fi
}

# Tunnels left by a killed run: the one of the job being attached to is closed
# (its port is taken over), others are named with the commands to use or close them.
handle_orphan_tunnels() {
    local info_file o_job o_target o_port o_pid o_ctl
    orphan_port=""
    for info_file in "$local_dir"/job-*.info; do
        [[ -f "$info_file" ]] || continue
        read -r o_job o_target o_port o_pid < "$info_file" || true
        o_ctl=${info_file%.info}.ctl
        if kill -0 "${o_pid:-0}" 2>/dev/null; then continue; fi # its launcher still runs
        if ! "${ssh_base[@]}" -S "$o_ctl" -O check x >/dev/null 2>&1; then
            rm -f "$o_ctl" "$info_file"
        elif [[ "$o_job" == "$attach" && "$o_target" == "$target" ]]; then
            info "closing the orphaned tunnel of job $o_job (port $o_port); it is replaced now"
            "${ssh_base[@]}" -S "$o_ctl" -O exit x >/dev/null 2>&1 || true
            rm -f "$o_ctl" "$info_file"
            [[ -n "$local_port" ]] || orphan_port=$o_port
        else
            info "an orphaned tunnel from a killed run still serves 127.0.0.1:$o_port for job $o_job on $o_target;"
            info "  take it over with '$prog --attach $o_job $o_target', or close it with 'ssh -S $o_ctl -O exit x'"
        fi
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

open_tunnel() { # $1 = preferred port or ""; sets local_port
    local port=$1 last try proxy
    proxy="$(printf '%q ' "${ssh_base[@]}" -o "ControlPath=$ctl")-W %h:%p $(printf %q "$target")"
    if ! ssh-keygen -F "$node" >/dev/null 2>&1; then
        info "first connection to $node: its host key is accepted and remembered (StrictHostKeyChecking=accept-new)"
    fi
    : > "$tunnel_log"
    rm -f "$tunnel_ctl" # a stale socket of a killed tunnel would disable the new one
    "${ssh_base[@]}" -f -M -S "$tunnel_ctl" -o ControlPersist=no -o ExitOnForwardFailure=yes \
        -o StrictHostKeyChecking=accept-new -o ServerAliveInterval=15 -o ServerAliveCountMax=3 \
        -o ConnectTimeout=30 -o "ProxyCommand=$proxy" -l "$cluster_user" "$node" \
        "while kill -0 $lab_pid 2>/dev/null && test -S $state_dir/job-$job_id.sock; do sleep 10; done" \
        </dev/null >>"$tunnel_log" 2>&1 || { grep -v '^GPUJ\|^Quota' "$tunnel_log" >&2 2>/dev/null; return 1; }
    grep -i 'host key\|known hosts' "$tunnel_log" >&2 2>/dev/null || true
    if [[ -n "$port" ]]; then try=$port; else try=8888; fi
    last=$(( try + 100 ))
    while (( try < last && try <= 65535 )); do
        if "${ssh_base[@]}" -S "$tunnel_ctl" -O forward -L "127.0.0.1:$try:$sock" x >/dev/null 2>&1; then
            local_port=$try
            echo "$job_id $target $local_port $$" > "$tunnel_info"
            return 0
        fi
        [[ -z "$1" || $try != "$1" ]] || info "local port $try is taken now; using another"
        try=$(( try + 1 ))
    done
    info "no free local port in ${port:-8888}-$((last - 1))"
    close_tunnel
    return 1
}

# Opens the tunnel (three tries) and waits until JupyterLab answers through it.
start_tunnel() {
    local want_port=${local_port:-$orphan_port} tries=0 ready=0
    tunnel_ctl="$local_dir/job-$job_id.ctl"
    tunnel_info="$local_dir/job-$job_id.info"
    tunnel_log="$local_dir/job-$job_id.log"
    until open_tunnel "$want_port"; do
        tries=$((tries + 1))
        (( tries < 3 )) || fail "the SSH tunnel to $node failed (see the ssh message above)"
        info "the SSH tunnel to $node failed; trying again"
        nap $((tries * 3))
    done
    if [[ -n "$want_port" && "$local_port" != "$want_port" && -n "$attach" ]]; then
        info "note: the port changed from $want_port to $local_port"
    fi
    for _ in $(seq 30); do
        if api_ok "$local_port"; then ready=1; break; fi
        tunnel_alive || break
        nap 1
    done
    (( ready )) || fail "JupyterLab on $node did not answer an authenticated request through the tunnel"
}

# The running phase of poll_job: the tunnel's state is checked locally; a closed
# tunnel is reopened with a growing pause, on the same port when possible.
running_check() {
    local old_port status
    if tunnel_alive; then return 1; fi
    if status=$(job_status); then
        if [[ "$(field "$status" state)" == ended ]]; then job_over ""; fi
        info "the tunnel closed; reconnecting in ${backoff}s"
    else
        info "the cluster does not answer (network down or laptop asleep?); retrying in ${backoff}s"
    fi
    nap "$backoff"
    backoff=$(( backoff * 2 > 60 ? 60 : backoff * 2 ))
    old_port=$local_port
    if open_tunnel "$local_port" && api_ok "$local_port"; then
        backoff=2
        if [[ $old_port == "$local_port" ]]; then
            info "tunnel reconnected: $url"
        else
            url="http://127.0.0.1:$local_port/lab?token=$token"
            { echo "JupyterLab is ready again at a new address: $url"; } 2>/dev/null || true
        fi
    fi
    return 1 # the session ends through job_over or a signal, never here
}
running_heard() { :; }
