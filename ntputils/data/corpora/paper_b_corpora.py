"""Paper B's "Simplified TinyStories" / "Simplified WikiText" (sec. 4.1).

Paper B (sec. 4.1, [B:L140]): "V = 1,000 vocabulary, m = 10,000 contexts, sampling frequent contexts
of lengths 2-6". Tokenizer, thresholds and the out-of-vocabulary policy are UNKNOWN; the figures mark
word-initial tokens with ``#``, so a subword tokenizer was used. Our RECONSTRUCTION
(:func:`paper_b_text`):

1. text: TinyStories -- all 5,042 stories of the local sample (the three original-case files of
   ``shared/data/tinystories``; the optional lowercased file is left out: lower case would split
   every word into a second token), one sequence per story, paragraphs joined by ``\n``; this is a
   sample of ~5k stories, not the whole dataset (~2.1M stories);
   WikiText -- the WikiText-2 train paragraphs (non-blank, non-heading lines); for the GPT-2
   tokenizer they are detokenized (:func:`detokenize_wikitext`: ``@-@`` -> ``-``, no space before
   punctuation) and cut at every ``<unk>``, so no context spans an unknown word and ``<unk>`` is
   never a token;
2. tokens: **GPT-2's byte-level BPE** (``tokenizer="gpt2"``, the default; the shared tokenizer files,
   :mod:`.gpt2_tokenizer`), a byte-level BPE with ``bpe_vocab_size`` = 8,192 trained on that text
   (``"bpe"``), or whitespace/punctuation words (``"word"``); tokens are shown with ``#`` for a
   leading space;
3. next-token vocabulary: the ``V`` most frequent tokens of the text (rows in that order);
4. pairs: every window of length ``T`` in ``context_lengths`` inside a sequence, with the token that
   follows it; OOV policy: a pair whose next token is outside the ``V`` is dropped;
5. contexts: the ``m`` most frequent windows, counted over their in-vocabulary pairs, with an equal
   quota per length (``m / len(context_lengths)``; ``selection="global"`` takes the overall most
   frequent instead, which favours short contexts); contexts are never empty by construction;
6. ``counts[z, j]`` = number of times token ``z`` follows context ``j`` (real corpus counts).

Paper A's TinyStories-100 (Fig. 3) lives in :mod:`ntputils.data.corpora.tinystories100`.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ntputils.data.corpora import readers
from ntputils.data.corpora.cache import cached, cached_arrays
from ntputils.data.corpora.gpt2_tokenizer import gpt2_token_strings, load_gpt2_tokenizer
from ntputils.data.corpora.ngrams import Corpus, pair_counts, top_counts
from ntputils.data.corpora.tokenize import (
    WordVocab,
    encode_all,
    token_strings,
    train_bpe,
    word_split,
)
from ntputils.data.ntp import NTPData, from_counts

CORPORA = ("tinystories", "wikitext")
TOKENIZERS = ("gpt2", "bpe", "word")
SELECTIONS = ("per_length", "global")
BPE_VOCAB_SIZE = 8192


_WT_AT = re.compile(r" @(.)@ ")
_WT_BEFORE = re.compile(r" ([.,;:!?%)\]}]|n't\b|'(?:s|t|re|ve|m|ll|d)\b)")
_WT_AFTER = re.compile(r"([(\[{$]) ")
_UNK = re.compile(r"\s*<unk>\s*")


def detokenize_wikitext(line: str) -> str:
    """Undo WikiText's tokenization marks: ``" @-@ "`` -> ``"-"`` (also ``@,@``, ``@.@``), no space before
    ``. , ; : ! ? % ) ] }`` and clitics (``'s``, ``'t`` as in ``wasn 't`` ...), none after ``( [ { $``.

    So that GPT-2's tokenizer sees ordinary text (Paper B, Sec. 5.1, Simplified WikiText).
    """
    return _WT_AFTER.sub(r"\1", _WT_BEFORE.sub(r"\1", _WT_AT.sub(r"\1", line)))


def split_at_unknown(text: str) -> list[str]:
    """The pieces of ``text`` between ``<unk>`` marks; a piece after a mark that starts with a letter or
    digit gets a leading space (it follows a word), empty pieces are dropped.

    Contexts of Paper B, Sec. 5.1 never span WikiText's unknown words.
    """
    parts = _UNK.split(text)
    return [(" " + t if i and t[:1].isalnum() else t) for i, t in enumerate(parts) if t.strip()]


def corpus_texts(name: str, tokenizer: str = "bpe") -> list[str]:
    """The sequences of a corpus: TinyStories stories, or WikiText-2 train paragraphs (no headings).

    With ``tokenizer="gpt2"`` WikiText paragraphs are detokenized (:func:`detokenize_wikitext`) and cut
    at ``<unk>`` (:func:`split_at_unknown`).

    The corpora of Paper B, Sec. 5.1 (TinyStories, WikiText-2).
    """
    if name == "tinystories":
        return readers.read_tinystories()
    if name == "wikitext":
        lines = [line for line in readers.read_wikitext("train") if not readers.is_heading(line)]
        if tokenizer == "gpt2":
            return [piece for line in lines for piece in split_at_unknown(detokenize_wikitext(line))]
        return lines
    raise ValueError(f"unknown corpus {name!r}; valid: {CORPORA}")


def tokenize_corpus(name: str, tokenizer: str = "bpe", bpe_vocab_size: int = BPE_VOCAB_SIZE
                    ) -> tuple[list[np.ndarray], list[str]]:
    """Token-id sequences of a corpus and the display string of every id (cached for BPE).

    Paper B, Sec. 5.1 (Simplified TinyStories/WikiText).
    """
    texts = corpus_texts(name, tokenizer)
    if tokenizer == "gpt2":
        tok = load_gpt2_tokenizer()

        def encode_gpt2() -> dict[str, np.ndarray]:
            seqs = encode_all(tok, texts)
            return {"tokens": np.concatenate(seqs).astype(np.int32),
                    "lengths": np.array([s.size for s in seqs])}

        key = {"corpus": name, "tokenizer": "gpt2", "texts": len(texts), "chars": sum(len(t) for t in texts),
               "version": 1}
        arrays = cached_arrays("encoded", key, encode_gpt2)
        seqs = np.split(arrays["tokens"].astype(np.int64), np.cumsum(arrays["lengths"])[:-1])
        return seqs, gpt2_token_strings(tok)
    if tokenizer == "bpe":
        tok = train_bpe(texts, bpe_vocab_size, name=name, unk="<unk>" if name == "wikitext" else None)
        strings = token_strings(tok)

        def encode() -> dict[str, np.ndarray]:
            seqs = encode_all(tok, texts)
            return {"tokens": np.concatenate(seqs), "lengths": np.array([s.size for s in seqs])}

        fingerprint = hashlib.sha256(tok.to_str().encode()).hexdigest()[:16]
        key = {"corpus": name, "size": bpe_vocab_size, "tokenizer": fingerprint}
        arrays = cached_arrays("encoded", key, encode)
        seqs = np.split(arrays["tokens"].astype(np.int64), np.cumsum(arrays["lengths"])[:-1])
        return seqs, strings
    if tokenizer == "word":
        words = [word_split(t) for t in texts]
        vocab = WordVocab(words)
        return [vocab.encode(w) for w in words], vocab.words
    raise ValueError(f"unknown tokenizer {tokenizer!r}; valid: {TOKENIZERS}")


def select_contexts(corpus: Corpus, next_row: np.ndarray, lengths: Sequence[int], m: int, selection: str
                    ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, ...]]]:
    """Columns and rows of all kept pairs, and the token tuples of the kept contexts.

    ``next_row[t]`` is the row of token ``t`` (``-1`` = outside the vocabulary, pair dropped).

    Frequent contexts of lengths 2-6, Paper B, Sec. 5.1.
    """
    windows = {w.length: w for w in corpus.window_ids(max(lengths))}
    per_length: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []  # (T, ctx ids, rows, first)
    for T in lengths:
        if T not in windows:
            continue
        ctx, nxt, _ = corpus.pairs(windows[T])
        rows = next_row[nxt]
        keep = rows >= 0
        per_length.append((T, ctx[keep], rows[keep], windows[T].first))
    if not per_length:
        raise ValueError(f"empty corpus: no sequence is longer than the context lengths {list(lengths)}")
    if selection == "per_length":
        quotas = [m // len(per_length) + (i < m % len(per_length)) for i in range(len(per_length))]
        chosen = [top_counts(ctx, q) for (_, ctx, _, _), q in zip(per_length, quotas, strict=True)]
    elif selection == "global":
        cand = [top_counts(ctx, m) for _, ctx, _, _ in per_length]
        tags = np.concatenate([np.full(c[0].size, i) for i, c in enumerate(cand)])
        ids = np.concatenate([c[0] for c in cand])
        freq = np.concatenate([c[1] for c in cand])
        order = np.lexsort((ids, tags, -freq))[:m]
        chosen = [(ids[order][tags[order] == i], freq[order][tags[order] == i]) for i in range(len(cand))]
    else:
        raise ValueError(f"unknown selection {selection!r}; valid: {SELECTIONS}")

    cols_all, rows_all, contexts, offset = [], [], [], 0
    for (T, ctx, rows, first), (ids, _) in zip(per_length, chosen, strict=True):
        col_of = np.full(int(ctx.max(initial=0)) + 1, -1, dtype=np.int64)
        col_of[ids] = offset + np.arange(ids.size)
        cols = col_of[ctx]
        sel = cols >= 0
        cols_all.append(cols[sel])
        rows_all.append(rows[sel])
        contexts += [tuple(int(t) for t in corpus.tokens[first[k]:first[k] + T]) for k in ids]
        offset += ids.size
    return np.concatenate(cols_all), np.concatenate(rows_all), contexts


def sample_documents(seqs: Sequence[np.ndarray], documents: float, seed: int) -> list[np.ndarray]:
    """A seeded sample without replacement of ``round(documents * len(seqs))`` sequences (at least one),
    kept in corpus order; ``documents == 1`` returns every sequence. What a seed varies when a table asks how
    much a result depends on the corpus sample."""
    if not 0 < documents <= 1:
        raise ValueError(f"documents must be a share in (0, 1], got {documents}")
    if documents == 1:
        return list(seqs)
    n = max(1, round(documents * len(seqs)))
    keep = np.sort(np.random.default_rng(seed).choice(len(seqs), size=n, replace=False))
    return [seqs[i] for i in keep]


def _build_paper_b(name: str, V: int, m: int, lengths: tuple[int, ...], tokenizer: str, bpe_vocab_size: int,
                   selection: str, documents: float = 1.0, sample_seed: int = 0
                   ) -> tuple[NTPData, dict[str, np.ndarray]]:
    start = time.perf_counter()
    seqs, strings = tokenize_corpus(name, tokenizer, bpe_vocab_size)
    seqs = sample_documents(seqs, documents, sample_seed)
    corpus = Corpus.from_sequences(seqs, bound=len(strings))
    freq = np.bincount(corpus.tokens, minlength=len(strings))
    top = np.lexsort((np.arange(freq.size), -freq))[:V]
    top = top[freq[top] > 0]
    next_row = np.full(len(strings), -1, dtype=np.int64)
    next_row[top] = np.arange(top.size)
    cols, rows, contexts = select_contexts(corpus, next_row, lengths, m, selection)
    r, c, n = pair_counts(cols, rows, top.size)
    counts = sp.coo_array((n, (r, c)), shape=(top.size, len(contexts))).tocsc()
    data = from_counts(counts, contexts, [strings[t] for t in top], strings)
    return data, {"next_token_ids": top, "build_seconds": np.array(time.perf_counter() - start)}


def paper_b_text(name: str = "tinystories", V: int = 1000, m: int = 10000,
                 context_lengths: Sequence[int] = (2, 3, 4, 5, 6), tokenizer: str = "gpt2",
                 bpe_vocab_size: int = BPE_VOCAB_SIZE, selection: str = "per_length", use_cache: bool = True,
                 documents: float = 1.0, sample_seed: int = 0) -> NTPData:
    """Paper B's Simplified TinyStories (``name="tinystories"``) or Simplified WikiText (``"wikitext"``).

    ``documents < 1`` counts a seeded sample of that share of the corpus's sequences (stories, paragraphs)
    instead of all of them (:func:`sample_documents`; ``sample_seed`` picks it).

    Returns V x m counts: rows = the ``V`` most frequent tokens (``vocab``, ``#`` = word start),
    columns = the ``m`` selected contexts (token-id tuples into ``context_vocab``, the whole tokenizer
    vocabulary). See the module docstring for the recipe and the OOV policy (drop). Built once per
    parameter set and cached.
    """
    if name not in CORPORA:
        raise ValueError(f"unknown corpus {name!r}; valid: {CORPORA}")
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; valid: {TOKENIZERS}")
    if selection not in SELECTIONS:
        raise ValueError(f"unknown selection {selection!r}; valid: {SELECTIONS}")
    lengths = tuple(sorted({int(T) for T in context_lengths}))
    if not lengths or lengths[0] < 1:
        raise ValueError(f"context_lengths must be positive integers, got {context_lengths}")
    if V < 1 or m < 1:
        raise ValueError(f"V and m must be positive, got V={V}, m={m}")
    if not 0 < documents <= 1:
        raise ValueError(f"documents must be a share in (0, 1], got {documents}")
    params: dict[str, Any] = {"name": name, "V": V, "m": m, "lengths": lengths, "tokenizer": tokenizer,
                              "bpe": bpe_vocab_size if tokenizer == "bpe" else None, "selection": selection,
                              "texts": 2 if tokenizer == "gpt2" else 1}
    if documents < 1:
        params |= {"documents": float(documents), "sample_seed": int(sample_seed)}
    data, _ = cached("paper_b_text", params,
                     lambda: _build_paper_b(name, V, m, lengths, tokenizer, bpe_vocab_size, selection,
                                            documents, sample_seed),
                     use_cache)
    return data

