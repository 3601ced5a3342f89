"""On-disk cache of built datasets (``.npz`` under ``cache_dir("corpora")``).

A dataset is stored as plain arrays -- the CSC parts of ``counts``, the contexts padded with ``-1``,
the label lists as unicode arrays, plus any extra arrays a builder returns -- and read back with
``allow_pickle=False``. The file name holds a hash of the builder name, its parameters, the
*content* of the corpus data files (:func:`ntputils.paths.data_digest`: editing a data file rebuilds,
moving the data folder does not) and :data:`CACHE_VERSION` (bump it whenever a recipe changes).

Every entry carries a checksum of its arrays (``__checksum__``). An entry that cannot be read
(truncated, not a zip), lacks arrays or does not match its checksum (garbled contents) is rebuilt
with a :class:`CacheWarning` naming the file and ``NTP_CACHE_DIR``; it never reaches a chapter.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ntputils import paths
from ntputils.data.ntp import NTPData, from_counts
from ntputils.hashing import digest

CACHE_VERSION = 2
CHECKSUM = "__checksum__"


class CacheWarning(UserWarning):
    """A cache entry did not verify and is recomputed."""


def cache_path(name: str, params: Mapping[str, Any]) -> Path:
    """File that caches builder ``name`` called with ``params``: ``<name>-<key>.npz``, the key being
    :func:`ntputils.hashing.digest` (16 hex digits) of the name, the parameters, the content digest
    of the corpus data files (:func:`ntputils.paths.data_digest`) and :data:`CACHE_VERSION`.
    """
    key = digest({"name": name, "params": params, "data": paths.data_digest(), "v": CACHE_VERSION})
    return paths.cache_dir("corpora") / f"{name}-{key}.npz"


def arrays_checksum(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 (64 hex digits) of named arrays: names, dtypes, shapes and bytes, in name order."""
    parts: list[Any] = []
    for k in sorted(arrays):
        parts += [k, np.asarray(arrays[k])]
    return digest(*parts, length=None)


def save_verified(path: Path, arrays: Mapping[str, np.ndarray], *, compress: bool = True) -> None:
    """Write ``arrays`` and their checksum to ``path`` atomically (temporary file, then rename).

    ``compress=False`` stores them uncompressed: for large float arrays (a training checkpoint) zlib saves
    little and costs seconds per save (measured: 2.4 s against 0.04 s for 50 MB of weights)."""
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.npz")
    save = np.savez_compressed if compress else np.savez
    try:
        save(tmp, **arrays, **{CHECKSUM: np.asarray(arrays_checksum(arrays))})
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def load_verified(path: Path, required: tuple[str, ...] = ()) -> dict[str, np.ndarray] | None:
    """The arrays of a cache entry, or ``None`` (with a :class:`CacheWarning` naming the file) when it is
    missing, unreadable, lacks one of ``required`` or does not match its checksum."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except Exception as err:  # noqa: BLE001 - BadZipFile, EOFError, ValueError, OSError, zlib.error...
        problem = f"cannot be read ({type(err).__name__}: {err})"
    else:
        stored = arrays.pop(CHECKSUM, None)
        missing = [k for k in required if k not in arrays]
        if stored is None:
            problem = "has no checksum (written by an older version)"
        elif missing:
            problem = f"lacks the arrays {missing}"
        elif str(stored) != arrays_checksum(arrays):
            problem = "does not match its checksum (garbled or edited)"
        else:
            return arrays
    warnings.warn(f"cache entry {path} (under {paths.CACHE_ENV}={path.parent.parent}) {problem}; "
                  "recomputing it", CacheWarning, stacklevel=3)
    return None


def _pack(data: NTPData, extra: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    counts = sp.csc_array(data.counts)
    width = max((len(c) for c in data.contexts), default=0)
    ctx = np.full((len(data.contexts), max(width, 1)), -1, dtype=np.int64)
    for j, c in enumerate(data.contexts):
        ctx[j, : len(c)] = c
    arrays: dict[str, np.ndarray] = {
        "counts_data": counts.data, "counts_indices": counts.indices, "counts_indptr": counts.indptr,
        "counts_shape": np.asarray(counts.shape), "contexts": ctx,
    }
    for label in ("vocab", "context_vocab"):
        words = getattr(data, label)
        if words is not None:
            arrays[label] = np.asarray(words, dtype=str)
    for key, value in extra.items():
        arrays[f"extra_{key}"] = np.asarray(value)
    return arrays


def _unpack(arrays: Mapping[str, np.ndarray]) -> tuple[NTPData, dict[str, np.ndarray]]:
    counts = sp.csc_array((arrays["counts_data"], arrays["counts_indices"], arrays["counts_indptr"]),
                          shape=tuple(int(s) for s in arrays["counts_shape"]))
    contexts = [tuple(int(t) for t in row[row >= 0]) for row in arrays["contexts"]]
    vocab = arrays["vocab"].tolist() if "vocab" in arrays else None
    context_vocab = arrays["context_vocab"].tolist() if "context_vocab" in arrays else None
    extra = {k[len("extra_"):]: arrays[k] for k in arrays if k.startswith("extra_")}
    return from_counts(counts, contexts, vocab, context_vocab), extra


def cached(name: str, params: Mapping[str, Any],
           build: Callable[[], tuple[NTPData, Mapping[str, np.ndarray]]],
           use_cache: bool = True) -> tuple[NTPData, dict[str, np.ndarray]]:
    """Return ``build()`` (an ``NTPData`` and extra arrays), from the cache when present."""
    path = cache_path(name, params)
    if use_cache:
        arrays = load_verified(path, required=("counts_data", "counts_indices", "counts_indptr",
                                               "counts_shape", "contexts"))
        if arrays is not None:
            return _unpack(arrays)
    data, extra = build()
    if use_cache:
        save_verified(path, _pack(data, extra))
    return data, dict(extra)


def cached_arrays(name: str, params: Mapping[str, Any], build: Callable[[], Mapping[str, np.ndarray]],
                  use_cache: bool = True) -> dict[str, np.ndarray]:
    """Return ``build()`` (named arrays, e.g. an encoded corpus), from the cache when present."""
    path = cache_path(name, params)
    if use_cache:
        cached_ = load_verified(path)
        if cached_ is not None:
            return cached_
    arrays = {k: np.asarray(v) for k, v in build().items()}
    if use_cache:
        save_verified(path, arrays)
    return arrays
