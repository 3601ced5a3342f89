"""Glue for the network chapters: train a model on NTP data and compare it with the data's geometry.

Paper A (Figs. 1, 3, 6) trains a transformer (and, in the camera-ready, an LSTM) on NTP data and
compares its context embeddings ``H`` (d x m) and word embeddings ``W`` (V x d) with what the data
predicts: the proxy ``S~ = (I - 11^T/V) S`` and the factors ``H^mm, W^mm`` of the max-margin logits
``L^mm``. This module holds the steps every such chapter repeats:

* :func:`train_and_compare` -- build a model (:func:`ntputils.training.models.build_model`), train it with
  :func:`ntputils.training.loop.train_ntp` with a checkpoint directory keyed by the run (so a rerun with
  unchanged parameters reloads the finished run instead of training), and compute the paper A
  Fig. 6 series (:func:`ntputils.analysis.convergence.convergence_curves`) against a
  :class:`~ntputils.analysis.convergence.GeometryReference`;
* :func:`geometry_reference` -- ``S~``, ``L^in`` and (optionally) ``L^mm`` with its SVD factors,
  ``L^mm`` from the disk-cached solver (:func:`ntputils.geometry.max_margin_cached`);
* :func:`support_group_selection` -- the contexts of the paper's Fig. 3 heatmaps (groups of
  contexts with identical next-token supports, the most frequent ones of each group);
* :func:`history_subset` -- a :class:`~ntputils.training.history.History` restricted to some of its
  snapshot contexts, so the same metrics and plots apply to any subset.

The mean cosine similarity of embeddings within and between the support groups (subspace collapse in
one number) is :func:`ntputils.analysis.metrics.group_contrast`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ntputils.analysis.convergence import ConvergenceCurves, GeometryReference, convergence_curves
from ntputils.data.ntp import NTPData
from ntputils.geometry import max_margin_cached
from ntputils.hashing import digest
from ntputils.paths import cache_dir
from ntputils.training.history import History
from ntputils.training.loop import train_ntp
from ntputils.training.models import NTPModel, build_model

#: arguments of :func:`ntputils.training.loop.train_ntp` that a run configuration may set
TRAIN_ARGUMENTS = ("steps", "lr", "weight_decay", "optimizer", "betas", "schedule", "milestones", "gamma",
                   "warmup_steps", "batch_size", "reduction", "dtype", "amp", "log_steps", "snapshot_steps",
                   "snapshot_contexts", "eval_batch_size", "checkpoint_every")


# ---------------------------------------------------------------------------------------------
# fingerprints and run directories
# ---------------------------------------------------------------------------------------------
def data_fingerprint(data: NTPData) -> str:
    """Key (16 hex digits, :func:`ntputils.hashing.digest`) of the NTP data: the V x m count matrix
    ``counts[z, j] = n pi_j p_{j,z}`` (Paper A Sec. 2; Paper B Sec. 3.1) and the context token ids.

    The CSC parts enter as int64, so the key does not depend on the index dtype of ``counts``.
    """
    counts = data.counts
    csc = (np.ascontiguousarray(a, dtype=np.int64) for a in (counts.indptr, counts.indices, counts.data))
    return digest(list(counts.shape), *csc, [list(c) for c in data.contexts])


def run_key(kind: str, seed: int, model_config: Mapping[str, Any], train_config: Mapping[str, Any],
            data: NTPData, num_threads: int | None = None) -> str:
    """A stable key (16 hex digits, :func:`ntputils.hashing.digest`) of one training run: model kind/config,
    seed, training arguments, data (:func:`data_fingerprint`) and the torch CPU thread count it trains with
    (``num_threads``, default torch's current setting: with mini-batches it changes the result); it names
    the run's checkpoint directory.
    """
    threads = num_threads or torch.get_num_threads()
    return digest({"kind": kind, "seed": seed, "model": dict(model_config), "train": dict(train_config),
                   "data": data_fingerprint(data), "num_threads": threads})


def run_directory(label: str, key: str) -> Path:
    """``cache_dir("runs", "<label>-<key>")``: where the checkpoints of one run live."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label) or "run"
    return cache_dir("runs", f"{safe}-{key}")


# ---------------------------------------------------------------------------------------------
# the data-determined targets
# ---------------------------------------------------------------------------------------------
def geometry_reference(data: NTPData, theory: bool = True, solver: str = "fast",
                       **solver_opts) -> GeometryReference:
    """``S~``, ``L^in`` and, with ``theory``, ``L^mm`` and its factors ``U Sigma^{1/2}``, ``Sigma^{1/2} V^T``.

    ``L^mm`` solves the NTP-SVM in logit space (Paper A, Eq. (NTP-SVM), Sec. 4) and is cached on disk per
    support pattern (:func:`ntputils.geometry.max_margin_cached`); ``solver="fast"`` is the certified
    first-order solver of :mod:`ntputils.geometry.maxmargin_admm` (seconds for V x m = 64 x 35,644),
    ``"cvxpy"`` the SCS reference. The solver's info dict is stored in ``reference.info["lmm"]``.
    """
    if not theory:
        return GeometryReference.from_data(data)
    opts = {"progress": False, **solver_opts} if solver == "fast" else dict(solver_opts)
    L_mm, info = max_margin_cached(data.S, solver=solver, **opts)
    ref = GeometryReference.from_data(data, L_mm=L_mm)
    ref.info["lmm"] = info
    return ref


# ---------------------------------------------------------------------------------------------
# training a network and computing its Fig. 6 series
# ---------------------------------------------------------------------------------------------
@dataclass
class NetworkRun:
    """One trained network: its history, Fig. 6 series, the model and what the run cost.

    ``cpu_seconds`` / ``wall_seconds`` are the process and wall time of *this call* (near 0 when the
    finished run was reloaded, ``cached=True``); ``train_seconds`` is the training wall time recorded
    in the checkpoint (``history.meta["seconds"]``), whichever call did the training.
    """

    label: str
    kind: str
    model: NTPModel
    history: History
    series: ConvergenceCurves | None
    cpu_seconds: float
    wall_seconds: float
    cached: bool
    checkpoint_dir: Path | None
    config: dict = field(default_factory=dict)

    @property
    def train_seconds(self) -> float:
        return float(self.history.meta.get("seconds", float("nan")))

    @property
    def final(self) -> dict[str, float]:
        """Final logged scalars and, if computed, the final value of every Fig. 6 curve."""
        out = dict(self.history.final)
        if self.series is not None:
            out.update(self.series.final)
        return out


def _vocab_sizes(data: NTPData) -> dict[str, int]:
    """``vocab_size`` (next tokens V) and ``context_vocab_size`` (ids used inside the contexts)."""
    if data.context_vocab is not None:
        ctx = len(data.context_vocab)
    else:
        ctx = max(data.V, 1 + max(max(c) for c in data.contexts))
    return {"vocab_size": data.V, "context_vocab_size": ctx}


def train_and_compare(kind: str, data: NTPData, ref: GeometryReference | None = None, *,
                      model_config: Mapping[str, Any], train_config: Mapping[str, Any], seed: int = 0,
                      label: str = "", device: str = "auto", num_threads: int | None = None,
                      cache: bool = True, progress: bool = True) -> NetworkRun:
    """Train ``kind`` ("transformer" | "lstm") on ``data`` and compute its paper A Fig. 6 series.

    Parameters
    ----------
    model_config: fields of the model's config (``d``, ``n_layers``, ``n_heads`` ...); ``vocab_size``
        and ``context_vocab_size`` are taken from ``data``.
    train_config: arguments of :func:`ntputils.training.loop.train_ntp` (names in :data:`TRAIN_ARGUMENTS`).
    ref: the targets for :func:`ntputils.analysis.convergence.convergence_curves` (``None``: no series).
    cache: keep checkpoints under ``cache_dir("runs", "<label>-<key>")`` with the key of
        :func:`run_key`; a finished run with the same key is reloaded instead of retrained, an
        interrupted one is resumed (bit-identical on CPU).
    device, num_threads, progress: passed to :func:`ntputils.training.loop.train_ntp`. ``num_threads``
        (default: torch's current setting) is part of the key: with mini-batches (``batch_size``) two
        torch threads gave a final CE that differs from one thread's in the third decimal (each
        reproducible), so a run cached under one thread count is not reloaded under another.
    """
    unknown = sorted(set(train_config) - set(TRAIN_ARGUMENTS))
    if unknown:
        raise ValueError(f"unknown training argument(s) {unknown}; valid: {list(TRAIN_ARGUMENTS)}")
    if "steps" not in train_config:
        raise ValueError("train_config needs 'steps'")
    for reserved in ("vocab_size", "context_vocab_size"):
        if reserved in model_config:
            raise ValueError(f"model_config must not set {reserved!r}: it is taken from the data")
    mconf = {**_vocab_sizes(data), **model_config}
    key = run_key(kind, seed, mconf, train_config, data, num_threads)
    ckpt = run_directory(label or kind, key) if cache else None
    t0, c0 = time.perf_counter(), time.process_time()
    model = build_model(kind, seed=seed, **mconf)
    hist = train_ntp(model, data, seed=seed, device=device, checkpoint_dir=ckpt, num_threads=num_threads,
                     progress=progress, **train_config)
    series = convergence_curves(hist, ref, label=label) if ref is not None else None
    cached = int(hist.meta.get("resumed_from", 0)) >= int(train_config["steps"])
    return NetworkRun(label=label or kind, kind=kind, model=model, history=hist, series=series,
                      cpu_seconds=time.process_time() - c0, wall_seconds=time.perf_counter() - t0,
                      cached=cached, checkpoint_dir=ckpt,
                      config={"model": mconf, "train": dict(train_config), "seed": seed, "key": key})


# ---------------------------------------------------------------------------------------------
# subsets of contexts
# ---------------------------------------------------------------------------------------------
def history_subset(hist: History, columns: Sequence[int] | np.ndarray) -> History:
    """The history with ``H`` (and ``L = W H``) restricted to some of its snapshot contexts.

    ``columns`` are indices of the *full data* (``0..m-1``); they must all be among the history's
    snapshot contexts (``hist.meta["snapshot_contexts"]``, default all). The result records them in
    ``meta["snapshot_contexts"]``, so :func:`~ntputils.analysis.convergence.convergence_curves`
    restricts the targets to the same contexts. Scalars (CE, norms over all contexts) are shared unchanged.
    """
    cols = np.asarray(columns, dtype=np.int64)
    if cols.ndim != 1 or cols.size == 0:
        raise ValueError("columns must be a non-empty 1-D list of context indices")
    if not hist.snap_steps:
        raise ValueError("history has no snapshots")
    have = hist.meta.get("snapshot_contexts")
    have = np.arange(hist.H[0].shape[1]) if have is None else np.asarray(have, dtype=np.int64)
    position = {int(j): p for p, j in enumerate(have)}
    missing = [int(j) for j in cols if int(j) not in position]
    if missing:
        raise ValueError(f"contexts {missing[:5]}{'...' if len(missing) > 5 else ''} are not among the "
                         "history's snapshot contexts")
    pos = np.array([position[int(j)] for j in cols])
    out = History(steps=list(hist.steps), scalars={k: list(v) for k, v in hist.scalars.items()},
                  meta={**hist.meta, "snapshot_contexts": cols.tolist()})
    for step, W, H in zip(hist.snap_steps, hist.W, hist.H, strict=True):
        out.snapshot(step, W, H[:, pos])
    return out


@dataclass(frozen=True)
class ContextSelection:
    """Contexts chosen for a heatmap: ``columns`` (into the data), their support ``group`` id
    (0, 0, ..., 1, 1, ...), per group its ``support_size`` and ``group_size`` (number of contexts of
    the data with that support), and each chosen context's count ``n pi_j``."""

    columns: np.ndarray
    group: np.ndarray
    support_size: np.ndarray
    group_size: np.ndarray
    count: np.ndarray

    @property
    def n_groups(self) -> int:
        return int(self.group.max()) + 1 if self.group.size else 0


def support_group_selection(data: NTPData, n_contexts: int = 100, per_group: int = 10,
                            min_group: int = 10) -> ContextSelection:
    """The contexts of paper A's Fig. 3 heatmaps (authors' legacy ``graph_heatmaps.py``, ``sup_size``).

    Contexts are grouped by their support set ``S_j``; groups are visited by *decreasing* support
    size (ties: the group whose first context appears last comes first -- the authors' reversed
    stable sort); groups with fewer than ``min_group`` contexts are skipped; each visited group
    contributes its ``per_group`` most frequent contexts (largest count ``n pi_j``; ties: later
    column first, again as the reversed stable sort) until ``n_contexts`` are collected (the last
    group may overshoot, as in the authors' loop). Contexts of one group are adjacent, so
    ``corr(S~)`` of the selection is block diagonal up to the overlaps between supports.
    """
    if min(n_contexts, per_group, min_group) < 1:
        raise ValueError("n_contexts, per_group and min_group must be positive")
    patterns = data.S.toarray().T > 0  # m x V, one row per context
    _, first, inverse, sizes = np.unique(patterns, axis=0, return_index=True, return_inverse=True,
                                         return_counts=True)
    inverse = np.asarray(inverse).ravel()
    group_support = patterns[first].sum(axis=1)
    counts = data.context_counts
    # visit groups by decreasing support size, ties by decreasing first appearance
    visit = np.lexsort((-first, -group_support))
    columns, group, sizes_out, members_out = [], [], [], []
    for g in visit:
        if sum(len(c) for c in columns) >= n_contexts:
            break
        if sizes[g] < min_group:
            continue
        members = np.flatnonzero(inverse == g)
        top = members[np.lexsort((-members, -counts[members]))][:per_group]
        columns.append(top)
        group.append(np.full(top.size, len(columns) - 1))
        sizes_out.append(group_support[g])
        members_out.append(sizes[g])
    if not columns:
        raise ValueError(f"no support set is shared by >= {min_group} contexts; lower min_group")
    cols = np.concatenate(columns)
    return ContextSelection(columns=cols, group=np.concatenate(group), support_size=np.asarray(sizes_out),
                            group_size=np.asarray(members_out), count=counts[cols])
