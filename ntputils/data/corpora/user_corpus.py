"""Any corpus, any tokenizer: the NTP data of a reader's own text (chapter d01, ``ntpbook geometry``).

Paper A, Sec. 2 writes a corpus as distinct contexts ``x_j`` with empirical next-token distributions
``p_j`` and support sets ``S_j``; this module computes them for a text the reader names:

* :func:`resolve_path` -- a path, ``~`` expanded, or ``data:REL`` for ``$NTP_DATA_DIR/REL``;
* :func:`read_documents` -- a ``.txt`` / ``.txt.xz`` file or a folder of them, split into documents
  (``<|endoftext|>`` lines, blank lines, lines or files), whitespace runs joined into one space;
* :func:`load_tokenizer` -- a tokenizer folder or file: ``tokenizer.json`` (Hugging Face ``tokenizers``),
  a SentencePiece ``*.model`` (this book's models), or GPT-2's ``encoder.json(.xz)`` + ``vocab.bpe``
  / ``vocab.json`` + ``merges.txt``;
* :func:`corpus_contexts` -- every window of each context length inside each document with its next
  token, distinct windows numbered exactly by :class:`~ntputils.data.corpora.ngrams.Corpus` (chained
  ``np.unique`` on packed integer keys: no hashing, no collisions, memory linear in the tokens), then
  the ``n_contexts`` first-seen or most frequent contexts as a sparse V x m count matrix.

Windows never cross a document boundary; a SentencePiece tokenizer with ``<s>``/``</s>`` encodes each
document as ``<s> document </s>`` (the recipe of Paper A, Fig. 3 and chapter a07), any other tokenizer
encodes the document as it is.
"""

from __future__ import annotations

import lzma
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ntputils import paths
from ntputils.data.corpora.ngrams import Corpus, pair_counts
from ntputils.data.ntp import NTPData, from_counts

DATA_PREFIX = "data:"
UNITS = ("auto", "story", "paragraph", "line", "file")
SELECTIONS = ("first", "frequent")
TEXT_SUFFIXES = (".txt", ".txt.xz", ".md")
END_OF_TEXT = "<|endoftext|>"


class CorpusError(ValueError):
    """A corpus that cannot give contexts: missing, empty, unreadable or too short for the windows."""


def resolve_path(spec: str | Path, what: str = "path") -> Path:
    """``spec`` as a path: ``data:REL`` is ``$NTP_DATA_DIR/REL`` (the shared data), ``~`` is expanded.

    Raises ``FileNotFoundError`` naming ``what`` and the path when nothing is there.
    """
    text = str(spec).strip()
    if not text:
        raise FileNotFoundError(f"{what}: no path given")
    shared = text.startswith(DATA_PREFIX)
    path = paths.data_dir() / text[len(DATA_PREFIX):] if shared else Path(text).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"{what}: {path} does not exist")
    return path


def _read_text(path: Path) -> str:
    try:
        raw = lzma.decompress(path.read_bytes()) if path.name.endswith(".xz") else path.read_bytes()
        return raw.decode("utf-8")
    except (lzma.LZMAError, UnicodeDecodeError) as err:
        packed = " in xz" if path.name.endswith(".xz") else ""
        raise CorpusError(f"corpus file {path} is not UTF-8 text{packed} "
                          f"({type(err).__name__}: {err})") from None


def _split(text: str, unit: str) -> list[str]:
    if unit == "auto":
        unit = "story" if END_OF_TEXT in text else "paragraph"
    if unit == "story":
        parts = text.split(END_OF_TEXT)
    elif unit == "paragraph":
        parts = re.split(r"\n[ \t\r\f\v]*\n", text)  # a blank line: nothing but spaces between two ends
    elif unit == "line":
        parts = text.splitlines()
    else:  # "file"
        parts = [text]
    return [" ".join(p.split()) for p in parts if p.strip()]


def corpus_files(path: Path) -> list[Path]:
    """The text files of a corpus: ``path`` itself, or every ``*.txt``, ``*.txt.xz``, ``*.md`` below it
    (sorted, hidden folders skipped)."""
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(TEXT_SUFFIXES)
                   and not any(part.startswith(".") for part in p.relative_to(path).parts))
    if not files:
        raise CorpusError(f"corpus folder {path} holds no text file ({', '.join(TEXT_SUFFIXES)})")
    return files


def read_documents(path: str | Path, unit: str = "auto", max_documents: int = 0) -> list[str]:
    """The documents of a corpus file or folder, in file order (``max_documents`` > 0: the first ones).

    ``unit``: ``"story"`` splits at ``<|endoftext|>`` (TinyStories' format), ``"paragraph"`` at blank
    lines, ``"line"`` at line ends, ``"file"`` keeps each file whole; ``"auto"``: ``story`` when the
    text has ``<|endoftext|>``, else ``paragraph``. Inside a document every run of whitespace becomes one
    space. Raises :class:`CorpusError` for an empty corpus (naming the path).
    """
    if unit not in UNITS:
        raise CorpusError(f"unit must be one of {UNITS}, got {unit!r}")
    if isinstance(max_documents, bool) or not isinstance(max_documents, int | np.integer) \
            or max_documents < 0:
        raise CorpusError(f"max_documents must be an int >= 0 (0: all), got {max_documents!r}")
    root = resolve_path(path, "corpus")
    docs: list[str] = []
    for file in corpus_files(root):
        docs.extend(_split(_read_text(file), unit))
        if max_documents and len(docs) >= max_documents:
            return docs[:max_documents]
    if not docs:
        raise CorpusError(f"empty corpus: {root} holds no text")
    return docs


# ---------------------------------------------------------------------------------------------
# tokenizers
# ---------------------------------------------------------------------------------------------
@dataclass
class TextTokenizer:
    """A tokenizer read from a folder: ``encode`` (documents -> id arrays), the vocabulary size, readable
    token strings, and the ids that frame a document (``None``: none)."""

    kind: str
    path: Path
    vocab_size: int
    strings: list[str]
    encode_one: Callable[[str], list[int]] = field(repr=False)
    bos: int | None = None
    eos: int | None = None

    def encode(self, documents: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each document, framed by ``bos``/``eos`` when the tokenizer has them."""
        head = [] if self.bos is None else [self.bos]
        tail = [] if self.eos is None else [self.eos]
        return [np.asarray(head + list(self.encode_one(doc)) + tail, dtype=np.int64) for doc in documents]


def _sentencepiece(path: Path) -> TextTokenizer:
    import sentencepiece as spm

    from ntputils.data.corpora.bpe64 import piece_strings

    try:
        proc = spm.SentencePieceProcessor(model_file=str(path))
    except (OSError, RuntimeError) as err:
        raise CorpusError(f"tokenizer {path} is not a SentencePiece model ({err})") from None
    bos, eos = proc.bos_id(), proc.eos_id()
    return TextTokenizer("sentencepiece", path, proc.get_piece_size(), piece_strings(proc),
                         lambda text: proc.encode(text), bos if bos >= 0 else None, eos if eos >= 0 else None)


def _hf_tokenizer(path: Path) -> TextTokenizer:
    from tokenizers import Tokenizer

    from ntputils.data.corpora.tokenize import token_strings

    try:
        tok = Tokenizer.from_file(str(path))
    except Exception as err:  # noqa: BLE001 - tokenizers raises a bare Exception for a bad file
        raise CorpusError(f"tokenizer {path} is not a Hugging Face tokenizer.json ({err})") from None
    return TextTokenizer("tokenizers", path, tok.get_vocab_size(), token_strings(tok),
                         lambda text: tok.encode(text, add_special_tokens=False).ids)


def _gpt2_files(folder: Path) -> TextTokenizer:
    import json

    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    from ntputils.data.corpora.gpt2_tokenizer import END_OF_TEXT as EOT
    from ntputils.data.corpora.gpt2_tokenizer import gpt2_token_strings, load_gpt2_tokenizer

    if (folder / "vocab.bpe").exists():  # the shared layout (checksums in the data README when it is GPT-2's)
        shared = folder.resolve() == (paths.data_dir() / "gpt2-tokenizer").resolve()
        tok = load_gpt2_tokenizer(folder, verify=shared)
    else:  # Hugging Face's save_pretrained layout
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        lines = (folder / "merges.txt").read_text(encoding="utf-8").split("\n")
        merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        if EOT in vocab:
            tok.add_special_tokens([AddedToken(EOT, special=True)])
    return TextTokenizer("gpt2-bpe", folder, tok.get_vocab_size(), gpt2_token_strings(tok),
                         lambda text: tok.encode(text, add_special_tokens=False).ids)


def load_tokenizer(path: str | Path) -> TextTokenizer:
    """The tokenizer in ``path`` (a folder or a file), by what is there, in this order:
    ``tokenizer.json``; a SentencePiece ``*.model``; ``encoder.json(.xz)`` + ``vocab.bpe`` or
    ``vocab.json`` + ``merges.txt`` (GPT-2's byte-level BPE). Raises ``FileNotFoundError`` naming the
    files looked for when none is there.
    """
    root = resolve_path(path, "tokenizer")
    if root.is_file():
        return _sentencepiece(root) if root.suffix == ".model" else _hf_tokenizer(root)
    if (root / "tokenizer.json").exists():
        return _hf_tokenizer(root / "tokenizer.json")
    models_ = sorted(root.glob("*.model"))
    if models_:
        return _sentencepiece(models_[0])
    gpt2 = [root / "encoder.json", root / "encoder.json.xz", root / "vocab.json"]
    if any(p.exists() for p in gpt2) and ((root / "vocab.bpe").exists() or (root / "merges.txt").exists()):
        return _gpt2_files(root)
    raise FileNotFoundError(f"tokenizer: {root} holds none of tokenizer.json, a SentencePiece *.model, "
                            "encoder.json(.xz) + vocab.bpe, vocab.json + merges.txt")


# ---------------------------------------------------------------------------------------------
# contexts at scale
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CorpusContexts:
    """The NTP data of a corpus (``data``: V x m counts of the kept contexts) and what it took.

    ``tokens`` in the corpus, ``windows`` (context, next token) pairs of all lengths, ``distinct``
    distinct contexts among them, ``kept_windows`` the pairs of the kept contexts, ``array_bytes`` the
    largest set of index arrays held at once while counting (the measured memory of the method),
    ``seconds`` the wall time.

    The corpus statistics of Paper A, Sec. 2 (``m`` distinct contexts, supports ``S_j``).
    """

    data: NTPData
    tokens: int
    windows: int
    distinct: int
    kept_windows: int
    array_bytes: int
    seconds: float
    context_lengths: tuple[int, ...]
    selection: str


def corpus_contexts(seqs: Sequence[np.ndarray], vocab_size: int, context_lengths: Sequence[int] | int,
                    n_contexts: int = 0, selection: str = "first", strings: Sequence[str] | None = None
                    ) -> CorpusContexts:
    """Distinct contexts of each length with their next-token counts (Paper A, Sec. 2).

    ``seqs``: token ids per document; ``n_contexts`` > 0 keeps that many contexts (0: all), chosen by
    ``selection``: ``"first"`` in order of first appearance (length by length), ``"frequent"`` the most
    frequent (ties: first appearance). Columns follow that order. Rows are the ``vocab_size`` token ids.
    """
    t0 = time.perf_counter()
    lengths = (int(context_lengths),) if isinstance(context_lengths, int | np.integer) else \
        tuple(int(T) for T in context_lengths)
    if not lengths or min(lengths) < 1 or len(set(lengths)) != len(lengths):
        raise CorpusError(f"context lengths must be distinct positive ints, got {context_lengths!r}")
    if selection not in SELECTIONS:
        raise CorpusError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    if isinstance(n_contexts, bool) or not isinstance(n_contexts, int | np.integer) or n_contexts < 0:
        raise CorpusError(f"n_contexts must be an int >= 0 (0: all), got {n_contexts!r}")
    try:
        corpus = Corpus.from_sequences(seqs, bound=int(vocab_size))
    except ValueError as err:
        raise CorpusError(f"{err} (vocabulary of {vocab_size} tokens)") from None
    ids = corpus.window_ids(max(lengths))
    blocks = []  # per length: (context ids offset to be distinct across lengths, next tokens, starts, T)
    offset, peak = 0, corpus.tokens.nbytes * 2
    for T in lengths:
        if T > len(ids):
            continue
        windows = ids[T - 1]
        ctx, nxt, starts = corpus.pairs(windows)
        peak = max(peak, corpus.tokens.nbytes * 2 + windows.ids.nbytes + windows.first.nbytes
                   + ctx.nbytes + nxt.nbytes + starts.nbytes)
        if ctx.size:
            blocks.append((ctx + offset, nxt, starts, T))
            offset += int(windows.first.size)
    if not blocks:
        raise CorpusError(f"no document is longer than the context length(s) {list(lengths)} "
                          f"({corpus.N:,} tokens in {int(corpus.seq[-1]) + 1} document(s))")
    ctx = np.concatenate([b[0] for b in blocks])
    nxt = np.concatenate([b[1] for b in blocks])
    distinct, first_pair, column, occurrences = np.unique(ctx, return_index=True, return_inverse=True,
                                                          return_counts=True)
    column = column.ravel()
    order = np.argsort(first_pair, kind="stable") if selection == "first" else \
        np.lexsort((first_pair, -occurrences))
    if n_contexts:
        order = order[:n_contexts]
    rank = np.full(distinct.size, -1, dtype=np.int64)
    rank[order] = np.arange(order.size)
    col = rank[column]
    keep = col >= 0
    r, c, n = pair_counts(col[keep], nxt[keep], int(vocab_size))
    counts = sp.coo_array((n, (r, c)), shape=(int(vocab_size), order.size)).tocsc()
    peak = max(peak, ctx.nbytes * 5 + nxt.nbytes)
    # the tokens of each kept context: its first window's start and length
    starts = np.concatenate([b[2] for b in blocks])
    length_of = np.concatenate([np.full(b[0].size, b[3]) for b in blocks])
    first_of = first_pair[order]
    contexts = [tuple(int(t) for t in corpus.tokens[s:s + T])
                for s, T in zip(starts[first_of], length_of[first_of], strict=True)]
    data = from_counts(counts, contexts, list(strings) if strings is not None else None)
    return CorpusContexts(data, corpus.N, int(ctx.size), int(distinct.size), int(keep.sum()), int(peak),
                          time.perf_counter() - t0, lengths, selection)


def describe(cc: CorpusContexts) -> dict[str, Any]:
    """The numbers a page states about :func:`corpus_contexts`' work."""
    return {"tokens": cc.tokens, "windows": cc.windows, "distinct contexts": cc.distinct,
            "contexts kept (m)": cc.data.m, "windows of the kept contexts": cc.kept_windows,
            "V": cc.data.V, "count matrix nonzeros": int(cc.data.counts.nnz),
            "index arrays at once (MiB)": cc.array_bytes / 2**20, "seconds": cc.seconds}


__all__ = ["CorpusContexts", "CorpusError", "TextTokenizer", "corpus_contexts", "corpus_files", "describe",
           "load_tokenizer", "read_documents", "resolve_path"]
