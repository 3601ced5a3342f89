"""Paper A's TinyStories-100 (Fig. 3): windows of a 64-token character BPE over the first 100 stories.

:func:`tinystories_bpe64`: a BPE of 64 tokens trained on the first 2,000 stories, the first 100
stories encoded as ``<s> story </s>``, every window of 6 consecutive tokens inside a story with its
next token (paper A Fig. 3; recipe from the authors' legacy code). Paper B's text corpora are in
:mod:`ntputils.data.corpora.paper_b_corpora`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ntputils.data.corpora import readers
from ntputils.data.corpora.cache import cached
from ntputils.data.corpora.ngrams import Corpus, pair_counts
from ntputils.data.corpora.tokenize import encode_all, normalize_simple, token_strings, train_char_bpe
from ntputils.data.ntp import NTPData, from_counts


@dataclass(frozen=True)
class WindowedStories:
    """Windows of a tokenized corpus for next-token training, with their NTP summary.

    ``windows`` (N x T) are all windows of ``T`` tokens inside a story, ``targets`` (N,) the tokens
    that follow them and ``columns`` (N,) the column of ``data`` (distinct context) of each window;
    ``data`` has V = the tokenizer's vocabulary (rows that never occur as next token stay empty).

    Paper A, Fig. 3 (TinyStories-100).
    """

    data: NTPData
    windows: np.ndarray
    targets: np.ndarray
    columns: np.ndarray
    tokenizer: Any
    token_strings: list[str]


def tinystories_bpe64(n_stories: int = 100, vocab_size: int = 64, context_length: int = 6,
                      tokenizer_stories: int = 2000, alphabet_size: int = 40, use_cache: bool = True
                      ) -> WindowedStories:
    """Paper A's TinyStories-100 data (paper A Fig. 3; recipe from the authors' legacy code).

    A character BPE with ``vocab_size`` = 64 tokens (``<unk>, <s>, </s>``, the ``alphabet_size`` most
    frequent characters of the lower-cased text, merges) is trained on the first
    ``tokenizer_stories`` stories of TinyStories-train; the first ``n_stories`` stories are encoded
    as ``<s> story </s>`` and every window of ``context_length`` consecutive tokens inside a story
    becomes a (context, next token) pair. RECONSTRUCTED: the legacy code used sentencepiece (case
    kept, byte fallback); we lower-case so that 64 tokens cover the alphabet.

    Used in: a07.
    """
    if min(n_stories, vocab_size, context_length, tokenizer_stories) < 1:
        raise ValueError("n_stories, vocab_size, context_length and tokenizer_stories must be positive")
    train_texts = readers.read_tinystories(files=[readers.TINYSTORIES_TRAIN_HEAD],
                                           max_stories=max(tokenizer_stories, n_stories))
    tok = train_char_bpe(train_texts[:tokenizer_stories], vocab_size, alphabet_size, name="tinystories")
    strings = token_strings(tok)
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")

    def build() -> tuple[NTPData, dict[str, np.ndarray]]:
        stories = [normalize_simple(s) for s in train_texts[:n_stories]]
        seqs = [np.concatenate([[bos], ids, [eos]]) for ids in encode_all(tok, stories)]
        corpus = Corpus.from_sequences(seqs, bound=tok.get_vocab_size())
        windows = corpus.window_ids(context_length)[-1]
        ctx, nxt, starts = corpus.pairs(windows)
        if ctx.size == 0:
            raise ValueError(f"no story is longer than context_length={context_length}")
        distinct, first_pair, column = np.unique(ctx, return_index=True, return_inverse=True)
        order = np.argsort(first_pair, kind="stable")  # columns in order of first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        column = rank[column.ravel()]
        r, c, n = pair_counts(column, nxt, tok.get_vocab_size())
        counts = sp.coo_array((n, (r, c)), shape=(tok.get_vocab_size(), distinct.size)).tocsc()
        first = windows.first[distinct[order]]
        contexts = [tuple(int(t) for t in corpus.tokens[f:f + context_length]) for f in first]
        win = corpus.tokens[starts[:, None] + np.arange(context_length)]
        return from_counts(counts, contexts, strings), {"windows": win, "targets": nxt, "columns": column}

    params = {"n_stories": n_stories, "vocab_size": vocab_size, "context_length": context_length,
              "tokenizer_stories": tokenizer_stories, "alphabet_size": alphabet_size}
    data, extra = cached("tinystories_bpe64", params, build, use_cache)
    return WindowedStories(data, extra["windows"].astype(np.int64), extra["targets"].astype(np.int64),
                           extra["columns"].astype(np.int64), tok, strings)
