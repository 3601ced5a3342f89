"""On-disk cache of built datasets (``.npz`` under ``cache_dir("corpora")``).

A dataset is stored as plain arrays -- the CSC parts of ``counts``, the contexts padded with ``-1``,
the label lists as unicode arrays, plus any extra arrays a builder returns -- and read back with
``allow_pickle=False``. The file name holds a hash of the builder name, its parameters, the data
root and :data:`CACHE_VERSION` (bump it whenever a recipe changes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ntputils import paths
from ntputils.data.ntp import NTPData, from_counts
from ntputils.hashing import digest

CACHE_VERSION = 1


def cache_path(name: str, params: Mapping[str, Any]) -> Path:
    """File that caches builder ``name`` called with ``params``: ``<name>-<key>.npz``, the key being
    :func:`ntputils.hashing.digest` (16 hex digits) of the name, the parameters, the data root and
    :data:`CACHE_VERSION`.
    """
    key = digest({"name": name, "params": params, "data": str(paths.data_dir()), "v": CACHE_VERSION})
    return paths.cache_dir("corpora") / f"{name}-{key}.npz"


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
    if use_cache and path.exists():
        with np.load(path, allow_pickle=False) as f:
            return _unpack({k: f[k] for k in f.files})
    data, extra = build()
    if use_cache:
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(tmp, **_pack(data, extra))
        tmp.replace(path)
    return data, dict(extra)


def cached_arrays(name: str, params: Mapping[str, Any], build: Callable[[], Mapping[str, np.ndarray]],
                  use_cache: bool = True) -> dict[str, np.ndarray]:
    """Return ``build()`` (named arrays, e.g. an encoded corpus), from the cache when present."""
    path = cache_path(name, params)
    if use_cache and path.exists():
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    arrays = {k: np.asarray(v) for k, v in build().items()}
    if use_cache:
        tmp = path.with_name(path.name + ".tmp.npz")
        np.savez_compressed(tmp, **arrays)
        tmp.replace(path)
    return arrays
