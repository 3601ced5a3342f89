"""Tests of ntputils.hashing.digest, the one hashing helper of the package's caches."""

from __future__ import annotations

import numpy as np
import pytest

from ntputils.hashing import digest


def test_digest_is_stable_and_sensitive():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    key = digest(a, {"x": 1, "y": [1, 2]}, "s")
    assert len(key) == 16 and key == digest(a.copy(), {"y": [1, 2], "x": 1}, "s")  # dict order is irrelevant
    assert len(digest(a, length=None)) == 64 and digest(a, length=24) == digest(a, length=None)[:24]
    others = [
        digest(a.reshape(3, 2), {"x": 1, "y": [1, 2]}, "s"),  # shape
        digest(a.astype(np.int32), {"x": 1, "y": [1, 2]}, "s"),  # dtype
        digest(a + (a == 5), {"x": 1, "y": [1, 2]}, "s"),  # one entry
        digest(a, {"x": 2, "y": [1, 2]}, "s"),  # one option
        digest({"x": 1, "y": [1, 2]}, a, "s"),  # part order
        digest(a, {"x": 1, "y": [1, 2]}, "s", ""),  # an extra (empty) part
    ]
    assert key not in others and len(set(others)) == len(others)
    assert digest("ab", "c") != digest("a", "bc") and digest("1") != digest(1) != digest(b"1")
    assert digest(np.asfortranarray(a)) == digest(a)  # values, not memory layout


def test_digest_rejects_object_arrays_and_bad_lengths():
    with pytest.raises(TypeError, match="object arrays"):
        digest(np.array([object()]))
    with pytest.raises(ValueError, match="length"):
        digest("x", length=0)
