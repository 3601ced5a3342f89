"""The one training loop for networks on NTP data (transformer, LSTM) and on classification data (CNN).

Objective (paper A eq. (2), paper B eq. (3)): on the ``m`` *distinct* contexts with soft labels
``p_j`` and context probabilities ``pi_j``,

    CE(theta) = - sum_j pi_j sum_z p_{j,z} log softmax(W h_j)_z  =  - sum_{j,z} Q_{j,z} log softmax(l_j)_z,

with ``Q_{j,z} = pi_j p_{j,z} = counts[z, j] / n``. This equals the authors' sample-summed CE over the
``n`` (context, next-token) pairs divided by ``n`` (``reduction="sum"`` multiplies it back by ``n`` for
the gradient, as their code does; with Adam only the ``eps`` term notices). It is bounded below by
the empirical entropy ``H`` (:attr:`ntputils.data.NTPData.entropy`). A mini-batch ``B`` of contexts
uses the unbiased estimate ``(m / |B|) sum_{j in B} ...``; batches walk through a fresh seeded
permutation of the contexts every epoch.

At the log steps (default: log-spaced, :func:`ntputils.training.history.log_spaced_steps`) the loop evaluates
the full objective and the Frobenius norms of ``W``, ``H`` and ``L = W H`` on all contexts, and at the
snapshot steps it stores ``W`` (V x d), ``H`` (d x m) and ``L`` in a
:class:`~ntputils.training.history.History`
-- the format of :mod:`ntputils.training.ufm`, so the same plots and metrics apply.

Checkpoints (model, optimizer, RNG state, step, history) go to ``checkpoint_dir``; calling again with
the same configuration resumes from the last one and reproduces the uninterrupted run bit for bit on
CPU (tested); a finished run is returned from its final checkpoint without training. They are written
through the project's checksummed cache (:func:`ntputils.data.corpora.cache.save_verified`: plain arrays
plus a sha256 of them, a temporary file renamed into place): a truncated, unreadable or altered
checkpoint is trained again from the start with a :class:`~ntputils.data.corpora.cache.CacheWarning`
naming it, and a failed load never touches the model.
"""

from __future__ import annotations

import bisect
import copy
import errno
import json
import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm  # the text bar: tqdm.auto warns "IProgress not found" in a kernel without ipywidgets

from ntputils import tracing
from ntputils.data.corpora.cache import CacheWarning, load_verified, save_verified
from ntputils.device import resolve_device
from ntputils.hashing import digest
from ntputils.training.history import History, log_spaced_steps
from ntputils.training.models.common import NTPModel, left_pad

SCHEDULES = ("constant", "multistep", "cosine")
CHECKPOINT_NAME = "checkpoint.npz"
STATE_TREE = "state_tree"  # the JSON structure of a checkpoint; its tensors are the other arrays
MAX_DENSE_TARGETS = 2**28  # entries of the dense m x V target matrix Q (2 GiB in float64)


@dataclass
class TrainingSet:
    """Tensors of one training set: inputs, ``Q = pi_j p_j`` (m x V), entropy ``H``, sample count ``n``.

    The weights and soft labels of the NTP objective, Paper B, Eq. (1).
    """

    inputs: torch.Tensor
    Q: torch.Tensor
    entropy: float
    n: int | None = None
    labels: torch.Tensor | None = None

    @property
    def m(self) -> int:
        return self.inputs.shape[0]

    @property
    def V(self) -> int:
        return self.Q.shape[1]


def training_set(model: NTPModel, data) -> TrainingSet:
    """Turn ``data`` into a :class:`TrainingSet` for ``model``.

    ``data`` is an :class:`ntputils.data.NTPData` (contexts left-padded with ``model.pad_id`` when
    their lengths differ), or a tuple ``(inputs, targets)`` / ``(inputs, targets, pi)`` where
    ``targets`` is ``[m, V]`` soft labels (rows sum to 1) or ``[m]`` class labels and ``pi`` the
    context weights (default uniform ``1/m``).

    The NTP objective of Paper B, Eq. (1).
    """
    if hasattr(data, "counts") and hasattr(data, "contexts"):
        pad_id = getattr(model, "pad_id", None)
        if pad_id is None:
            raise ValueError(f"{type(model).__name__} takes no token contexts (no pad_id); "
                             "pass (inputs, targets)")
        if data.m * data.V > MAX_DENSE_TARGETS:
            raise ValueError(f"m x V = {data.m} x {data.V} is too large for dense targets; "
                             f"subset the contexts (NTPData.subset) below {MAX_DENSE_TARGETS:.0e} entries")
        Q = torch.as_tensor(np.asarray(data.counts.T.todense(), dtype=np.float64) / data.n)
        return TrainingSet(left_pad(data.contexts, pad_id), Q, float(data.entropy), int(data.n))
    if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
        raise ValueError("data must be an NTPData or a tuple (inputs, targets) / (inputs, targets, pi)")
    inputs, targets = torch.as_tensor(data[0]), torch.as_tensor(data[1])
    m = inputs.shape[0]
    if m == 0:
        raise ValueError("empty training set: inputs has no rows")
    labels = None
    if targets.ndim == 1:
        if targets.dtype.is_floating_point or targets.shape[0] != m:
            raise ValueError(f"class labels must be an integer vector of length m={m}, got {targets.dtype} "
                             f"{tuple(targets.shape)}")
        labels = targets.long()
        V = model.output_weight().shape[0]
        if int(labels.min()) < 0 or int(labels.max()) >= V:
            raise ValueError(f"labels must lie in [0, {V}), got [{int(labels.min())}, {int(labels.max())}]")
        targets = F.one_hot(labels, V).double()
    if targets.ndim != 2 or targets.shape[0] != m:
        raise ValueError(f"shape mismatch: targets {tuple(targets.shape)} for {m} inputs "
                         "(expected [m, V] soft labels or [m] class labels)")
    targets = targets.double()
    if bool((targets < 0).any()) or not torch.allclose(targets.sum(1), torch.ones(m, dtype=torch.float64)):
        raise ValueError("soft targets must be nonnegative with rows summing to 1")
    uniform = torch.full((m,), 1.0 / m, dtype=torch.float64)
    pi = torch.as_tensor(data[2]).double() if len(data) == 3 else uniform
    if pi.shape != (m,) or bool((pi < 0).any()) or abs(float(pi.sum()) - 1) > 1e-8:
        raise ValueError(f"pi must be a probability vector of length m={m}")
    Q = pi[:, None] * targets
    positive = targets > 0
    entropy = float(-(Q[positive] * targets[positive].log()).sum()) + 0.0
    return TrainingSet(inputs, Q, entropy, None, labels)


def lr_factor(update: int, *, schedule: str | Callable[[int], float], steps: int,
              milestones: Sequence[int] = (), gamma: float = 1.0, warmup_steps: int = 0) -> float:
    """Learning-rate multiplier of the ``update``-th optimizer step (0-based).

    ``"multistep"``: ``gamma ** #{milestones <= update}`` (PyTorch ``MultiStepLR`` stepped once per
    update, the authors' x0.4 every 5000 steps); ``"cosine"``: ``(1 + cos(pi t)) / 2`` over the
    steps after warm-up; ``"constant"``: 1; or any callable. A linear warm-up over ``warmup_steps``
    multiplies all of them.
    """
    warm = min(1.0, (update + 1) / warmup_steps) if warmup_steps > 0 else 1.0
    if callable(schedule):
        return warm * float(schedule(update))
    if schedule == "constant":
        return warm
    if schedule == "multistep":
        return warm * gamma ** bisect.bisect_right(sorted(milestones), update)
    if schedule == "cosine":
        span = max(1, steps - warmup_steps)
        t = min(1.0, max(0.0, (update - warmup_steps) / span))
        return warm * 0.5 * (1.0 + math.cos(math.pi * t))
    raise ValueError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES} or a callable")


def _steps_list(spec: int | Sequence[int] | None, steps: int, default: list[int]) -> list[int]:
    if spec is None:
        return default
    if isinstance(spec, int):
        return log_spaced_steps(steps, spec)
    out = sorted({int(s) for s in spec})
    if out and (out[0] < 0 or out[-1] > steps):
        raise ValueError(f"log/snapshot steps must lie in [0, {steps}], got {out[0]}..{out[-1]}")
    return out


def _fingerprint(*tensors: torch.Tensor) -> str:
    """Full SHA-256 (:func:`ntputils.hashing.digest`) of the tensors' dtypes, shapes and values, in order."""
    return digest(*(t.detach().cpu().contiguous().numpy() for t in tensors), length=None)


@contextmanager
def deterministic(enabled: bool = True):
    """Temporarily ``torch.use_deterministic_algorithms(True, warn_only=True)``; restore the previous mode."""
    before = torch.are_deterministic_algorithms_enabled()
    warn = torch.is_deterministic_algorithms_warn_only_enabled()
    if enabled:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn)


def _evaluate(model: NTPModel, ts: TrainingSet, snap_cols: torch.Tensor | None, chunk: int):
    """Full-data CE (float64), squared norms of H and L, accuracy, predictions, H columns ``snap_cols``."""
    ce, h2, l2 = 0.0, 0.0, 0.0
    preds, h_keep = [], []
    keep = None
    if snap_cols is not None:
        keep = torch.zeros(ts.m, dtype=torch.bool, device=ts.inputs.device)
        keep[snap_cols.to(keep.device)] = True
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for start in range(0, ts.m, chunk):
            h = model.context_embeddings(ts.inputs[start:start + chunk])
            logits = model.output(h)
            logp = torch.log_softmax(logits.double(), dim=1)
            ce -= float((ts.Q[start:start + chunk].double() * logp).sum())
            h2 += float(h.double().pow(2).sum())
            l2 += float(logits.double().pow(2).sum())
            if ts.labels is not None:
                preds.append(logits.argmax(1).cpu())
            if keep is not None:
                h_keep.append(h[keep[start:start + chunk]].double().cpu())
    model.train(was_training)
    H = None
    if keep is not None:  # rows came in increasing context index; put them in the order of snap_cols
        sorted_cols = torch.unique(snap_cols)
        H = torch.cat(h_keep)[torch.searchsorted(sorted_cols, snap_cols)].T.numpy()
    pred = torch.cat(preds) if preds else None
    accuracy = float((pred == ts.labels).double().mean()) if pred is not None else None
    return ce, h2, l2, accuracy, pred, H


def confusion_matrix(labels: np.ndarray | torch.Tensor, preds: np.ndarray | torch.Tensor, k: int
                     ) -> np.ndarray:
    """Confusion counts ``C[..., a, b]`` = #inputs of true class ``a`` predicted as ``b`` (rows true,
    columns predicted; paper B sec. 4.4, Figs. 3 and 9).

    ``labels`` has shape ``(n,)``; ``preds`` has shape ``(..., n)`` (a stack of predictions, e.g. one row per
    training snapshot, gives a stack of matrices ``(..., k, k)``). CPU tensors and arrays are accepted.
    The one confusion counter of the package: the training loop records it at snapshot steps, and
    :mod:`ntputils.analysis.confusion` re-exports it.
    """
    true = np.asarray(labels, dtype=np.intp)
    pred = np.asarray(preds, dtype=np.intp)
    if pred.shape[-1] != true.shape[0] or true.ndim != 1:
        raise ValueError(f"shape mismatch: true {true.shape} vs predictions {pred.shape}")
    if true.size and (min(true.min(), pred.min()) < 0 or max(true.max(), pred.max()) >= k):
        raise ValueError(f"class indices must lie in [0, {k})")
    flat = pred.reshape(-1, true.size)
    codes = true * k + flat + (np.arange(flat.shape[0]) * k * k)[:, None]
    counts = np.bincount(codes.ravel(), minlength=flat.shape[0] * k * k)
    return counts.reshape(pred.shape[:-1] + (k, k))


class TrainingCodeChanged(ValueError):
    """A checkpoint written by other training code than this one: resuming it would mix two codes,
    reloading it would show the other code's result as this code's."""


def training_code() -> dict[str, str]:
    """Digest of every function and class of the training code -- this loop, :mod:`~ntputils.training.history`
    and the models (``training/models/*.py``) -- normalized as the runner's fingerprints are
    (:func:`ntputils.tracing.code_digests`: a docstring or a comment does not count).

    Every checkpoint stores it; a checkpoint whose stored digests differ is refused
    (:class:`TrainingCodeChanged`), and a run that reloads a checkpoint instead of training counts this
    code as run (:func:`ntputils.tracing.note`): a table made from reloaded runs goes stale when the
    training code changes, like one made from runs that trained.
    """
    models = sorted((tracing.PACKAGE_DIR / "training" / "models").glob("*.py"))
    files = ["training/loop.py", "training/history.py", *(f"training/models/{f.name}" for f in models)]
    return tracing.code_digests(entry for rel in files for entry in tracing.file_entries(rel))


def _history_state(hist: History) -> dict:
    code = training_code()
    tracing.note(code)
    return {"steps": list(hist.steps), "scalars": {k: list(v) for k, v in hist.scalars.items()},
            "snap_steps": list(hist.snap_steps), "W": [torch.from_numpy(w) for w in hist.W],
            "H": [torch.from_numpy(h) for h in hist.H],
            "meta": json.dumps({**hist.meta, "training_code": code}, default=str)}


def _history_from_state(state: dict) -> History:
    meta = json.loads(state["meta"])
    stored, current = meta.pop("training_code", None), training_code()
    if stored is None:
        raise TrainingCodeChanged("the checkpoint does not record the training code that wrote it (it "
                                  "predates training_code()); delete it to train again, or pass resume=False")
    changed = sorted(k for k in stored.keys() | current.keys() if stored.get(k) != current.get(k))
    if changed:
        shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
        raise TrainingCodeChanged(f"the checkpoint was written by other training code ({shown} changed, "
                                  "added or removed since); delete it to train again, or pass resume=False")
    tracing.note(current)
    hist = History(meta=meta)
    hist.steps = list(state["steps"])
    hist.scalars = {k: list(v) for k, v in state["scalars"].items()}
    for s, w, h in zip(state["snap_steps"], state["W"], state["H"], strict=True):
        hist.snapshot(s, w.numpy(), h.numpy())
    return hist


def _encode_state(obj, arrays: dict[str, np.ndarray]):
    """JSON-able tree of a checkpoint state; every tensor goes to ``arrays`` (named ``t<i>``) and is
    replaced by ``{"tensor": name, "dtype": ...}``. Dicts, lists and tuples are tagged, so integer keys
    (an optimizer's parameter ids) and tuples (Adam's betas) come back as they were."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        name = f"t{len(arrays)}"
        try:
            arrays[name] = t.numpy()
        except TypeError:  # no numpy dtype (bfloat16): its bits, viewed back on reading
            arrays[name] = t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()]).numpy()
        return {"tensor": name, "dtype": str(t.dtype).removeprefix("torch.")}
    if isinstance(obj, dict):
        return {"dict": [[_encode_state(k, arrays), _encode_state(v, arrays)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        return {type(obj).__name__: [_encode_state(v, arrays) for v in obj]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"a checkpoint cannot hold a {type(obj).__name__}")


def _decode_state(tree, arrays: dict[str, np.ndarray]):
    """Inverse of :func:`_encode_state`."""
    if not isinstance(tree, dict):
        return tree
    if "tensor" in tree:
        t = torch.from_numpy(arrays[tree["tensor"]])
        dtype = getattr(torch, tree["dtype"])
        return t if t.dtype == dtype else t.view(dtype)
    if "dict" in tree:
        return {_decode_state(k, arrays): _decode_state(v, arrays) for k, v in tree["dict"]}
    if "tuple" in tree:
        return tuple(_decode_state(v, arrays) for v in tree["tuple"])
    return [_decode_state(v, arrays) for v in tree["list"]]


def read_checkpoint(path: Path) -> dict | None:
    """The checkpoint state :func:`train_ntp` saved at ``path``, or ``None`` when there is none -- or, with a
    :class:`~ntputils.data.corpora.cache.CacheWarning` naming it, when it cannot be read, does not match
    the checksum saved with it (truncated, altered) or does not decode."""
    arrays = load_verified(path, required=(STATE_TREE,))
    if arrays is None:
        return None
    try:
        state = _decode_state(json.loads(str(arrays.pop(STATE_TREE))), arrays)
        if not isinstance(state, dict):
            raise TypeError(f"the state is a {type(state).__name__}, not a dict")
        return state
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        warnings.warn(f"checkpoint {path} does not decode ({type(err).__name__}: {err}); training again",
                      CacheWarning, stacklevel=2)
        return None


def _save_checkpoint(path: Path, state: dict) -> None:
    """Write ``state`` to ``path`` with its checksum, atomically (a temporary file renamed into place, so an
    interruption or a full disk keeps the previous checkpoint); a full disk is an ``OSError`` (``ENOSPC``)
    naming ``path``."""
    arrays: dict[str, np.ndarray] = {}
    tree = json.dumps(_encode_state(state, arrays))
    try:
        save_verified(path, {**arrays, STATE_TREE: np.asarray(tree)}, compress=False)
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise OSError(err.errno, f"no space left on the device to write the checkpoint {path} ({err}); free "
                      "some space or pass another checkpoint_dir (the previous checkpoint there is kept)"
                      ) from err


def _resume(path: Path, config_hash: str, model: NTPModel,
            make_optimizer: Callable[[NTPModel], torch.optim.Optimizer]
            ) -> tuple[History, torch.optim.Optimizer, int, float, torch.Tensor] | None:
    """Load the checkpoint at ``path`` of the run ``config_hash`` into ``model``: ``(history, optimizer, step,
    elapsed seconds, CPU RNG state)``, or ``None`` (``model`` untouched) when there is none or it is damaged
    (a :class:`~ntputils.data.corpora.cache.CacheWarning` names it; the run trains again from the start).

    A checkpoint of another run (``config_hash`` differs) or of other training code is refused with an error
    naming it: retraining would overwrite a result this call does not own.
    """
    state = read_checkpoint(path)
    if state is None:
        return None
    if state.get("config_hash") != config_hash:
        raise ValueError(
            f"checkpoint {path} belongs to another run (hash {state.get('config_hash')} != {config_hash}: "
            "model, data, initial weights, training arguments or thread count differ); "
            "delete it, pass resume=False or use another checkpoint_dir"
        )
    probe = copy.deepcopy(model)  # a partial load must not leave ``model`` half overwritten
    try:
        hist = _history_from_state(state["history"])
        probe.load_state_dict(state["model"])
        opt = make_optimizer(probe)
        opt.load_state_dict(state["optimizer"])
        step, elapsed, rng = int(state["step"]), float(state["elapsed"]), state["rng_cpu"]
    except TrainingCodeChanged as err:
        raise TrainingCodeChanged(f"checkpoint {path}: {err}") from None
    except (KeyError, RuntimeError, TypeError, ValueError) as err:
        warnings.warn(f"checkpoint {path} does not fit the run ({type(err).__name__}: "
                      f"{' '.join(str(err).split())[:200]}); training again", CacheWarning, stacklevel=3)
        return None
    model.load_state_dict(probe.state_dict())
    opt_state = opt.state_dict()
    opt = make_optimizer(model)
    opt.load_state_dict(opt_state)
    return hist, opt, step, elapsed, rng


class _EpochBatches:
    """Mini-batches of context indices: epoch ``e`` walks a permutation seeded by ``(seed, e)``.

    Stateless in the step, so a resumed run draws exactly the batches of an uninterrupted one.
    """

    def __init__(self, m: int, batch_size: int | None, seed: int, device: torch.device):
        self.m, self.batch_size, self.seed, self.device = m, batch_size, seed, device
        self.per_epoch = 1 if batch_size is None else math.ceil(m / batch_size)
        self._epoch, self._perm = -1, torch.empty(0)

    def __call__(self, update: int) -> torch.Tensor | None:
        if self.batch_size is None or self.batch_size >= self.m:
            return None  # full batch
        epoch, pos = divmod(update, self.per_epoch)
        if epoch != self._epoch:
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._epoch, self._perm = epoch, torch.randperm(self.m, generator=gen).to(self.device)
        return self._perm[pos * self.batch_size:(pos + 1) * self.batch_size]


def _resolve_dtype(dtype: torch.dtype | str) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if not isinstance(getattr(torch, str(dtype), None), torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return getattr(torch, dtype)


def _check_options(steps: int, optimizer: str, reduction: str, schedule, batch_size: int | None) -> None:
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if optimizer not in ("adamw", "sgd"):
        raise ValueError(f"unknown optimizer {optimizer!r}; expected 'adamw' or 'sgd'")
    if reduction not in ("mean", "sum"):
        raise ValueError(f"unknown reduction {reduction!r}; expected 'mean' or 'sum'")
    if not callable(schedule) and schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES} or a callable")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 or None, got {batch_size}")


def _snapshot_columns(snapshot_contexts: Sequence[int] | None, m: int) -> torch.Tensor:
    if snapshot_contexts is None:
        return torch.arange(m)
    cols = torch.as_tensor(list(snapshot_contexts), dtype=torch.long)
    if cols.numel() == 0 or int(cols.min()) < 0 or int(cols.max()) >= m:
        raise ValueError(f"snapshot_contexts must be non-empty indices in [0, {m})")
    if torch.unique(cols).numel() != cols.numel():
        raise ValueError("snapshot_contexts must be distinct indices")
    return cols


def _config_hash(config: dict, ts: TrainingSet, model: NTPModel) -> str:
    """Key (16 hex digits, :func:`ntputils.hashing.digest`) of the run: training arguments, model config,
    data tensors (inputs, ``Q = [pi_j p_{j,z}]``) and the *initial* weights; a checkpoint resumes only
    under the same key.
    """
    return digest(config, _fingerprint(ts.inputs, ts.Q),
                  _fingerprint(*[t for _, t in sorted(model.state_dict().items())]))


def train_ntp(
    model: NTPModel,
    data,
    *,
    steps: int,
    lr: float = 1e-4,
    weight_decay: float = 1e-6,
    optimizer: str = "adamw",
    betas: tuple[float, float] = (0.9, 0.999),
    schedule: str | Callable[[int], float] = "multistep",
    milestones: Sequence[int] = (5000, 10000, 15000, 20000, 25000),
    gamma: float = 0.4,
    warmup_steps: int = 0,
    batch_size: int | None = None,
    reduction: str = "mean",
    device: str = "auto",
    dtype: torch.dtype | str = torch.float32,
    amp: bool = False,
    seed: int = 0,
    log_steps: int | Sequence[int] | None = None,
    snapshot_steps: int | Sequence[int] | None = None,
    snapshot_contexts: Sequence[int] | None = None,
    eval_batch_size: int = 4096,
    checkpoint_dir: str | Path | None = None,
    checkpoint_every: int | None = None,
    resume: bool = True,
    stop_after: int | None = None,
    num_threads: int | None = None,
    progress: bool = True,
) -> History:
    """Train ``model`` in place on ``data`` and return the :class:`~ntputils.training.history.History`.

    Parameters
    ----------
    data: :class:`ntputils.data.NTPData` or ``(inputs, targets[, pi])`` (see :func:`training_set`).
    steps: number of optimizer updates (full batch: one update = one "epoch" of the authors' code).
    lr, weight_decay, betas, optimizer: ``"adamw"`` (decoupled weight decay on every parameter, as
        the authors: lr 1e-4, wd 1e-6, betas (0.9, 0.999)) or ``"sgd"`` (plain gradient descent).
    schedule, milestones, gamma, warmup_steps: learning-rate schedule, see :func:`lr_factor`.
    batch_size: ``None`` = full batch (all m contexts every step), else mini-batches of contexts.
    reduction: ``"mean"`` (the objective CE above) or ``"sum"`` (CE x n, the authors' summed loss;
        needs NTPData). The logged ``loss`` and ``ce`` are always the mean objective.
    device: ``"auto"`` (CUDA if present, else CPU), ``"cpu"`` or ``"cuda[:N]"``.
    dtype: parameter dtype (float32, or float64 for CPU checks).
    amp: bfloat16 autocast of the training forward on CUDA only (off by default: the figures use
        fp32; evaluation and snapshots are always full precision).
    seed: seeds the training randomness (mini-batch order; the global RNG inside the loop). The
        model's initialization is the caller's (see :func:`ntputils.training.models.build_model`).
    log_steps: int = number of log-spaced steps, or explicit steps (default 40 log-spaced).
    snapshot_steps: steps with W/H/L snapshots (default = the log steps).
    snapshot_contexts: indices of the contexts whose embeddings go into ``H`` (default all m; use a
        subset when m x d x #snapshots would not fit in memory). Saved in ``meta``.
    checkpoint_dir, checkpoint_every, resume: periodic checkpoints (default every ~10% of the steps)
        and the final one; with ``resume`` a checkpoint of the same run (same arguments, data and
        initial weights -- so pass a freshly built model) is continued, a different one raises
        ``ValueError``; a finished run is returned as saved. A damaged or altered checkpoint is trained
        again from the start (a ``CacheWarning`` names it); a full disk is an ``OSError`` naming it.
    stop_after: stop (after checkpointing) once this step is done -- simulates an interruption.
    num_threads: torch CPU threads during training (restored afterwards); ``None`` keeps the setting. The
        thread count is part of the run's key (with mini-batches it changes the result in the third
        decimal), so a checkpoint written under another count is refused, not reloaded.
    progress: tqdm progress bar.

    In classification mode (integer labels) the loop also logs ``accuracy`` and stores the
    confusion matrices of the snapshot steps in ``meta["confusion"]`` (see :func:`confusion_matrix`).

    Minimizes the NTP objective of Paper B, Eq. (1); networks of Paper A, Figs. 1, 3 and 6
    and Paper B, Fig. 3.
    """
    _check_options(steps, optimizer, reduction, schedule, batch_size)
    dtype = _resolve_dtype(dtype)
    dev = torch.device(resolve_device(device))
    ts = training_set(model, data)
    V = model.output_weight().shape[0]
    if ts.V != V:
        raise ValueError(f"shape mismatch: data has V={ts.V} next tokens, the model's output layer {V}")
    if reduction == "sum" and ts.n is None:
        raise ValueError("reduction='sum' needs the sample count n: pass an NTPData")
    log_list = _steps_list(log_steps, steps, log_spaced_steps(steps, 40))
    snap_list = _steps_list(snapshot_steps, steps, log_list)
    snap_cols = _snapshot_columns(snapshot_contexts, ts.m)
    threads_before = torch.get_num_threads()
    threads = num_threads or threads_before  # part of the run: mini-batch results differ with it
    config = {
        **model.describe(), "steps": steps, "lr": lr, "weight_decay": weight_decay, "optimizer": optimizer,
        "betas": list(betas), "schedule": schedule if isinstance(schedule, str) else schedule.__qualname__,
        "milestones": list(milestones), "gamma": gamma, "warmup_steps": warmup_steps,
        "batch_size": batch_size, "reduction": reduction, "dtype": str(dtype), "amp": amp, "seed": seed,
        "log_steps": log_list, "snapshot_steps": snap_list,
        "snapshot_contexts": None if snapshot_contexts is None else snap_cols.tolist(),
        "num_threads": threads,
    }
    config_hash = _config_hash(config, ts, model)

    model.to(device=dev, dtype=dtype)
    inputs = ts.inputs.to(dev, dtype) if ts.inputs.is_floating_point() else ts.inputs.to(dev)
    ts = TrainingSet(inputs, ts.Q.to(dev, dtype), ts.entropy, ts.n, ts.labels)

    def make_optimizer(net: NTPModel) -> torch.optim.Optimizer:
        if optimizer == "adamw":
            return torch.optim.AdamW(net.parameters(), lr=lr, betas=betas, weight_decay=weight_decay)
        return torch.optim.SGD(net.parameters(), lr=lr, weight_decay=weight_decay)

    opt = make_optimizer(model)

    hist = History(meta={**config, "config_hash": config_hash, "device": str(dev), "entropy": ts.entropy,
                         "m": ts.m, "V": V, "n": ts.n})
    ckpt_path = Path(checkpoint_dir) / CHECKPOINT_NAME if checkpoint_dir is not None else None
    start, elapsed, rng_state = 0, 0.0, None
    resumed = _resume(ckpt_path, config_hash, model, make_optimizer) if ckpt_path and resume else None
    if resumed is not None:
        hist, opt, start, elapsed, rng_state = resumed
    hist.meta["resumed_from"] = start
    t0 = time.perf_counter()

    def checkpoint(step: int) -> None:
        if ckpt_path is None:
            return
        ckpt_path.parent.mkdir(parents=True, exist_ok=True)
        hist.meta["seconds"] = elapsed + time.perf_counter() - t0
        _save_checkpoint(ckpt_path, {
            "config_hash": config_hash, "step": step, "elapsed": hist.meta["seconds"],
            "model": model.state_dict(), "optimizer": opt.state_dict(), "rng_cpu": torch.get_rng_state(),
            "history": _history_state(hist),
        })

    def record(step: int) -> None:
        snap = step in snap_set
        ce, h2, l2, acc, preds, H = _evaluate(model, ts, snap_cols if snap else None, eval_batch_size)
        W = model.output_weight().detach().double()
        row = {"loss": ce, "ce": ce, "ce_minus_H": ce - ts.entropy, "norm_W": float(W.norm()),
               "norm_H": math.sqrt(h2), "norm_L": math.sqrt(l2), "lr": opt.param_groups[0]["lr"]}
        hist.log(step, **row, **({} if acc is None else {"accuracy": acc}))
        if snap:
            hist.snapshot(step, W.cpu().numpy(), H)
            if preds is not None:
                hist.meta.setdefault("confusion", []).append(confusion_matrix(ts.labels, preds, V).tolist())
                hist.meta.setdefault("confusion_steps", []).append(step)
        bar.set_postfix(ce_minus_H=f"{ce - ts.entropy:.3e}", refresh=False)

    log_set, snap_set = set(log_list) | set(snap_list), set(snap_list)
    batches = _EpochBatches(ts.m, batch_size, seed, dev)
    ckpt_every = checkpoint_every or max(1, steps // 10)
    scale = float(ts.n) if reduction == "sum" else 1.0
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if amp and dev.type == "cuda" else nullcontext()
    bar = tqdm(total=steps, initial=start, disable=None if progress else True, desc=type(model).__name__)
    with deterministic(), torch.random.fork_rng(devices=[dev.index or 0] if dev.type == "cuda" else []):
        torch.set_num_threads(threads)
        if rng_state is not None:
            torch.set_rng_state(rng_state)
        else:
            torch.manual_seed(seed)
        model.train()
        if start == 0 and 0 in log_set:
            record(0)
        try:
            for step in range(start + 1, steps + 1):
                factor = lr_factor(step - 1, schedule=schedule, steps=steps, milestones=milestones,
                                   gamma=gamma, warmup_steps=warmup_steps)
                for group in opt.param_groups:
                    group["lr"] = lr * factor
                idx = batches(step - 1)
                x, q = (ts.inputs, ts.Q) if idx is None else (ts.inputs[idx], ts.Q[idx])
                with autocast:
                    logits = model(x)
                loss = -(q * torch.log_softmax(logits.to(q.dtype), dim=1)).sum() * (ts.m / x.shape[0] * scale)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if step in log_set:
                    record(step)
                bar.update(1)
                if step == steps or step % ckpt_every == 0 or step == stop_after:
                    checkpoint(step)
                if step == stop_after:
                    hist.meta["stopped_at"] = step
                    break
        finally:  # an interruption keeps the last periodic checkpoint (never a half-applied update)
            bar.close()
            torch.set_num_threads(threads_before)
    hist.meta["seconds"] = elapsed + time.perf_counter() - t0
    return hist


def train_classifier(model: NTPModel, inputs: torch.Tensor, labels: torch.Tensor, *, steps: int,
                     lr: float = 0.01, optimizer: str = "sgd", weight_decay: float = 0.0,
                     schedule: str | Callable[[int], float] = "constant", **kwargs) -> History:
    """Train a classifier (e.g. the CNN of paper B Fig. 9) with :func:`train_ntp` on one-hot labels.

    The inputs play the role of contexts (uniform ``pi``), so ``H`` holds the penultimate features,
    ``W`` the last layer, and ``meta["confusion"]`` the confusion matrices at the snapshot steps.
    Defaults: full-batch gradient descent, lr 0.01 (PROPOSED: paper B Fig. 9 does not state them).
    """
    return train_ntp(model, (inputs, labels), steps=steps, lr=lr, optimizer=optimizer,
                     weight_decay=weight_decay, schedule=schedule, **kwargs)
