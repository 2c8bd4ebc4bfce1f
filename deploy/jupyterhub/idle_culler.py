"""jupyterhub-idle-culler that ends with the hub that started it.

JupyterHub starts the culler as a managed service and stops it when the hub
stops; a hub that crashes (or is killed) cannot, and the next hub would start a
second culler beside the first. This wrapper asks Linux to end the culler when
its parent dies (``PR_SET_PDEATHSIG``) and, where that is not available, checks
every few seconds whether its parent is still the hub that started it. The
arguments are jupyterhub-idle-culler's.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time


def end_with_parent() -> None:
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the hub was gone before the above took effect
        os._exit(0)

    def watch() -> None:
        while True:
            time.sleep(2)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, daemon=True, name="hub-watch").start()


if __name__ == "__main__":
    end_with_parent()
    from jupyterhub_idle_culler import main

    sys.argv[0] = "jupyterhub-idle-culler"
    main()
