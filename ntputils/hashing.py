"""The package's one hashing helper: stable hex keys for on-disk caches and run directories.

Every cache of the package (``L^mm`` per support pattern, built corpora, trained runs and their
checkpoints, the fallback language model) names its files by :func:`digest` of what determines
the content. A bottom module: it imports no other part of :mod:`ntputils`.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

__all__ = ["digest"]


def _encode(part: Any) -> tuple[str, bytes]:
    """``(type tag, payload bytes)`` of one part (see :func:`digest`)."""
    if isinstance(part, np.ndarray):
        if part.dtype.hasobject:
            raise TypeError("digest: object arrays have no stable bytes; pass a numeric or str array")
        arr = np.ascontiguousarray(part)
        return f"ndarray:{arr.dtype.str}:{arr.shape}", arr.tobytes()
    if isinstance(part, bytes | bytearray | memoryview):
        return "bytes", bytes(part)
    if isinstance(part, str):
        return "str", part.encode()
    return "json", json.dumps(part, sort_keys=True, default=str).encode()


def digest(*parts: Any, length: int | None = 16) -> str:
    """SHA-256 hex digest of ``parts`` (its first ``length`` hex digits; ``None`` = all 64).

    Each part is fed to one SHA-256 stream as a header (type tag and payload length) followed by
    its payload, so the parts cannot run into each other:

    * ``numpy.ndarray``: dtype, shape and the C-ordered raw bytes (object arrays are refused);
    * ``bytes`` / ``str``: the raw bytes / the UTF-8 text;
    * anything else: ``json.dumps(part, sort_keys=True, default=str)`` (dict order does not matter,
      non-JSON values such as dtypes or paths enter through ``str``).

    Equal inputs give equal keys on every machine and Python session; any change of an array entry,
    dtype, shape, option value or the part order gives another key (up to SHA-256 collisions).

    :mod:`ntputils.data.corpora.cache`, :mod:`ntputils.training.loop`, :mod:`ntputils.training.pretrained`,
    :mod:`ntputils.analysis.network_runs`).
    """
    if length is not None and not 1 <= length <= 64:
        raise ValueError(f"length must lie in [1, 64] or be None, got {length}")
    h = hashlib.sha256()
    for part in parts:
        tag, payload = _encode(part)
        h.update(f"{tag}:{len(payload)}\n".encode())
        h.update(payload)
    return h.hexdigest() if length is None else h.hexdigest()[:length]
