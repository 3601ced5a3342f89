"""Paper A's TinyStories-100 (Fig. 3): windows of a 64-piece SentencePiece BPE over the first 100 stories.

:func:`tinystories_bpe64`: a sentencepiece BPE of 64 pieces trained on the first 2,000 stories
(:mod:`ntputils.data.corpora.bpe64`), the first 100 stories encoded as ``<s> story </s>``, every window of
6 consecutive tokens inside a story with its next token (paper A Fig. 3; recipe from the authors' legacy
code). Paper B's text corpora are in :mod:`ntputils.data.corpora.paper_b_corpora`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ntputils.data.corpora import readers
from ntputils.data.corpora.bpe64 import piece_strings, train_sentencepiece_bpe
from ntputils.data.corpora.cache import cached
from ntputils.data.corpora.ngrams import Corpus, pair_counts
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
                      tokenizer_stories: int = 2000, lowercase: bool = False, use_cache: bool = True
                      ) -> WindowedStories:
    """Paper A's TinyStories-100 data (paper A Fig. 3; recipe from the authors' legacy code).

    A sentencepiece BPE with ``vocab_size`` = 64 pieces (``<unk>, <s>, </s>``, characters, merges;
    the authors' options, case kept unless ``lowercase``;
    :func:`ntputils.data.corpora.bpe64.train_sentencepiece_bpe`)
    is trained on the first ``tokenizer_stories`` stories of TinyStories-train, one story per line; the
    first ``n_stories`` stories are encoded as ``<s> story </s>`` and every window of ``context_length``
    consecutive tokens inside a story becomes a (context, next token) pair. The authors took their
    stories from the shard ``data00.json`` of ``TinyStories_all_data``, which is not in the shared data:
    we use the opening of ``TinyStories-train.txt``.
    """
    if min(n_stories, vocab_size, context_length, tokenizer_stories) < 1:
        raise ValueError("n_stories, vocab_size, context_length and tokenizer_stories must be positive")
    train_texts = readers.read_tinystories(files=[readers.TINYSTORIES_TRAIN_HEAD],
                                           max_stories=max(tokenizer_stories, n_stories))
    if len(train_texts) < n_stories:
        raise ValueError(f"only {len(train_texts)} stories available, {n_stories} requested")
    tok = train_sentencepiece_bpe(train_texts[:tokenizer_stories], vocab_size, lowercase=lowercase,
                                  name="tinystories", use_cache=use_cache)
    strings = piece_strings(tok)
    bos, eos = tok.piece_to_id("<s>"), tok.piece_to_id("</s>")
    size = tok.get_piece_size()

    def build() -> tuple[NTPData, dict[str, np.ndarray]]:
        stories = [" ".join((s.lower() if lowercase else s).split()) for s in train_texts[:n_stories]]
        seqs = [np.concatenate([[bos], np.asarray(ids, dtype=np.int64), [eos]])
                for ids in tok.encode(stories)]
        corpus = Corpus.from_sequences(seqs, bound=size)
        windows = corpus.window_ids(context_length)[-1]
        ctx, nxt, starts = corpus.pairs(windows)
        if ctx.size == 0:
            raise ValueError(f"no story is longer than context_length={context_length}")
        distinct, first_pair, column = np.unique(ctx, return_index=True, return_inverse=True)
        order = np.argsort(first_pair, kind="stable")  # columns in order of first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        column = rank[column.ravel()]
        r, c, n = pair_counts(column, nxt, size)
        counts = sp.coo_array((n, (r, c)), shape=(size, distinct.size)).tocsc()
        first = windows.first[distinct[order]]
        contexts = [tuple(int(t) for t in corpus.tokens[f:f + context_length]) for f in first]
        win = corpus.tokens[starts[:, None] + np.arange(context_length)]
        return from_counts(counts, contexts, strings), {"windows": win, "targets": nxt, "columns": column}

    params = {"n_stories": n_stories, "vocab_size": vocab_size, "context_length": context_length,
              "tokenizer_stories": tokenizer_stories, "lowercase": lowercase, "tokenizer": "sentencepiece"}
    data, extra = cached("tinystories_bpe64", params, build, use_cache)
    return WindowedStories(data, extra["windows"].astype(np.int64), extra["targets"].astype(np.int64),
                           extra["columns"].astype(np.int64), tok, strings)
