"""Numba's performance advice is silenced in both warning families (simulator and compiled kernels).

A filter on ``numba.core.errors`` alone let numba-cuda's own warning class reach
stderr on a GPU grader, which cost correct solutions all their points there.
"""

from __future__ import annotations

import importlib
import warnings

import pytest

from demos.numba_advice import advice_classes, silence_advice


@pytest.mark.parametrize("module_name", ["numba.core.errors", "numba.cuda.core.errors"])
def test_every_family_of_advice_is_silenced(module_name: str) -> None:
    try:
        category = importlib.import_module(module_name).NumbaPerformanceWarning
    except ImportError:
        pytest.skip(f"{module_name} is not installed here")
    assert category in advice_classes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        silence_advice()
        warnings.warn(category("Grid size 1 will likely result in GPU under-utilization"))
    assert caught == []


def test_advice_is_shown_as_plain_text_without_colour_codes() -> None:
    import warnings

    from demos.numba_advice import advice_classes, plain_advice

    category = advice_classes()[0]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warnings.warn(category("\x1b[1mHost array used in CUDA kernel\x1b[0m"))
    assert plain_advice(seen[0]) == f"{category.__name__}: Host array used in CUDA kernel"
