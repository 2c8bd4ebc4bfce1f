"""``python -m demos info``: what this machine offers, printed for a person or as JSON.

The command line only: :func:`demos.hardware.report` finds GPUs, the simulator and the
libraries, and :mod:`demos.machine_report` words them. The manifest
(``demos/course.toml``, ``[[commands]] words = ["info"]``) names this module.
"""

from __future__ import annotations

import argparse
import json

from demos.hardware import report
from demos.machine_report import format_report, gpu_warnings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--no-tensorflow", action="store_true", help="skip importing TensorFlow (faster)"
    )


def main(args: argparse.Namespace) -> int:
    """Print the report (with its warnings); 0."""
    info = report(include_tensorflow=not args.no_tensorflow)
    if args.json:
        info["warnings"] = gpu_warnings(info)
        print(json.dumps(info, indent=2))
    else:
        print(format_report(info))
    return 0
