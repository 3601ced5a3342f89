"""The training-history format shared by NTP-UFM training and network training.

A :class:`History` holds scalar curves logged at every recorded step and full snapshots of the
word embeddings ``W`` (V x d, rows = words), the context embeddings ``H`` (d x m, columns =
contexts) and the logits ``L = W H`` (V x m) at log-spaced steps. Chapters compute every metric of
paper A Fig. 6 / paper B Figs. 12-19 from these snapshots, whether they come from the UFM
(:mod:`ntputils.training.ufm`) or from a transformer (:mod:`ntputils.training.models`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


def log_spaced_steps(steps: int, num: int = 40, include_zero: bool = True) -> list[int]:
    """Integers ``0, 1, 2, ... , steps`` spaced log-uniformly (about ``num`` distinct values).

    ``steps`` itself is always included; ``0`` (the initialization) when ``include_zero``.
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    if num < 1:
        raise ValueError(f"num must be >= 1, got {num}")
    grid = np.unique(np.round(np.logspace(0, np.log10(max(steps, 1)), num)).astype(int))
    out = sorted({int(s) for s in grid if 1 <= s <= steps} | {steps} | ({0} if include_zero else set()))
    return out


@dataclass
class History:
    """Curves and snapshots of one training run.

    Attributes
    ----------
    steps:
        the step index of every logged row (0 = initialization).
    scalars:
        name -> list of floats aligned with ``steps``; always holds ``"loss"`` (the training
        objective), and where defined ``"ce"`` (the pi-weighted NTP cross-entropy),
        ``"ce_minus_H"``, ``"norm_W"``, ``"norm_H"``, ``"norm_L"`` (Frobenius norms).
    snap_steps:
        the steps at which full snapshots were taken.
    W, H, L:
        lists aligned with ``snap_steps`` of float64 numpy arrays of shapes (V, d), (d, m), (V, m).
    meta:
        free-form run description (loss, d, lr, device, seconds, ...).

    The training curves and snapshots behind Paper A, Figs. 4 and 6 and Paper B, Figs. 12, 13 and 18.
    """

    steps: list[int] = field(default_factory=list)
    scalars: dict[str, list[float]] = field(default_factory=dict)
    snap_steps: list[int] = field(default_factory=list)
    W: list[np.ndarray] = field(default_factory=list)
    H: list[np.ndarray] = field(default_factory=list)
    L: list[np.ndarray] = field(default_factory=list)
    meta: dict = field(default_factory=dict)

    def log(self, step: int, **values: float) -> None:
        """Append one row of scalar values at ``step`` (every row must carry the same names)."""
        if self.steps and set(values) != set(self.scalars):
            raise ValueError(f"logged names {sorted(values)} differ from {sorted(self.scalars)}")
        self.steps.append(int(step))
        for name, value in values.items():
            self.scalars.setdefault(name, []).append(float(value))

    def snapshot(self, step: int, W: np.ndarray, H: np.ndarray) -> None:
        """Store W (V x d), H (d x m) and L = W H at ``step`` (copied, float64)."""
        W = np.array(W, dtype=np.float64, copy=True)
        H = np.array(H, dtype=np.float64, copy=True)
        if W.ndim != 2 or H.ndim != 2 or W.shape[1] != H.shape[0]:
            raise ValueError(f"shape mismatch: W {W.shape} and H {H.shape} must be (V, d) and (d, m)")
        self.snap_steps.append(int(step))
        self.W.append(W)
        self.H.append(H)
        self.L.append(W @ H)

    def at_initialization(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W_0, H_0)``: the snapshot at step 0, the untrained model whose geometry every claim about
        the trained one is measured against (:func:`ntputils.analysis.baselines.similarity_with_chance`)."""
        if not self.snap_steps or self.snap_steps[0] != 0:
            raise ValueError("this history has no snapshot at step 0 (snapshot_steps must include 0)")
        return self.W[0], self.H[0]

    def curve(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(steps, values) of a logged scalar as arrays."""
        if name not in self.scalars:
            raise KeyError(f"no scalar {name!r}; logged: {sorted(self.scalars)}")
        return np.asarray(self.steps), np.asarray(self.scalars[name])

    @property
    def final(self) -> dict[str, float]:
        """The last logged value of every scalar."""
        return {k: v[-1] for k, v in self.scalars.items()}

    def save(self, path: str | Path) -> None:
        """Write the history to one ``.npz`` file at exactly ``path`` (no suffix added); see :meth:`load`."""
        import json

        arrays: dict[str, np.ndarray] = {
            "steps": np.asarray(self.steps, dtype=np.int64),
            "snap_steps": np.asarray(self.snap_steps, dtype=np.int64),
        }
        for k, v in self.scalars.items():
            arrays[f"scalar__{k}"] = np.asarray(v)
        for i, (w, h) in enumerate(zip(self.W, self.H, strict=True)):
            arrays[f"W__{i}"] = w
            arrays[f"H__{i}"] = h
        arrays["meta"] = np.asarray(json.dumps(self.meta, default=str))
        # through a file handle: np.savez_compressed(str) would append ".npz" to a path without that
        # suffix, and load(path) would then not find the file
        with open(path, "wb") as fh:
            np.savez_compressed(fh, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> History:
        """Read a history written by :meth:`save`."""
        import json

        with np.load(path, allow_pickle=False) as z:
            hist = cls(meta=json.loads(str(z["meta"])))
            hist.steps = [int(s) for s in z["steps"]]
            hist.scalars = {k[len("scalar__"):]: [float(x) for x in z[k]]
                            for k in z.files if k.startswith("scalar__")}
            for i, s in enumerate(z["snap_steps"]):
                hist.snapshot(int(s), z[f"W__{i}"], z[f"H__{i}"])
        return hist
