"""Importing a library whose C++ start-up lines would show as a red box in a notebook."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any


def quiet_import(name: str) -> Any:
    """Import *name* (e.g. ``"tensorflow"``) with C-level stderr silenced while it loads.

    TensorFlow's C++ start-up lines (oneDNN notices, absl's "before InitializeLog"
    warning) are written before its log level applies, so no environment variable
    hides them all, and a notebook shows them in a red box. Python errors still
    propagate: an import that fails raises as usual.
    """
    if name in sys.modules:
        return sys.modules[name]
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        return importlib.import_module(name)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
