"""The real GPT-2 byte-level BPE tokenizer, read offline from ``<data root>/gpt2-tokenizer``.

Paper B (Sec. 5.1, Figs. 4-7, 11, 14-25) builds its Simplified TinyStories / WikiText datasets and reads
GPT-2's decoder with GPT-2's tokenizer; its word clouds mark a token that starts a word with ``#``. The
shared data folder holds OpenAI's tokenizer files (``encoder.json.xz``: token -> id, 50,257 entries;
``vocab.bpe``: 50,000 merges). :func:`load_gpt2_tokenizer` checks their documented sha256 and builds a
``tokenizers.Tokenizer`` (BPE model + ByteLevel pre-tokenizer and decoder, no prefix space: GPT-2's
own setting), so ``"Hello world"`` -> ``[15496, 995]`` as GPT-2 encodes it.

Readable token strings (:func:`readable_token`): GPT-2 spells every byte as a printable character
(``bytes_to_unicode``: ``Ġ`` = space, ``Ċ`` = newline). We map the characters back to bytes; a leading
space becomes the paper's word-start mark ``#``; a newline is shown as ``⏎`` and a tab as ``⇥``; a byte
sequence that is not complete UTF-8 (a piece of a multi-byte character) is shown as its hex bytes,
e.g. ``<e2 80>``, instead of mojibake. :func:`is_layout_token` flags tokens that are only whitespace,
which word clouds leave out (chapters b04, b07).
"""

from __future__ import annotations

import hashlib
import json
import lzma
from functools import lru_cache
from pathlib import Path

from ntputils import paths

GPT2_TOKENIZER_DIR = "gpt2-tokenizer"
#: sha256 of the *uncompressed* files (shared/data/README.md, "GPT-2 byte-level BPE tokenizer").
GPT2_SHA256 = {
    "encoder.json": "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
    "vocab.bpe": "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5",
}
GPT2_VOCAB_SIZE = 50257
END_OF_TEXT = "<|endoftext|>"
WORD_START = "#"
NEWLINE_MARK = "⏎"
TAB_MARK = "⇥"


class TokenizerFileError(FileNotFoundError):
    """A GPT-2 tokenizer file is missing (the message names it and the data setting)."""


class TokenizerChecksumError(ValueError):
    """A GPT-2 tokenizer file does not have the sha256 documented in the data README."""


@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's printable character -> byte map (the inverse of its ``bytes_to_unicode``).

    Printable Latin-1 bytes (``!``..``~``, ``¡``..``¬``, ``®``..``ÿ``) stand for themselves; the other
    68 bytes are mapped in order to the characters ``chr(256)``, ``chr(257)``, ... (so ``Ġ`` = byte 32).
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(keep)
    extra = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(keep, chars, strict=True)}


def token_bytes(token: str) -> bytes:
    """The bytes a GPT-2 vocabulary entry stands for (``"Ġthe"`` -> ``b" the"``)."""
    table = byte_decoder()
    try:
        return bytes(table[ch] for ch in token)
    except KeyError as err:
        raise ValueError(f"{token!r} is not a byte-level BPE token (character {err.args[0]!r})") from None


def readable_token(raw: bytes | str) -> str:
    """Display form of a token: ``#`` for a leading space, ``⏎`` newline, ``⇥`` tab, hex for partial UTF-8.

    ``raw`` is the token's bytes or its GPT-2 spelling (``"Ġday"`` -> ``"#day"``, ``"ing"`` -> ``"ing"``,
    ``"Ċ"`` -> ``"⏎"``, ``"Ġ"`` -> ``"#"``, ``"âĢ"`` -> ``"<e2 80>"``). The word-start mark of Paper B's
    word clouds (Sec. 5.1: "#" indicates a token start).
    """
    data = token_bytes(raw) if isinstance(raw, str) else bytes(raw)
    start = data[:1] == b" "
    body = data[1:] if start else data
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = "<" + " ".join(f"{b:02x}" for b in body) + ">"
    text = text.replace("\n", NEWLINE_MARK).replace("\t", TAB_MARK).replace("\r", "\\r")
    return (WORD_START if start else "") + text


def is_layout_token(token: str) -> bool:
    """True for a display token that is only layout: spaces, ``⏎``, ``⇥`` (and the ``#`` mark alone).

    Such tokens (GPT-2's ``"Ċ"``, ``"ĠĠ"``, ...) are real next tokens but carry no word; word clouds
    leave them out (Paper B Figs. 4-7 show words).
    """
    body = token[1:] if token.startswith(WORD_START) else token
    return not body.replace(NEWLINE_MARK, "").replace(TAB_MARK, "").replace("\\r", "").strip()


def _read_verified(path: Path, name: str, verify: bool) -> bytes:
    if not path.exists():
        raise TokenizerFileError(
            f"GPT-2 tokenizer file {path.name!r} not found in {path.parent}; set {paths.DATA_ENV} to the "
            f"data folder that holds {GPT2_TOKENIZER_DIR}/ (encoder.json.xz and vocab.bpe)")
    opener = lzma.open if path.suffix == ".xz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError, lzma.LZMAError) as err:  # e.g. a truncated .xz: "Compressed file ended ..."
        raise TokenizerChecksumError(f"{path}: cannot be read ({type(err).__name__}: {err}); restore it from "
                                     f"the source in the data README, or set {paths.DATA_ENV} to an intact "
                                     "copy of the data folder") from None
    if verify:
        got = hashlib.sha256(raw).hexdigest()
        if got != GPT2_SHA256[name]:
            raise TokenizerChecksumError(f"{path}: sha256 of the {name} bytes is {got}, the data README "
                                         f"documents {GPT2_SHA256[name]}")
    return raw


def gpt2_tokenizer_files(folder: str | Path | None = None) -> tuple[Path, Path]:
    """Paths of ``encoder.json(.xz)`` and ``vocab.bpe`` in ``folder`` (default: the data root's
    ``gpt2-tokenizer``).

    The plain ``encoder.json`` is used when present, else ``encoder.json.xz``.
    """
    root = Path(folder).expanduser() if folder is not None else paths.data_dir() / GPT2_TOKENIZER_DIR
    encoder = root / "encoder.json"
    if not encoder.exists():
        encoder = root / "encoder.json.xz"
    return encoder, root / "vocab.bpe"


def load_gpt2_tokenizer(folder: str | Path | None = None, verify: bool = True):  # noqa: ANN201 - tokenizers.Tokenizer
    """GPT-2's byte-level BPE as a ``tokenizers.Tokenizer`` (sha256 of both files checked when ``verify``).

    ``folder`` defaults to ``$NTP_DATA_DIR/gpt2-tokenizer``. A missing file raises
    :class:`TokenizerFileError` naming it (before anything else is read); a file with another sha256
    raises :class:`TokenizerChecksumError`. ``<|endoftext|>`` (id 50256) is a special token.

    The tokenizer of Paper B, Sec. 5.1 (GPT-2; the datasets of Figs. 4-6, 11, 14, 20-25).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers  # noqa: PLC0415

    encoder_path, merges_path = gpt2_tokenizer_files(folder)
    for p in (encoder_path, merges_path):  # name every missing file before reading anything
        if not p.exists():
            _read_verified(p, "", False)
    vocab = json.loads(_read_verified(encoder_path, "encoder.json", verify).decode("utf-8"))
    lines = _read_verified(merges_path, "vocab.bpe", verify).decode("utf-8").split("\n")
    merges = [tuple(line.split(" ")) for line in lines[1:] if line and not line.startswith("#version")]
    if len(vocab) != GPT2_VOCAB_SIZE or any(len(m) != 2 for m in merges):
        raise ValueError(f"{encoder_path.parent}: not GPT-2's tokenizer files ({len(vocab)} tokens, "
                         f"{len(merges)} merges; expected {GPT2_VOCAB_SIZE} tokens and pairs of merges)")
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(END_OF_TEXT, special=True)])
    return tok


def gpt2_token_strings(tokenizer) -> list[str]:  # noqa: ANN001 - tokenizers.Tokenizer
    """:func:`readable_token` of every id of a byte-level tokenizer (special tokens as they are).

    Word-cloud labels of Paper B, Sec. 5.1 (``#`` = token start).
    """
    specials = {t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special}
    out = []
    for i in range(tokenizer.get_vocab_size()):
        raw = tokenizer.id_to_token(i)
        out.append(raw if raw in specials else readable_token(raw))
    return out
