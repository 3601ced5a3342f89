"""Paper A's two datasets: "Synthetic" (template sentences) and "Simplified TinyStories".

Both are word-level, fixed-length-5 contexts with *re-sampled* counts (the corpus frequencies are
not used); the recipes (paper A Figs. 1, 4 and 6) are reconstructed from the authors'
code (Dataset.py ``sampler``, Entropy.py ``getContextEntropy``/``cherry_pick_by_freq``/``expand_m``).
Random draws use ``np.random.RandomState(seed)`` (numpy's legacy generator, the one the authors'
``np.random.seed(1634)`` drives) in the same order as their sampler: per context, first the support
choice (when one is needed), then the counts.

Rows (``vocab``) are the next tokens only (``V``); contexts are tuples of ids into a separate
``context_vocab`` of context words, so ``data.context_str(j)`` gives e.g. ``"lily wants to try the"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ntputils.data.corpora import readers
from ntputils.data.corpora.cache import cached, cached_arrays
from ntputils.data.corpora.ngrams import Corpus
from ntputils.data.corpora.tokenize import WordVocab, words_spaced, words_stripped
from ntputils.data.corpora.variants import expand_contexts
from ntputils.data.corpora.wordnet import check_wordnet_file, load_wordnet, wordnet_synonyms, wordnet_zip
from ntputils.data.ntp import NTPData, from_counts

#: The authors' prioritized next tokens for "Synthetic" (ids 41-50 of their word tokenizer, in id
#: order): a context whose endings contain some of them keeps those first, which makes supports
#: overlap across contexts.
SYNTHETIC_PRIORITY = ("friends", "soup", "classmates", "dog", "game", "movie", "pizza", "tired", "bike",
                      "celebrated")
CONTEXT_LENGTH = 5
BOS, EOS = "<s>", "</s>"


def _assemble(supports: Sequence[np.ndarray], counts: Sequence[np.ndarray], contexts: Sequence[Sequence[str]],
              row_words: Sequence[str]) -> NTPData:
    """NTPData from per-context support ids (into ``row_words``) and counts; rows = used tokens only."""
    used = np.unique(np.concatenate(supports))
    row_of = {int(t): r for r, t in enumerate(used)}
    rows = np.fromiter((row_of[int(t)] for s in supports for t in s), dtype=np.int64)
    cols = np.repeat(np.arange(len(supports)), [len(s) for s in supports])
    mat = sp.coo_array((np.concatenate(counts).astype(np.int64), (rows, cols)),
                       shape=(used.size, len(supports))).tocsc()
    ctx_vocab = WordVocab(contexts)
    ctx_ids = [tuple(int(i) for i in ctx_vocab.encode(c)) for c in contexts]
    return from_counts(mat, ctx_ids, [row_words[int(t)] for t in used], ctx_vocab.words)


# ----------------------------------------------------------------------------------------------
# "Synthetic"
# ----------------------------------------------------------------------------------------------


def _synthetic_endings() -> tuple[list[list[int]], list[tuple[str, ...]], WordVocab, np.ndarray]:
    """Distinct endings (token ids) per template context, the contexts, the word vocabulary, priority ids."""
    token_lists = [words_stripped(s) for s in readers.read_template_sentences()]
    if any(len(t) <= CONTEXT_LENGTH for t in token_lists):
        raise ValueError("every template sentence needs at least 6 words")
    vocab = WordVocab(token_lists, offset=3, specials=("<unk>", BOS, EOS))  # sentencepiece word ids
    priority = np.array(sorted(vocab.index[w] for w in SYNTHETIC_PRIORITY if w in vocab.index))
    endings: dict[tuple[str, ...], list[int]] = {}
    for tokens in token_lists:
        endings.setdefault(tuple(tokens[:CONTEXT_LENGTH]), []).append(vocab.index[tokens[CONTEXT_LENGTH]])
    # distinct endings in the order a Python set of the (small-int) ids yields them, as the authors'
    # list(set(...)) did; only the random draws depend on this order.
    fulls = [list(dict.fromkeys(set(ids))) for ids in endings.values()]
    return fulls, list(endings), vocab, priority


def _synthetic_draws(fulls: Sequence[list[int]], priority: np.ndarray, seed: int, support_size: int | str,
                     max_count: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Supports and counts of the authors' sampler (``set_s="equal"``/``"random"``), in its draw order."""
    rng = np.random.RandomState(seed)
    supports, counts = [], []
    for full in fulls:
        size = rng.randint(1, len(full) + 1) if support_size == "random" else int(support_size)
        if len(full) < size:
            raise ValueError(f"a context has only {len(full)} distinct endings (< {size})")
        common = np.intersect1d(priority, full)
        if common.size >= size:
            chosen = common[:size]
        elif common.size == 0:
            chosen = rng.choice(full, size, replace=False)
        else:
            rest = np.setdiff1d(full, priority, assume_unique=True)
            chosen = np.concatenate([common, rng.choice(rest, size - common.size, replace=False)])
        supports.append(np.asarray(chosen, dtype=np.int64))
        counts.append(rng.randint(1, max_count + 1, size=size))
    return supports, counts


def _synthetic(seed: int, support_size: int, max_count: int) -> NTPData:
    fulls, contexts, vocab, priority = _synthetic_endings()
    supports, counts = _synthetic_draws(fulls, priority, seed, support_size, max_count)
    return _assemble(supports, counts, contexts, vocab.words)


def synthetic_entropy_floor(support_size: int = 3, max_count: int = 2, m: int = 16, n: int | None = None
                            ) -> float:
    """Smallest empirical entropy H of the Synthetic recipe (``m`` contexts, ``support_size`` tokens each,
    counts in ``{1, ..., max_count}``), optionally among the draws with exactly ``n`` samples.

    H = sum_j (n_j / n) H(p_j) is a weighted mean of per-context entropies; each context's count vector
    is one of the finitely many ``c`` in ``{1..max_count}^support_size`` (up to order). The minimum over
    the m contexts with total ``n`` is a knapsack over (n_j, n_j H(p_j)) solved exactly by dynamic
    programming (min sum n_j H_j subject to sum n_j = n). With n = None, the minimum of H(p_j) over
    count vectors (every context at its most skewed vector; for 3 tokens and counts {1, 2}:
    H(1/4, 1/4, 1/2) = 1.0397).

    Paper A, "Synthetic" (m = 16, n = 72, H = 1.0166 reported); chapters a01, a05.
    """
    if min(support_size, max_count, m) < 1:
        raise ValueError("support_size, max_count and m must be positive")
    import itertools  # noqa: PLC0415

    options: dict[int, float] = {}  # n_j -> smallest n_j * H(p_j)
    for c in itertools.combinations_with_replacement(range(1, max_count + 1), support_size):
        arr = np.asarray(c, dtype=float)
        p = arr / arr.sum()
        nj = int(arr.sum())
        val = float(-np.sum(p * np.log(p)) * nj)
        options[nj] = min(options.get(nj, np.inf), val)
    if n is None:
        return min(v / k for k, v in options.items())
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    for _ in range(m):
        nxt = np.full(n + 1, np.inf)
        for nj, val in options.items():
            if nj <= n:
                nxt[nj:] = np.minimum(nxt[nj:], best[: n + 1 - nj] + val)
        best = nxt
    if not np.isfinite(best[n]):
        raise ValueError(f"no draw of the recipe has n = {n}")
    return float(best[n] / n)


#: Free choices of the Synthetic recipe searched by :func:`synthetic_recipe_search`.
SEARCH_SUPPORT_SIZES: tuple[int | str, ...] = (2, 3, 4, "random")
SEARCH_MAX_COUNTS = (2, 3, 4)


def synthetic_recipe_search(seeds: int = 300, support_sizes: Sequence[int | str] = SEARCH_SUPPORT_SIZES,
                            max_counts: Sequence[int] = SEARCH_MAX_COUNTS, use_cache: bool = True
                            ) -> dict[str, np.ndarray]:
    """n, V and H of the Synthetic recipe for every (support size, count range, seed) choice.

    The authors' sampler has three free choices besides the template file: the support per context
    (``set_s="equal"`` with ``s_len`` tokens, or ``"random"``: a size uniform in 1..#endings), the count
    range ``{1, ..., max_count}`` (their ``randint(1, repeat_range)``) and the RNG state (their seed 1634,
    set at import). Returns arrays ``support_size`` (str), ``max_count``, ``seed``, ``n``, ``V``, ``H``
    over ``seeds`` = 0..seeds-1 for every combination (cached on disk).

    Paper A, "Synthetic" (m = 16, V = 30, n = 72, H = 1.0166 reported); chapter a05.
    """
    if seeds < 1:
        raise ValueError("seeds must be positive")

    def build() -> dict[str, np.ndarray]:
        fulls, _, _, priority = _synthetic_endings()
        rows = []
        for size in support_sizes:
            for mc in max_counts:
                for seed in range(seeds):
                    supports, counts = _synthetic_draws(fulls, priority, seed, size, mc)
                    c = np.concatenate(counts).astype(float)
                    n = c.sum()
                    ent = sum(float(-np.sum(k / k.sum() * np.log(k / k.sum())) * k.sum()) for k in counts) / n
                    V = int(np.unique(np.concatenate(supports)).size)
                    rows.append((str(size), mc, seed, int(n), V, ent))
        cols = list(zip(*rows, strict=True))
        return {"support_size": np.array(cols[0]), "max_count": np.array(cols[1]), "seed": np.array(cols[2]),
                "n": np.array(cols[3]), "V": np.array(cols[4]), "H": np.array(cols[5])}

    params = {"seeds": seeds, "support_sizes": [str(s) for s in support_sizes],
              "max_counts": list(max_counts)}
    return cached_arrays("synthetic_recipe_search", params, build, use_cache)


def paper_a_synthetic(seed: int = 1634, support_size: int = 3, max_count: int = 2, use_cache: bool = True
                      ) -> NTPData:
    """Paper A's "Synthetic" dataset from the 160 template sentences (paper A Figs. 4 and 6).

    Recipe: lower-case and strip punctuation; context = the first 5 words, next token = the 6th
    (m = 16 contexts of 10 endings each); each context keeps ``support_size`` = 3 distinct endings,
    the prioritized words :data:`SYNTHETIC_PRIORITY` first (smallest tokenizer id first), the rest
    drawn uniformly without replacement; each kept ending gets a count uniform in
    ``{1, ..., max_count}`` = {1, 2}. Token ids follow the authors' word tokenizer (frequency rank,
    ties alphabetical, after ``<unk>, <s>, </s>``) so that the draws match theirs in kind.

    Paper: m = 16, V = 30, n = 72, H = 1.0166. With seed 1634 we get m = 16, V = 30, n = 71,
    H = 1.0636. Note that H = 1.0166 is *below* the smallest value this recipe can produce (every
    support has 3 tokens with counts in {1, 2}, so each context has entropy >= H(1,1,2) = 1.0397):
    the published numbers come from a variant of the recipe (e.g. a different template file).
    """
    if support_size < 1 or max_count < 1:
        raise ValueError("support_size and max_count must be positive")
    params = {"seed": seed, "support_size": support_size, "max_count": max_count}
    data, _ = cached("paper_a_synthetic", params, lambda: (_synthetic(seed, support_size, max_count), {}),
                     use_cache)
    return data


# ----------------------------------------------------------------------------------------------
# "Simplified TinyStories"
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PaperATinyStories:
    """Paper A's Simplified TinyStories with its construction record.

    ``origin[j]`` is the index (into ``base_contexts``) of the corpus context that column ``j`` was
    derived from, ``kind[j]`` is ``"original"``, ``"tense"`` or ``"synonym"``; ``base_counts`` maps
    each base context to its next-token corpus counts after filtering.
    """

    data: NTPData
    origin: np.ndarray
    kind: list[str]
    base_contexts: list[tuple[str, ...]]
    base_counts: list[dict[str, int]]


LAYOUTS = ("stories", "paragraphs")


def excerpt_lines(n_lines: int, layout: str = "stories") -> list[str]:
    """The first ``n_lines`` lines of a TinyStories-train excerpt in one of two file layouts.

    ``"stories"``: one story per line, stories separated by a blank line (a plain dump of the
    dataset's ``text`` field), so ``n_lines`` lines hold ``ceil(n_lines / 2)`` stories;
    ``"paragraphs"``: the official ``TinyStories-train.txt`` layout (one paragraph per line, a line
    ``<|endoftext|>`` after each story).

    Text of Paper A's Simplified TinyStories (Paper A, Figs. 1 and 6).
    """
    if layout == "paragraphs":
        return readers.read_tinystories_lines(n_lines)
    if layout == "stories":
        stories = readers.read_tinystories(files=[readers.TINYSTORIES_TRAIN_HEAD],
                                           max_stories=(n_lines + 1) // 2)
        lines: list[str] = []
        for story in stories:
            lines += [" ".join(story.split("\n")), ""]
        return lines[:n_lines]
    raise ValueError(f"unknown layout {layout!r}; valid: {LAYOUTS}")


def frequent_contexts(token_stream: Sequence[str], n_contexts: int, min_next: int = 2
                      ) -> list[tuple[tuple[str, ...], dict[str, int]]]:
    """Among the ``n_contexts`` most frequent 5-grams, those seen > 1 time, without ``<s>``, with at
    least ``min_next`` distinct next tokens, with their next-token counts (``getContextEntropy``).

    Context selection of Paper A's Simplified TinyStories (Paper A, Figs. 1 and 6).
    """
    vocab = WordVocab([token_stream])
    corpus = Corpus.from_sequences([vocab.encode(token_stream)], bound=len(vocab))
    windows = corpus.window_ids(CONTEXT_LENGTH)[-1]
    occurrences = np.bincount(windows.ids)  # all 5-grams, also the last one (no next token)
    order = np.lexsort((windows.first, -occurrences))[:n_contexts]  # ties: first appearance
    ctx_ids, nxt, _ = corpus.pairs(windows)
    bos = vocab.index.get(BOS, -1)
    out = []
    for k in order:
        start = windows.first[k]
        tokens = corpus.tokens[start:start + CONTEXT_LENGTH]
        if occurrences[k] <= 1 or bos in tokens:
            continue
        following = np.bincount(nxt[ctx_ids == k], minlength=len(vocab))
        if np.count_nonzero(following) < min_next:
            continue
        nz = np.flatnonzero(following)
        out.append((tuple(vocab.words[t] for t in tokens), {vocab.words[t]: int(following[t]) for t in nz}))
    return out


def cherry_pick_by_freq(contexts: Sequence[tuple[tuple[str, ...], dict[str, int]]], many: int = 8,
                        min_count: int = 2) -> list[tuple[tuple[str, ...], dict[str, int]]]:
    """Next-token filtering of paper A: contexts with >= ``many`` distinct next tokens keep only those
    seen >= ``min_count`` times; the retained next tokens form the vocabulary, to which every
    context is then restricted (a context left without next token is dropped)."""
    filtered = [(c, {w: n for w, n in nx.items() if n >= min_count} if len(nx) >= many else dict(nx))
                for c, nx in contexts]
    vocab = set().union(*(set(nx) for _, nx in filtered))
    out = []
    for (c, nx), (_, original) in zip(filtered, contexts, strict=True):
        kept = nx or {w: n for w, n in original.items() if w in vocab}
        if kept:
            out.append((c, kept))
    return out


def _simplified_tinystories(seed: int, n_lines: int, n_contexts: int, layout: str, max_count: int,
                            wordnet: bool) -> tuple[NTPData, dict[str, np.ndarray]]:
    stream: list[str] = []
    for text in excerpt_lines(n_lines, layout):
        words = words_spaced(text)
        if words:
            stream.extend([BOS, *words, EOS])
    if not stream:
        raise ValueError("empty corpus: no TinyStories text")
    base = cherry_pick_by_freq(frequent_contexts(stream, n_contexts))
    if not base:
        raise ValueError("no frequent context with >= 2 distinct next tokens; use more lines")
    synonyms = None
    if wordnet:
        wn = load_wordnet()  # checks the file (and its sha256) before any work on it
        synonyms = lambda word: wordnet_synonyms(word, wordnet=wn)  # noqa: E731
    expanded = expand_contexts([c for c, _ in base], wordnet=synonyms)
    next_vocab = WordVocab([list(nx) for _, nx in base])
    rng = np.random.RandomState(seed)
    supports = [np.sort(next_vocab.encode(list(base[j][1]))) for _, j, _ in expanded]
    counts = [rng.randint(1, max_count + 1, size=s.size) for s in supports]
    data = _assemble(supports, counts, [c for c, _, _ in expanded], next_vocab.words)
    extra = {
        "origin": np.array([j for _, j, _ in expanded]),
        "kind": np.array([k for _, _, k in expanded]),
        "base_contexts": np.array([" ".join(c) for c, _ in base]),
        "base_next": np.array(["\t".join(f"{w} {n}" for w, n in nx.items()) for _, nx in base]),
    }
    return data, extra


def paper_a_tinystories_details(seed: int = 1634, n_lines: int = 2000, n_contexts: int = 50,
                                layout: str = "stories", max_count: int = 4, use_cache: bool = True,
                                wordnet: bool = True) -> PaperATinyStories:
    """:func:`paper_a_tinystories` with the construction record (origins of the variants, base counts).

    Paper A, Figs. 1 and 6.
    """
    if n_lines < 1 or n_contexts < 1 or max_count < 1:
        raise ValueError("n_lines, n_contexts and max_count must be positive")
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; valid: {LAYOUTS}")
    if wordnet:
        check_wordnet_file(wordnet_zip(), verify=False)  # a missing file is named before any work
    # "recipe": 2 = WordNet step and the authors' hand-table sizes (older caches are not reused)
    params = {"seed": seed, "n_lines": n_lines, "n_contexts": n_contexts, "layout": layout,
              "max_count": max_count, "wordnet": wordnet, "recipe": 2}
    data, extra = cached("paper_a_tinystories", params,
                         lambda: _simplified_tinystories(seed, n_lines, n_contexts, layout, max_count,
                                                         wordnet), use_cache)
    base_counts = [dict((w, int(n)) for w, n in (item.rsplit(" ", 1) for item in row.split("\t")))
                   for row in extra["base_next"].tolist()]
    return PaperATinyStories(data, extra["origin"].astype(np.int64), extra["kind"].tolist(),
                             [tuple(c.split(" ")) for c in extra["base_contexts"].tolist()], base_counts)


def paper_a_tinystories(seed: int = 1634, n_lines: int = 2000, n_contexts: int = 50, layout: str = "stories",
                        max_count: int = 4, use_cache: bool = True, wordnet: bool = True) -> NTPData:
    """Paper A's "Simplified TinyStories" (paper A Figs. 1 and 6; not paper B's dataset of the same name).

    1. Text: the first ``n_lines`` lines of an excerpt of TinyStories-train (:func:`excerpt_lines`;
       blank lines dropped), lower-cased with ``. , ! ? ( )`` split off, each line wrapped in
       ``<s> ... </s>`` and all concatenated (5-grams may span lines, as in the authors' token file).
    2. Contexts: among the ``n_contexts`` most frequent 5-grams, those without ``<s>`` that occur
       more than once and have >= 2 distinct next tokens (:func:`frequent_contexts`).
    3. :func:`cherry_pick_by_freq`: contexts with >= 8 distinct next tokens keep only the next
       tokens seen >= 2 times; all contexts are restricted to the retained next-token set.
    4. Expansion (:mod:`ntputils.data.corpora.variants`): each context is followed by its tense variant,
       its hand-table synonym variants and (``wordnet=True``) up to 10 WordNet synonyms of its other
       adjectives and nouns (:mod:`ntputils.data.corpora.wordnet`, WordNet 3.0 from the shared data);
       every variant inherits its original's support.
    5. Counts re-sampled uniformly in ``{1, ..., max_count}`` = {1,..,4} per (context, support token)
       with ``np.random.RandomState(seed)``; the corpus counts are not used.

    Paper: m = 403, V = 104, n = 5110, H = 1.6597 (re-run 1.6156). The authors' excerpt file
    ("tiny_2000lines") is not public. ``layout="stories"`` (default) reads its 2,000 lines as a
    one-story-per-line dump with blank lines between stories (the first 1,000 stories of
    TinyStories-train); ``layout="paragraphs"`` as the first 2,000 lines of the official
    ``TinyStories-train.txt`` (one paragraph per line), which has far fewer frequent contexts. Chapter a05
    tabulates both against the paper.
    """
    return paper_a_tinystories_details(seed, n_lines, n_contexts, layout, max_count, use_cache, wordnet).data
