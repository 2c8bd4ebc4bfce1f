"""The sandboxed kernel runner every runner test uses (see :mod:`sandbox_box`)."""

from sandbox_box import sandboxed_runner

__all__ = ["sandboxed_runner"]
