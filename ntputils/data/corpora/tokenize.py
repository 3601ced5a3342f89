"""Tokenizers: the papers' word-level pre-tokenization and locally trained BPE (Hugging Face ``tokenizers``).

Paper A (word level, code-derived [A-CODE Dataset.py]):

* :func:`words_stripped` -- "Synthetic": lower-case, delete punctuation, split on whitespace
  (``"She's"`` -> ``"shes"``, ``"hide-and-seek"`` -> ``"hideandseek"``);
* :func:`words_spaced` -- "Simplified TinyStories": lower-case, put spaces around ``. , ! ? ( )``,
  split on whitespace (quotes and apostrophes stay attached: ``"yes``, ``don't``).

Paper B (subword; the paper marks a token that starts a word with ``#``): :func:`train_bpe` trains a
byte-level BPE (GPT-2 style pre-tokenization, a leading space belongs to the next word) on the corpus
itself and :func:`token_strings` shows each token as text with ``#`` for a leading space
(``" day"`` -> ``"#day"``, ``"ing"`` -> ``"ing"``). :func:`word_split` is the word-level alternative.

Paper A Fig. 3 uses a tiny BPE (vocab 64): :func:`train_char_bpe` (lower-cased, ``▁`` word marker
shown as ``#``, the rarest characters mapped to ``<unk>``).

Trained tokenizers are cached as JSON under ``cache_dir("corpora", "tokenizers")``, keyed by a hash
of the training texts and the settings, so a chapter trains each one once.
"""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ntputils import paths

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_SPACED = re.compile(r"(?<! )(?=[.,!?()])|(?<=[.,!?()])(?! )")
_WORD = re.compile(r"<unk>|@[-,.]@|\w+(?:'\w+)?|[^\w\s]")
_QUOTES = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "–": "-", "—": "-", "…": "..."})
WORD_START = "#"


# ----------------------------------------------------------------------------------------------
# word level
# ----------------------------------------------------------------------------------------------


def words_stripped(text: str) -> list[str]:
    """Lower-case, remove ASCII punctuation, split on whitespace (paper A "Synthetic").
    """
    return text.lower().translate(_PUNCT_TABLE).split()


def words_spaced(text: str) -> list[str]:
    """Lower-case, isolate ``. , ! ? ( )`` with spaces, split on whitespace (paper A TinyStories)."""
    return _SPACED.sub(" ", text.lower()).split()


def word_split(text: str) -> list[str]:
    """Word-level tokens keeping case: words (with inner apostrophes), ``<unk>``, ``@-@``, punctuation."""
    return _WORD.findall(text)


class WordVocab:
    """A word vocabulary ordered by decreasing frequency (ties alphabetical), ids ``offset, offset+1, ...``.

    With ``offset=3`` the ids equal those of a sentencepiece ``model_type="word"`` model with the three
    specials ``<unk>, <s>, </s>`` (the authors' tokenizer), which matters only for tie-breaking rules
    that the authors expressed through token ids.
    """

    def __init__(self, token_lists: Sequence[Sequence[str]], offset: int = 0,
                 specials: Sequence[str] = ()) -> None:
        counts: dict[str, int] = {}
        for tokens in token_lists:
            for t in tokens:
                counts[t] = counts.get(t, 0) + 1
        if not counts:
            raise ValueError("empty corpus: no word to build a vocabulary from")
        if len(specials) > offset:
            raise ValueError(f"{len(specials)} special tokens do not fit below offset {offset}")
        words = sorted(counts, key=lambda w: (-counts[w], w))
        fillers = [f"<special{i}>" for i in range(len(specials), offset)]
        self.words: list[str] = list(specials) + fillers + words
        self.index = {w: i for i, w in enumerate(self.words)}
        self.counts = counts

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        """Ids of ``tokens`` (``KeyError`` names an unknown word)."""
        return np.fromiter((self.index[t] for t in tokens), dtype=np.int64, count=len(tokens))


# ----------------------------------------------------------------------------------------------
# BPE (Hugging Face tokenizers)
# ----------------------------------------------------------------------------------------------


def _fingerprint(texts: Sequence[str], settings: str) -> str:
    h = hashlib.sha256(settings.encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def _cached_tokenizer(name: str, texts: Sequence[str], settings: str, build):  # noqa: ANN001, ANN202
    """Load ``<cache>/tokenizers/<name>-<hash>.json`` or train with ``build()`` and save it."""
    from tokenizers import Tokenizer  # noqa: PLC0415 - heavy import kept local

    path: Path = paths.cache_dir("corpora", "tokenizers") / f"{name}-{_fingerprint(texts, settings)}.json"
    if path.exists():
        return Tokenizer.from_file(str(path))
    tok = build()
    tmp = path.with_suffix(".tmp")
    tok.save(str(tmp))
    tmp.replace(path)
    return tok


def train_bpe(texts: Sequence[str], vocab_size: int = 8192, name: str = "corpus",
              unk: str | None = None):  # noqa: ANN201 - returns tokenizers.Tokenizer
    """Byte-level BPE with ``vocab_size`` tokens trained on ``texts`` (GPT-2 style, deterministic).

    Every word is preceded by a space (``add_prefix_space``), so word-initial tokens carry it and
    :func:`token_strings` can mark them with ``#``. ``unk`` (e.g. WikiText's ``"<unk>"``) is kept as
    one token that absorbs the space before it.
    """
    if not texts:
        raise ValueError("empty corpus: no text to train a tokenizer on")
    if vocab_size < 257:
        raise ValueError(f"byte-level BPE needs vocab_size > 256 (the byte alphabet), got {vocab_size}")

    def build():  # noqa: ANN202
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: PLC0415

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
        tok.decoder = decoders.ByteLevel()
        specials = [AddedToken(unk, lstrip=True, special=True)] if unk else []
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        tok.train_from_iterator(texts, trainer)
        return tok

    return _cached_tokenizer(f"{name}-bpe{vocab_size}", texts, f"bytelevel|{vocab_size}|{unk}", build)


def normalize_simple(text: str) -> str:
    """NFKC, straight quotes and dashes, lower case, newlines as spaces (input of :func:`train_char_bpe`)."""
    return " ".join(unicodedata.normalize("NFKC", text).translate(_QUOTES).lower().split())


def train_char_bpe(texts: Sequence[str], vocab_size: int = 64, alphabet_size: int = 40,
                   name: str = "corpus"):  # noqa: ANN201 - returns tokenizers.Tokenizer
    """A tiny character BPE: ``alphabet_size`` most frequent characters + merges up to ``vocab_size``.

    Text is normalized with :func:`normalize_simple`; words are prefixed with ``▁`` (Metaspace);
    characters outside the alphabet become ``<unk>``. Special tokens ``<unk>, <s>, </s>`` take ids
    0, 1, 2 and count towards ``vocab_size``.

    The 64-token BPE of Paper A, Fig. 3 (TinyStories-100).
    """
    if not texts:
        raise ValueError("empty corpus: no text to train a tokenizer on")
    if vocab_size < alphabet_size + 3:
        raise ValueError(f"vocab_size {vocab_size} must exceed alphabet_size + 3 = {alphabet_size + 3}")
    norm = [normalize_simple(t) for t in texts]

    def build():  # noqa: ANN202
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: PLC0415

        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, limit_alphabet=alphabet_size,
                                      show_progress=False, special_tokens=["<unk>", "<s>", "</s>"])
        tok.train_from_iterator(norm, trainer)
        return tok

    return _cached_tokenizer(f"{name}-charbpe{vocab_size}", norm, f"char|{vocab_size}|{alphabet_size}", build)


def token_strings(tokenizer) -> list[str]:  # noqa: ANN001 - tokenizers.Tokenizer
    """Readable string of every token id: a leading space or ``▁`` becomes ``#``.

    Special tokens are shown as they are. A byte-level tokenizer (ByteLevel decoder, GPT-2 style) is
    rendered with :func:`ntputils.data.corpora.gpt2_tokenizer.readable_token`: newline ``⏎``, an
    incomplete UTF-8 byte sequence as hex bytes (no mojibake); other tokenizers decode each token
    (newlines as ``\\n``).
    """
    from ntputils.data.corpora.gpt2_tokenizer import readable_token  # noqa: PLC0415

    size = tokenizer.get_vocab_size()
    specials = {tokenizer.token_to_id(t.content) for t in tokenizer.get_added_tokens_decoder().values()
                if t.special}
    byte_level = type(tokenizer.decoder).__name__ == "ByteLevel"
    out: list[str] = []
    for i in range(size):
        raw = tokenizer.id_to_token(i)
        if i in specials:
            out.append(raw)
            continue
        if byte_level:  # GPT-2 style byte spelling: "#" word start, "⏎" newline, hex for partial UTF-8
            out.append(readable_token(raw))
            continue
        if raw.startswith("▁"):
            text = " " + raw[1:]
        else:
            text = tokenizer.decode([i], skip_special_tokens=False)
            if "\ufffd" in text:
                text = raw
        text = text.replace("\n", "\\n")
        out.append(WORD_START + text[1:] if text.startswith(" ") else text)
    return out


def encode_all(tokenizer, texts: Sequence[str]) -> list[np.ndarray]:  # noqa: ANN001
    """Token ids of every text (batched; no special tokens added).
    """
    encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)
    return [np.asarray(e.ids, dtype=np.int64) for e in encodings]
