r"""Chance levels for similarity claims: what an unrelated matrix of the same shape already scores.

$\mathrm{sim}(\boldsymbol A,\boldsymbol B)=
\mathrm{SIM}(\mathrm{corr}(\boldsymbol A),\mathrm{corr}(\boldsymbol B))$ (Paper A, Fig. 6d-e)
compares two correlation matrices *including their diagonals*, which are 1 for every matrix
without zero columns; so an unrelated random $\boldsymbol A$ already scores well above 0 (about 0.7
against $\widetilde{\boldsymbol S}$ on paper A's Synthetic data). A similarity claim is evidence
only against its chance level. This module gives, for a pair ``(A, B)``:

* the off-diagonal value: SIM over the entries $i\neq k$ of both correlation matrices;
* the random baseline: ``sim(R, B)`` for ``R`` with i.i.d. standard normal entries of ``A``'s shape,
  mean and standard deviation over ``draws`` seeded draws (and the same off-diagonal);
* the shuffled-label control: ``sim(A[:, pi], B)`` for random permutations ``pi`` of A's columns,
  which keeps A's spectrum and breaks the pairing of its columns with B's;
* for a learned ``A`` (a UFM's or a network's embeddings), the untrained baseline: ``sim(A_0, B)`` for
  ``A_0``, the same matrix of the same model at initialization (same seed, no training step). An
  untrained transformer already scores far above a Gaussian matrix (its contexts share tokens), so a
  claim about what *training* produced is judged against the larger of the two (:attr:`baseline`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from types import SimpleNamespace

import numpy as np

from ntputils.analysis.metrics import SIM_C, corr, sim, structural_similarity

__all__ = ["offdiagonal_sim", "random_sim", "shuffled_sim", "SimilarityWithChance", "similarity_with_chance"]


def offdiagonal_sim(A: np.ndarray, B: np.ndarray, C: float = SIM_C) -> float:
    r"""$\mathrm{SIM}$ of $\mathrm{corr}(\boldsymbol A)$ and $\mathrm{corr}(\boldsymbol B)$ over the
    off-diagonal entries only (the diagonals are 1 for any matrix and inflate ``sim``), Paper A, Fig. 6d-e.
    """
    CA, CB = corr(A), corr(B)
    if CA.shape != CB.shape:
        raise ValueError(f"sim compares column geometries: need equal column counts, got {np.shape(A)} "
                         f"and {np.shape(B)}")
    n = CA.shape[0]
    if n < 2:
        raise ValueError("the off-diagonal needs at least two columns")
    off = ~np.eye(n, dtype=bool)
    return structural_similarity(CA[off], CB[off], C)


def _draws(draws: int) -> int:
    if not isinstance(draws, int) or isinstance(draws, bool) or draws < 2:
        raise ValueError(f"draws must be an int >= 2 (a spread needs two draws), got {draws!r}")
    return draws


def random_sim(shape: tuple[int, int], B: np.ndarray, *, draws: int = 20, seed: int = 0,
               offdiagonal: bool = False) -> tuple[float, float]:
    """Mean and standard deviation of ``sim(R, B)`` (or its off-diagonal) over ``draws`` matrices
    ``R`` of ``shape`` with i.i.d. N(0, 1) entries (seeded: same seed, same numbers).
    """
    rng = np.random.default_rng(seed)
    f = offdiagonal_sim if offdiagonal else sim
    vals = np.array([f(rng.standard_normal(shape), B) for _ in range(_draws(draws))])
    return float(vals.mean()), float(vals.std(ddof=1))


def shuffled_sim(A: np.ndarray, B: np.ndarray, *, draws: int = 20, seed: int = 0,
                 offdiagonal: bool = False) -> tuple[float, float]:
    """Mean and standard deviation of ``sim(A[:, pi], B)`` over ``draws`` random column permutations."""
    A = np.asarray(A, dtype=np.float64)
    rng = np.random.default_rng(seed)
    f = offdiagonal_sim if offdiagonal else sim
    vals = np.array([f(A[:, rng.permutation(A.shape[1])], B) for _ in range(_draws(draws))])
    return float(vals.mean()), float(vals.std(ddof=1))


@dataclass(frozen=True)
class SimilarityWithChance:
    """A ``sim`` value with its off-diagonal value and both chance levels (mean, std over draws)."""

    value: float
    offdiagonal: float
    random_mean: float
    random_std: float
    random_offdiagonal_mean: float
    random_offdiagonal_std: float
    shuffled_mean: float
    shuffled_std: float
    draws: int
    untrained: float | None = None
    untrained_offdiagonal: float | None = None
    shuffled_offdiagonal_mean: float | None = None  # the shuffled-column control of the off-diagonal value

    @property
    def control(self) -> SimpleNamespace:
        """The negative control of a similarity claim (:func:`ntputils.chapter.compare_similarity`): the
        shuffled-column values, ``sim(A[:, pi], B)`` averaged over the draws, with and without the
        diagonal. Permuting ``A``'s columns keeps its spectrum and its correlation values but mismatches
        the pairs of columns, so a rule that this control passes too does not test the pairing."""
        if self.shuffled_offdiagonal_mean is None:
            raise ValueError("this SimilarityWithChance has no shuffled off-diagonal value: make it with "
                             "similarity_with_chance")
        return SimpleNamespace(value=self.shuffled_mean, offdiagonal=self.shuffled_offdiagonal_mean)

    @property
    def baseline(self) -> float:
        """What a claim about ``A`` must beat: the larger of the Gaussian chance level (mean) and the
        untrained baseline (when given)."""
        return self.random_mean if self.untrained is None else max(self.random_mean, self.untrained)

    @property
    def baseline_offdiagonal(self) -> float:
        """:attr:`baseline` of the off-diagonal value."""
        return (self.random_offdiagonal_mean if self.untrained_offdiagonal is None
                else max(self.random_offdiagonal_mean, self.untrained_offdiagonal))

    def baselines(self, offdiagonal: bool = False) -> dict[str, float]:
        """The baselines by name (``Gaussian``, and ``untrained`` when given) of the value or of its
        off-diagonal value."""
        out = {"Gaussian": self.random_offdiagonal_mean if offdiagonal else self.random_mean}
        untrained = self.untrained_offdiagonal if offdiagonal else self.untrained
        if untrained is not None:
            out["untrained"] = untrained
        return out

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    def row(self, label: str) -> dict[str, object]:
        """One row of a chapter's similarity table: the value and the off-diagonal value next to their
        random chance levels (mean ± std) and the shuffled-column control."""
        row = {"claim": label, "value": self.value,
               "chance": f"{self.random_mean:.3f} ± {self.random_std:.3f}"}
        if self.untrained is not None:
            row["untrained"] = f"{self.untrained:.3f}"
        off_chance = f"{self.random_offdiagonal_mean:.3f} ± {self.random_offdiagonal_std:.3f}"
        row.update({"off-diagonal": self.offdiagonal, "off-diag. chance": off_chance})
        if self.untrained_offdiagonal is not None:
            row["off-diag. untrained"] = f"{self.untrained_offdiagonal:.3f}"
        row["shuffled"] = f"{self.shuffled_mean:.3f} ± {self.shuffled_std:.3f}"
        return row


def similarity_with_chance(A: np.ndarray, B: np.ndarray, *, draws: int = 20, seed: int = 0,
                           untrained: np.ndarray | None = None) -> SimilarityWithChance:
    """``sim(A, B)`` reported with its off-diagonal value, the random-matrix baseline (same shape as
    ``A``) and the shuffled-column control (with and without the diagonal: the claim's negative control,
    :attr:`SimilarityWithChance.control`): what every similarity claim of the book shows.

    ``untrained``: for a learned ``A``, the same matrix of the same model at initialization (``A``'s
    shape); its ``sim`` and off-diagonal value become the untrained baseline.
    """
    A = np.asarray(A, dtype=np.float64)
    rm, rs = random_sim(A.shape, B, draws=draws, seed=seed)
    om, os_ = random_sim(A.shape, B, draws=draws, seed=seed, offdiagonal=True)
    sm, ss = shuffled_sim(A, B, draws=draws, seed=seed)
    som, _ = shuffled_sim(A, B, draws=draws, seed=seed, offdiagonal=True)
    u = uo = None
    if untrained is not None:
        A0 = np.asarray(untrained, dtype=np.float64)
        if A0.shape != A.shape:
            raise ValueError(f"the untrained matrix must have the trained one's shape {A.shape}, "
                             f"got {A0.shape}")
        u, uo = sim(A0, B), offdiagonal_sim(A0, B)
    return SimilarityWithChance(sim(A, B), offdiagonal_sim(A, B), rm, rs, om, os_, sm, ss, draws, u, uo, som)
