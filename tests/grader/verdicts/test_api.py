"""grader.verdicts.api: what the hidden tests' checks accept as a passing result."""

from __future__ import annotations

import numpy as np
import pytest

from demos.grading import wire
from grader.verdicts import api


def test_checks_accept_only_real_truth_values() -> None:
    api.check(True, "x")
    api.check(np.bool_(True), "x")
    for fake in (1, "yes", [1], wire.Opaque("Always")):
        with pytest.raises(api.GradingFailure):
            api.check(fake, "x")
    with pytest.raises(api.GradingFailure, match="not an array of numbers"):
        api.assert_close(wire.Opaque("Always"), np.zeros(3), "the result")
