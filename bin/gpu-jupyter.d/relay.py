"""gpu-jupyter's port keeper (run with python3 on the laptop by tunnel.sh).

Usage: python3 relay.py PORT SOCKET INFO_FILE

Holds 127.0.0.1:PORT for the whole session and relays each connection to
SOCKET, the Unix socket in the private ~/.gpu-jupyter/tunnels/ that the SSH
tunnel forwards to the job's JupyterLab. When the tunnel's ssh dies (network
drop, laptop asleep) only SOCKET stops answering: the port stays held here, so
no other user of this machine can take it while a browser tab still sends the
token, cookie and XSRF token to it. A connection that arrives meanwhile is
closed at once; the launcher reopens the tunnel on the same SOCKET.

Binds the port first (exit status 1 when it is taken), then forks: the parent
prints the keeper's process id and exits 0. The keeper ends when INFO_FILE is
gone (the launcher stopped the session), or when the launcher named in it
(its fourth word) is gone and SOCKET no longer answers, if the tunnel's log
(INFO_FILE's .log) says that the job ended, or else once no browser tab has
knocked for QUIET seconds: after a network drop the job may still run, and an
open tab that still sends the token keeps the port held.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time

QUIET = 600
last_knock = time.monotonic()


def pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    try:
        target.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def relay(client: socket.socket, path: str) -> None:
    with client, socket.socket(socket.AF_UNIX) as upstream:
        try:
            upstream.connect(path)
        except OSError:
            return  # the tunnel is down: the connection is closed, nothing is sent anywhere
        back = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        back.start()
        pump(client, upstream)
        back.join()


def launcher_alive(info: str) -> bool | None:
    """None when the info file is gone; else whether the launcher it names runs."""
    try:
        with open(info) as f:
            words = f.read().split()
    except OSError:
        return None
    try:
        os.kill(int(words[3]), 0)
    except (IndexError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        pass
    return True


def job_ended(log: str) -> bool:
    """The tunnel's remote loop writes this line when JupyterLab is gone."""
    try:
        with open(log) as f:
            return "GPUJ tunnel=job-ended" in f.read()
    except OSError:
        return False


def socket_answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX) as probe:
        probe.settimeout(10)
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def watch(path: str, info: str) -> None:
    while True:
        time.sleep(5)
        alive = launcher_alive(info)
        if alive is None:
            os._exit(0)
        if not alive and not socket_answers(path):
            quiet = time.monotonic() - last_knock > QUIET
            if quiet or job_ended(info[: -len(".info")] + ".log"):
                os._exit(0)


def main() -> None:
    port, path, info = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
    except OSError:
        sys.exit(1)
    if pid := os.fork():
        print(pid)
        sys.exit(0)
    os.setsid()  # Ctrl-C at the terminal is the launcher's to handle, not ours
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    threading.Thread(target=watch, args=(path, info), daemon=True).start()
    global last_knock
    while True:
        client, _ = listener.accept()
        last_knock = time.monotonic()
        threading.Thread(target=relay, args=(client, path), daemon=True).start()


if __name__ == "__main__":
    main()
