"""Kernels over Unix sockets whose paths stay short.

The students' mode runs kernels with ``KernelManager.transport = "ipc"``: each
kernel's sockets are files in the user's runtime folder, so students starting
kernels at once on one node never pick the same TCP port. A socket's path has at
most 107 bytes; where the runtime folder is deep (a long home path), the sockets
go to a private folder in /tmp (mode 700, one per server) instead.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

from jupyter_server.services.kernels.kernelmanager import ServerKernelManager
from traitlets import default

LIMIT = 100  # bytes for the path before the socket's "-<number>"
_short: list[str] = []


def _short_folder() -> str:
    if not _short:
        _short.append(tempfile.mkdtemp(prefix="jk-"))
        atexit.register(shutil.rmtree, _short[0], True)
    return _short[0]


class CourseKernelManager(ServerKernelManager):
    @default("ip")
    def _ip_default(self) -> str:
        ip = super()._ip_default()
        if self.transport == "ipc" and len(os.fsencode(ip)) > LIMIT:
            ip = os.path.join(_short_folder(), os.path.basename(ip))
        return ip
