r"""How much memory NTP-UFM runs and their Fig. 6 analysis need, known before any work.

A chapter that trains several NTP-UFM runs (Paper A, Sec. 2, Eq. (NTP-UFM)) and keeps every run's
snapshots to its end holds, at its peak, all snapshots plus the largest transient of one run:

* **snapshots** (:meth:`ntputils.training.history.History.snapshot`): ``W`` (V x d), ``H`` (d x m) and
  ``L = W H`` (V x m) in float64 at each of ``n`` steps: ``8 n (V d + d m + V m)`` bytes per run;
* **training** (:func:`ntputils.training.ufm.train`): factors, gradients and the two AdamW moments, plus
  the logits and their gradients: ``itemsize (4 (V d + d m) + 4 V m)`` bytes;
* **Fig. 6 series** (:func:`ntputils.analysis.convergence.convergence_curves`): ``batched_sim`` stacks as many
  snapshots of ``H`` (or ``W^T``) at once as keep four copies of the stack (the stack, its column-scaled
  copy, a temporary and the unit-column result) and their ``m x m`` (``V x V``) correlation matrices
  within ``CHUNK_BYTES`` (:func:`~ntputils.analysis.metrics.sim_chunk`), beside the stacked logits
  ``n x V x m``;
* **chance levels** (:func:`ntputils.analysis.baselines.similarity_with_chance`): one Gaussian matrix of
  H's shape (``d x m``) at a time, with the same four copies.

:func:`ufm_runs_bytes` adds them up. It is an estimate for refusing parameters that cannot fit (a large
``d`` used to fail only after the first run); ``tests/test_ufm_memory.py`` checks that it is not below
the measured peak of the Fig. 6 step.
"""

from __future__ import annotations

from collections.abc import Iterable

from ntputils.analysis.metrics import STACK_COPIES, sim_chunk

__all__ = ["convergence_curves_bytes", "snapshots_bytes", "training_bytes", "ufm_runs_bytes"]

_F64 = 8
_COPIES = STACK_COPIES  # input stack, column-scaled copy, temporary, unit-column result


def snapshots_bytes(V: int, m: int, d: int, n_snapshots: int) -> float:
    """``8 n (V d + d m + V m)``: float64 ``W``, ``H`` and ``L`` at ``n_snapshots`` snapshots of one run."""
    return float(_F64 * n_snapshots * (V * d + d * m + V * m))


def training_bytes(V: int, m: int, d: int, itemsize: int = 8) -> float:
    """Factors, gradients and AdamW's two moments (``4 (V d + d m)``) and the logits with their gradient and
    two temporaries (``4 V m``), at ``itemsize`` bytes per entry."""
    return float(itemsize * (4 * (V * d + d * m) + 4 * V * m))


def convergence_curves_bytes(V: int, m: int, d: int, n_snapshots: int) -> float:
    """The transient of :func:`~ntputils.analysis.convergence.convergence_curves` on one run (no snapshots):
    the largest chunk of stacked ``H`` (d x m) or ``W^T`` (d x V) snapshots, four copies of it, its block of
    correlation matrices, and the stacked logits with their projection."""
    chunk = 0
    for n in (m, V):  # sim of H (m columns), sim of W^T (V columns)
        per = min(n_snapshots, sim_chunk(d, n))
        chunk = max(chunk, _COPIES * _F64 * per * d * n + 3 * _F64 * per * n * n)
    logits = 3 * _F64 * n_snapshots * V * m  # np.stack(hist.L), its projection onto F, a difference
    return float(chunk + logits)


def _chance_bytes(V: int, m: int, d: int) -> float:
    return float(_COPIES * _F64 * d * max(m, V) + 2 * _F64 * max(m, V) ** 2)


def ufm_runs_bytes(shapes: Iterable[tuple[int, int]], d: int, n_snapshots: int, itemsize: int = 8) -> float:
    """Peak bytes of training one NTP-UFM run per ``(V, m)`` in ``shapes`` with embedding dimension ``d``,
    keeping ``n_snapshots`` snapshots of every run to the end, then computing each run's Fig. 6 series and
    the chance levels of its similarities: every run's snapshots plus the largest single transient.
    """
    shapes = [(int(V), int(m)) for V, m in shapes]
    if not shapes:
        raise ValueError("no runs: shapes is empty")
    if d < 1 or n_snapshots < 1 or any(V < 1 or m < 1 for V, m in shapes):
        raise ValueError(f"d, n_snapshots, V and m must be >= 1, got d={d}, n_snapshots={n_snapshots}, "
                         f"shapes={shapes}")
    kept = sum(snapshots_bytes(V, m, d, n_snapshots) for V, m in shapes)
    transient = max(max(training_bytes(V, m, d, itemsize), convergence_curves_bytes(V, m, d, n_snapshots),
                        _chance_bytes(V, m, d)) for V, m in shapes)
    return kept + transient
