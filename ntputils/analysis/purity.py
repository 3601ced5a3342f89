"""Purity of concept clusters against lexical classes, with random baselines (paper B sec. 5, App. F;
chapters b04, b07).

Paper B (sec. 5, App. F) reads orthant clusters (Definition 1) and k-means clusters of the word-analyzer
rows by eye, from word clouds of the 40 most typical members (drawn by :mod:`ntputils.plots.wordclouds`).
This module, beyond the paper, *measures* how semantic a cluster is.

Purity (our definition). Let ``labels`` assign every word a set of classes (part of speech, verb form,
month, number, name, ...; classes overlap) and let a cluster ``C`` be the words shown for it (the top-40
by typicality). For a class ``c``

    purity(C, c) = |C ∩ c| / |C|,        base rate  b(c) = |c| / V,        excess(C, c) = purity - b(c).

Unlabelled words count in ``|C|`` (they lower the purity of every class). The **best class** of ``C`` is
``argmax_c excess(C, c)``: taking ``argmax purity`` would always prefer umbrella classes ("verb" contains
every "past-tense verb"), while the excess over the base rate prefers the most specific class that the
cluster is enriched in. ``b(c)`` is also the expected purity of a random cluster for the fixed class ``c``.

Random baseline. For a cluster of size ``s``, ``n_draws`` sets of ``s`` distinct words are drawn
uniformly from the vocabulary; each draw picks *its own* best class by the same rule. The cluster
**beats random** when its best excess is above the 95th percentile of the draws' best excess -- a test that
accounts for choosing the best of all classes. For display, the purity of the cluster's class in the
draws (mean, 95th percentile) is reported as well.

Block density (paper B Fig. 6): :func:`block_support_density` measures how often the words of a word
cluster are observed next tokens of the contexts of the matching context cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

NO_SPACE = "no leading space"
TOKEN_START = "#"


# ---------------------------------------------------------------------------------------------
# class labels
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClassLabels:
    """Boolean class membership of a vocabulary: ``member[z, c]`` is True iff word z is in class c.

    Lexical classes for the semantic categories Paper B, Sec. 5.2 reads from word clouds (Fig. 4).
    """

    words: tuple[str, ...]
    classes: tuple[str, ...]
    member: np.ndarray

    def __post_init__(self) -> None:
        member = np.asarray(self.member, dtype=bool)
        if member.shape != (len(self.words), len(self.classes)):
            raise ValueError(f"member must be (words x classes) = ({len(self.words)}, {len(self.classes)}), "
                             f"got {member.shape}")
        if not self.words or not self.classes:
            raise ValueError("ClassLabels needs at least one word and one class")
        object.__setattr__(self, "member", member)

    @classmethod
    def from_mapping(cls, words: Sequence[str], classes: Mapping[str, Iterable[str]]) -> ClassLabels:
        """Build from ``{class name: member words}`` (e.g. :func:`ntputils.data.corpora.word_classes`).

        Class members that are not in ``words`` are ignored; classes are sorted by name.
        """
        words = tuple(words)
        if not words:
            raise ValueError("empty vocabulary: no words to label")
        row = {w: i for i, w in enumerate(words)}
        names = tuple(sorted(classes))
        member = np.zeros((len(words), len(names)), dtype=bool)
        for c, name in enumerate(names):
            idx = [row[w] for w in classes[name] if w in row]
            member[idx, c] = True
        return cls(words, names, member)

    @property
    def base_rate(self) -> np.ndarray:
        """``b(c) = |c| / V`` for every class, shape (n_classes,)."""
        return self.member.mean(axis=0)

    @property
    def coverage(self) -> float:
        """Fraction of words with at least one class."""
        return float(self.member.any(axis=1).mean())

    def index(self, name: str) -> int:
        """Column of class ``name``; ``ValueError`` listing the classes if unknown."""
        try:
            return self.classes.index(name)
        except ValueError:
            raise ValueError(f"unknown class {name!r}; classes: {', '.join(self.classes)}") from None

    def without(self, *names: str) -> ClassLabels:
        """The same labels with the classes ``names`` removed (each must exist)."""
        drop = {self.index(n) for n in names}
        keep = [c for c in range(len(self.classes)) if c not in drop]
        if not keep:
            raise ValueError("cannot remove every class")
        return ClassLabels(self.words, tuple(self.classes[c] for c in keep), self.member[:, keep])

    def of(self, word_index: int) -> list[str]:
        """The classes of one word (by row index)."""
        return [self.classes[c] for c in np.flatnonzero(self.member[word_index])]


def has_no_leading_space(token: str) -> bool:
    """A token without the word-start marker ``#`` that contains a letter.

    In a byte-level BPE these are word-internal pieces (``ing``, ``ad``) or words at the start of a line
    or right after a quote (``The``, ``Lily`` in TinyStories, where lines have no leading space).

    Token class used with the word clouds of Paper B, Sec. 5.1 (# marks a word start).
    """
    return not token.startswith(TOKEN_START) and any(ch.isalpha() for ch in token)


def lexical_labels(words: Sequence[str], classify: Callable[[str], set[str]] | None = None,
                   tokenizer_class: bool = True) -> ClassLabels:
    """Lexical classes of a vocabulary (default: :func:`ntputils.data.corpora.classify`).

    With ``tokenizer_class=True`` the class ``"no leading space"`` (:func:`has_no_leading_space`) is
    added. It is a property of the token type, not of the word: it marks BPE continuation pieces and
    line-initial words, which the SVD of real text separates strongly.

    Lexical classes for the semantic categories of Paper B, Fig. 4.
    """
    if classify is None:
        from ntputils.data.corpora import classify
    words = list(words)
    if not words:
        raise ValueError("empty vocabulary: no words to label")
    mapping: dict[str, set[str]] = {}
    for w in words:
        cls = set(classify(w))
        if tokenizer_class and has_no_leading_space(w):
            cls.add(NO_SPACE)
        for name in cls:
            mapping.setdefault(name, set()).add(w)
    if not mapping:
        raise ValueError("no word of the vocabulary received a class")
    return ClassLabels.from_mapping(words, mapping)


# ---------------------------------------------------------------------------------------------
# purity and random baseline
# ---------------------------------------------------------------------------------------------
class Purity(NamedTuple):
    """Purity of one cluster against its best-matching class (module docstring).

    Our measure of the semantics Paper B, Sec. 5.2 reads from word clouds.
    """

    size: int
    best_class: str
    purity: float
    base_rate: float
    excess: float
    n_labelled: int


def _members(members: Iterable[int], n_words: int) -> np.ndarray:
    idx = np.asarray(list(members) if not isinstance(members, np.ndarray) else members)
    if idx.ndim != 1:
        raise ValueError(f"cluster members must be a 1-D array of word indices, got shape {idx.shape}")
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"cluster members must be integer word indices, got dtype {idx.dtype}")
    idx = idx.astype(np.intp)
    if idx.size and (idx.min() < 0 or idx.max() >= n_words):
        raise ValueError(f"cluster member index out of range for a vocabulary of {n_words} words")
    if np.unique(idx).size != idx.size:
        raise ValueError("cluster members must be distinct words")
    return idx


def class_purities(members: Iterable[int], labels: ClassLabels) -> np.ndarray:
    """``purity(C, c) = |C ∩ c| / |C|`` for every class c, shape (n_classes,).

    Unlabelled words count in ``|C|``.

    Our measure of the semantics Paper B, Sec. 5.2 reads from word clouds.
    """
    idx = _members(members, len(labels.words))
    if idx.size == 0:
        raise ValueError("purity of an empty cluster is undefined")
    return labels.member[idx].mean(axis=0)


def cluster_purity(members: Iterable[int], labels: ClassLabels, cls: str | None = None) -> Purity:
    r"""$\lvert C\cap c\rvert/\lvert C\rvert$ for the best class $c=\arg\max_c(\lvert C\cap c\rvert/\lvert
    C\rvert-\lvert c\rvert/V)$ or the given ``cls``: our measure of the semantics Paper B, Fig. 4 reads from
    word clouds.
    """
    idx = _members(members, len(labels.words))
    pur = class_purities(idx, labels)
    excess = pur - labels.base_rate
    c = int(np.argmax(excess)) if cls is None else labels.index(cls)
    return Purity(int(idx.size), labels.classes[c], float(pur[c]), float(labels.base_rate[c]),
                  float(excess[c]), int(labels.member[idx].any(axis=1).sum()))


@dataclass
class RandomBaseline:
    """Purities of random clusters: ``n_draws`` uniform size-``s`` subsets of the vocabulary per size ``s``.

    Draws for a size are made once (on first use) from ``numpy.random.default_rng((seed, s))`` and cached,
    so the baseline of a size does not depend on which other sizes were asked for.

    Random-cluster baseline for the clusters of Paper B, Sec. 5.2 (beyond the paper).
    """

    labels: ClassLabels
    n_draws: int = 1000
    seed: int = 0
    _cache: dict[int, np.ndarray] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.n_draws < 20:
            raise ValueError(f"n_draws must be >= 20 for a 95th percentile, got {self.n_draws}")

    def purities(self, size: int) -> np.ndarray:
        """(n_draws, n_classes) purities of random clusters of ``size`` distinct words."""
        V = len(self.labels.words)
        if not 1 <= size <= V:
            raise ValueError(f"random cluster size must be in 1..{V}, got {size}")
        if size not in self._cache:
            rng = np.random.default_rng((self.seed, size))
            keys = rng.random((self.n_draws, V))
            draws = np.argpartition(keys, size - 1, axis=1)[:, :size]  # uniform random subsets
            self._cache[size] = self.labels.member[draws].mean(axis=1)
        return self._cache[size]

    def best_excess(self, size: int) -> np.ndarray:
        """(n_draws,) best excess ``max_c (purity - base rate)`` of every random cluster."""
        return (self.purities(size) - self.labels.base_rate).max(axis=1)

    def excess_threshold(self, size: int, q: float = 95.0) -> float:
        """``q``-th percentile of the random clusters' best excess."""
        return float(np.percentile(self.best_excess(size), q))

    def class_quantiles(self, size: int, cls: str, q: float = 95.0) -> tuple[float, float]:
        """Mean and ``q``-th percentile of the purity of class ``cls`` in random clusters of ``size``."""
        p = self.purities(size)[:, self.labels.index(cls)]
        return float(p.mean()), float(np.percentile(p, q))

    def best_purity(self, size: int) -> np.ndarray:
        """(n_draws,) purity of every random cluster's own best class (``argmax_c`` excess)."""
        pur = self.purities(size)
        best = np.argmax(pur - self.labels.base_rate, axis=1)
        return pur[np.arange(pur.shape[0]), best]

    def beats(self, purity: Purity, q: float = 95.0) -> bool:
        """Whether a cluster's best excess is above the ``q``-th percentile of random best excesses."""
        return purity.excess > self.excess_threshold(purity.size, q)


def purity_table(clusters: Mapping[str, Iterable[int]], labels: ClassLabels, baseline: RandomBaseline,
                 preview: int = 8, min_size: int = 1):
    """One row per non-empty cluster (at least ``min_size`` members): purity vs random clusters.

    Columns: ``cluster``, ``size``, ``best class``, ``purity``, ``base rate``, ``random mean`` and
    ``random p95`` (purity of the same class in random same-size clusters), ``excess``,
    ``random p95 excess`` (best-class excess of random clusters, 95th percentile), ``beats random``
    and ``members`` (the first ``preview`` members, in the given order). Returns a ``pandas.DataFrame``.

    Purity of the orthant and k-means clusters of Paper B, Sec. 5.2 (Figs. 4, 5).
    """
    import pandas as pd

    if baseline.labels is not labels:
        raise ValueError("baseline must be built on the same ClassLabels as the table")
    rows = []
    for name, members in clusters.items():
        idx = _members(members, len(labels.words))
        if idx.size < max(min_size, 1):
            continue
        pur = cluster_purity(idx, labels)
        mean, p95 = baseline.class_quantiles(pur.size, pur.best_class)
        rows.append({"cluster": name, "size": pur.size, "best class": pur.best_class,
                     "purity": pur.purity, "base rate": pur.base_rate, "random mean": mean, "random p95": p95,
                     "excess": pur.excess, "random p95 excess": baseline.excess_threshold(pur.size),
                     "beats random": baseline.beats(pur),
                     "members": " ".join(labels.words[i] for i in idx[:preview])})
    columns = ["cluster", "size", "best class", "purity", "base rate", "random mean", "random p95", "excess",
               "random p95 excess", "beats random", "members"]
    return pd.DataFrame(rows, columns=columns)


def summarize_purity(table, min_size: int = 10) -> dict[str, float]:
    """Summary of a :func:`purity_table` over the clusters with at least ``min_size`` members ("tested").

    Keys: ``clusters`` (rows of the table), ``tested``, ``beat random`` (fraction of tested clusters),
    ``mean purity`` and ``mean random p95`` (over tested clusters; NaN when none is tested).

    Purity of the orthant and k-means clusters of Paper B, Sec. 5.2 (Figs. 4, 5).
    """
    tested = table[table["size"] >= min_size]
    nan = float("nan")
    return {"clusters": int(len(table)), "tested": int(len(tested)),
            "beat random": float(tested["beats random"].mean()) if len(tested) else nan,
            "mean purity": float(tested["purity"].mean()) if len(tested) else nan,
            "mean random p95": float(tested["random p95"].mean()) if len(tested) else nan}


def partition_purity(clusters: Iterable[Iterable[int]], labels: ClassLabels) -> float:
    """Size-weighted best-class purity ``sum_C |C| purity(C, c*_C) / sum_C |C|`` over non-empty clusters.

    Compares orthant and k-means partitions, Paper B, Sec. 5.1 (Figs. 5, 20, 21).
    """
    total = weighted = 0.0
    for members in clusters:
        idx = _members(members, len(labels.words))
        if idx.size:
            total += idx.size
            weighted += idx.size * cluster_purity(idx, labels).purity
    if total == 0:
        raise ValueError("partition_purity needs at least one non-empty cluster")
    return weighted / total


def random_partition_purity(sizes: Iterable[int], baseline: RandomBaseline) -> float:
    """Expected :func:`partition_purity` of random clusters with the given sizes (mean over the draws).

    Baseline for the partitions of Paper B, Sec. 5.1 (beyond the paper).
    """
    sizes = [int(s) for s in sizes if s > 0]
    if not sizes:
        raise ValueError("random_partition_purity needs at least one positive size")
    return float(sum(s * baseline.best_purity(s).mean() for s in sizes) / sum(sizes))


def best_cluster_for_class(clusters: Mapping[Hashable, Iterable[int]], labels: ClassLabels, cls: str,
                           min_size: int = 10) -> tuple[Hashable, Purity]:
    """The cluster with the highest purity for class ``cls`` among clusters with >= ``min_size`` members.

    Ties go to the larger cluster, then to the first in ``clusters`` order (deterministic). Used to pick
    the clusters of paper B Figs. 4-6 reproducibly instead of by hand.
    """
    labels.index(cls)
    best: tuple[Hashable, Purity] | None = None
    for name, members in clusters.items():
        idx = _members(members, len(labels.words))
        if idx.size < min_size:
            continue
        pur = cluster_purity(idx, labels, cls)
        if best is None or (pur.purity, pur.size) > (best[1].purity, best[1].size):
            best = (name, pur)
    if best is None:
        raise ValueError(f"no cluster has at least min_size={min_size} members")
    return best


class BestOfN(NamedTuple):
    """Selection-aware comparison of the purest of ``N`` candidate clusters with chance.

    ``observed``: the highest purity of class ``cls`` among the candidates; ``random``: the same maximum
    for ``N`` random word sets with the candidates' sizes, one value per draw; ``p95``/``mean`` its 95th
    percentile and mean; ``beats``: ``observed > p95``.
    """

    cls: str
    n_candidates: int
    observed: float
    mean: float
    p95: float
    beats: bool
    random: np.ndarray


def best_of_n(clusters: Mapping[Hashable, Iterable[int]], baseline: RandomBaseline, cls: str,
              min_size: int = 10, n_boot: int = 1000, seed: int = 0) -> BestOfN:
    r"""Selection-aware score of "the purest of N candidates is class ``cls``" (beyond the paper).

    Picking the purest of ``N`` candidate clusters inflates its purity; the fair chance level is the
    purest of ``N`` **random** word sets of the same sizes. With the candidates of at least ``min_size``
    members, sizes $s_1..s_N$,

    $$\text{observed}=\max_i \mathrm{purity}(C_i, c),\qquad
      \text{random}_t=\max_i \mathrm{purity}(R_{t,i}, c),\quad |R_{t,i}|=s_i,$$

    where every $R_{t,i}$ is an independent draw of ``baseline`` (a draw index picked at random per
    candidate and bootstrap round ``t``). The claim holds when ``observed`` exceeds the 95th percentile.
    Used for the clusters of Paper B Figs. 4, 5 picked among all orthants / k-means clusters.
    """
    labels = baseline.labels
    col = labels.index(cls)
    sizes, observed = [], -np.inf
    for members in clusters.values():
        idx = _members(members, len(labels.words))
        if idx.size < min_size:
            continue
        sizes.append(idx.size)
        observed = max(observed, float(labels.member[idx, col].mean()))
    if not sizes:
        raise ValueError(f"no cluster has at least min_size={min_size} members")
    if n_boot < 20:
        raise ValueError(f"n_boot must be >= 20 for a 95th percentile, got {n_boot}")
    rng = np.random.default_rng(seed)
    rand = np.full(n_boot, -np.inf)
    for size in sizes:
        draws = baseline.purities(size)[:, col]
        rand = np.maximum(rand, draws[rng.integers(draws.size, size=n_boot)])
    p95 = float(np.percentile(rand, 95))
    return BestOfN(cls, len(sizes), observed, float(rand.mean()), p95, bool(observed > p95), rand)


def block_support_density(S, rows: Iterable[int], columns: Iterable[int]) -> float:
    """Fraction of ones of the 0/1 support matrix ``S`` (V x m) in the block ``rows x columns``.

    For a word cluster and a context cluster with the same sign pattern (paper B Fig. 6) this measures
    how often the words are observed next tokens of the contexts; compare with the density of S.
    """
    r = np.asarray(list(rows) if not isinstance(rows, np.ndarray) else rows, dtype=np.intp)
    c = np.asarray(list(columns) if not isinstance(columns, np.ndarray) else columns, dtype=np.intp)
    if r.size == 0 or c.size == 0:
        raise ValueError("block_support_density needs at least one row and one column")
    block = S[r][:, c] if hasattr(S, "tocsr") else np.asarray(S)[np.ix_(r, c)]
    total = block.sum() if not hasattr(block, "toarray") else block.toarray().sum()
    return float(total) / (r.size * c.size)
