"""demos.grading.wire: what crosses from the student's kernel to the grader, and what cannot."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest

from demos.grading import wire


def test_plain_data_crosses_the_wire_unchanged() -> None:
    value = {
        "a": [1, 2.5, "x", None, True],
        "t": (1, 2),
        "arr": np.arange(6.0).reshape(2, 3),
        "s": np.float32(1.5),
        "nan": float("nan"),
    }
    back = wire.loads(wire.dumps(value))
    assert back["a"] == [1, 2.5, "x", None, True] and back["t"] == (1, 2)
    assert back["arr"].dtype == np.float64 and back["arr"].shape == (2, 3)
    assert isinstance(back["s"], np.float32) and np.isnan(back["nan"])


def test_objects_that_are_not_data_arrive_opaque_and_equal_nothing() -> None:
    class Always:
        def __eq__(self, other: object) -> bool:
            return True

    class Zero(float):
        def __sub__(self, other: object) -> float:
            return 0.0

    back = wire.loads(wire.dumps({"always": Always(), "zero": Zero(3.0)}))
    assert isinstance(back["always"], wire.Opaque) and back["always"] != back["always"]
    assert isinstance(back["zero"], wire.Opaque)
    assert isinstance(wire.loads(wire.dumps({"$make": "forged"})), wire.Opaque)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"$ndarray": "AAAA", "$kind": "host"}),
        json.dumps({"$ndarray": "", "$kind": "pickle"}),
        json.dumps({"$float": "__import__('os')"}),
        "[" * 100 + "]" * 100,
    ],
)
def test_malformed_replies_are_refused(text: str) -> None:
    with pytest.raises(wire.WireError):
        wire.loads(text)


def test_object_arrays_never_cross() -> None:

    buffer = io.BytesIO()
    np.save(buffer, np.array([object()], dtype=object), allow_pickle=True)
    text = json.dumps({"$ndarray": base64.b64encode(buffer.getvalue()).decode(), "$kind": "host"})
    with pytest.raises(wire.WireError):
        wire.loads(text)
