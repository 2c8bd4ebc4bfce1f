"""Numba's performance advice, and one switch that silences it.

Numba warns about small grids ("Grid size ... low occupancy") and about host
arrays passed to kernels. The course launches tiny grids from host arrays on
purpose (in checks, in graded tests, in the simulator-sized lessons), and a
warning printed to stderr in a graded cell costs all of its points under
nbgrader. The warnings come in two families of classes: Numba's own
(``numba.core.errors``, used by the CUDA simulator) and numba-cuda's
(``numba.cuda.core.errors``, used by compiled kernels on a real GPU), so a
filter on one family alone passes on a CPU grader and fails on a GPU grader.
"""

from __future__ import annotations

import importlib
import re
import warnings

#: Terminal colour codes: Numba prints its advice in bold, which a notebook shows as garbage.
_COLOUR_CODES = re.compile(r"\x1b\[[0-9;]*m")


def advice_classes() -> tuple[type[Warning], ...]:
    """Every class of Numba performance advice that this installation can raise."""
    found: list[type[Warning]] = []
    for module_name in ("numba.core.errors", "numba.cuda.core.errors"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # numba-cuda absent: only Numba's own classes exist
            continue
        category = getattr(module, "NumbaPerformanceWarning", None)
        if category is not None and category not in found:
            found.append(category)
    return tuple(found)


def silence_advice() -> None:
    """Hide Numba's performance advice for the rest of this process (errors still show)."""
    for category in advice_classes():
        warnings.filterwarnings("ignore", category=category)


def plain_advice(advice: warnings.WarningMessage) -> str:
    """One recorded warning as a line of plain text ("NumbaPerformanceWarning: ..."), no colours."""
    text = _COLOUR_CODES.sub("", str(advice.message)).strip()
    return f"{advice.category.__name__}: {text}"
