"""SentencePiece BPE with a tiny vocabulary (paper A Fig. 3: 64 tokens), trained offline and cached.

The authors' Fig.-3 tokenizer (legacy ``tinystories.py`` ``train_vocab``): ``sentencepiece`` BPE,
``vocab_size=64``, trained on the first 2,000 stories (one story per line), every other option at
sentencepiece's default -- case kept, NFKC normalization, character coverage 0.9995 (the rarest
characters become ``<unk>``), no byte fallback, ids ``<unk>=0, <s>=1, </s>=2``. With 64 pieces and the
upper- and lower-case alphabet almost the whole vocabulary is single characters plus a few merges
(``"he"``, ``"▁t"``, ``"▁a"`` ...).

:func:`train_sentencepiece_bpe` trains it deterministically (one thread, no input sampling or
shuffling; BPE training draws no random numbers) from the texts in memory and caches the serialized
model under ``cache_dir("corpora", "tokenizers")``, keyed by a hash of the texts and the options; the returned
``SentencePieceProcessor`` is rebuilt from the cached bytes. :func:`piece_strings` shows the pieces
with ``#`` for the word-start mark ``▁``.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from typing import Any

from ntputils import paths

WORD_START = "▁"


def _fingerprint(texts: Sequence[str], options: dict[str, Any]) -> str:
    h = hashlib.sha256(json.dumps(options, sort_keys=True).encode())
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def train_sentencepiece_bpe(texts: Sequence[str], vocab_size: int = 64, lowercase: bool = False,
                            name: str = "corpus", use_cache: bool = True) -> Any:
    """A sentencepiece BPE model of ``vocab_size`` pieces trained on ``texts`` (one sentence per text).

    Options: the authors' (sentencepiece defaults, see the module doc) plus what makes training
    deterministic (``num_threads=1``, ``input_sentence_size=0``, ``shuffle_input_sentence=False``);
    ``lowercase`` lower-cases the texts first (not the authors'). Returns a
    ``sentencepiece.SentencePieceProcessor``.

    Paper A, Fig. 3 (BPE vocabulary 64).
    """
    import sentencepiece as spm  # noqa: PLC0415 - optional heavy import

    if vocab_size < 8:
        raise ValueError(f"vocab_size must be at least 8, got {vocab_size}")
    lines = [" ".join((t.lower() if lowercase else t).split()) for t in texts]
    lines = [t for t in lines if t]
    if not lines:
        raise ValueError("no training text for the sentencepiece model")
    options = {"model_type": "bpe", "vocab_size": vocab_size, "num_threads": 1, "input_sentence_size": 0,
               "shuffle_input_sentence": False, "max_sentence_length": 1 << 20,
               "minloglevel": 2, "lowercase": lowercase, "sentencepiece": spm.__version__}
    path = paths.cache_dir("corpora", "tokenizers") / f"{name}-spm-{_fingerprint(lines, options)}.model"
    if use_cache and path.exists():
        return spm.SentencePieceProcessor(model_proto=path.read_bytes())
    writer = io.BytesIO()
    train_options = {k: v for k, v in options.items() if k not in ("lowercase", "sentencepiece")}
    try:
        spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=writer, **train_options)
    except RuntimeError as err:
        raise ValueError(f"sentencepiece could not train a {vocab_size}-piece BPE on {len(lines)} texts: "
                         f"{err}") from err
    proto = writer.getvalue()
    if use_cache:
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(proto)
        tmp.replace(path)
    return spm.SentencePieceProcessor(model_proto=proto)


def piece_strings(processor: Any) -> list[str]:
    """Readable piece of every id: ``▁`` (word start) shown as ``#``, specials as they are.

    Paper A, Fig. 3 (token labels).
    """
    out = []
    for i in range(processor.get_piece_size()):
        piece = processor.id_to_piece(i)
        special = processor.is_control(i) or processor.is_unknown(i)
        out.append(piece if special else piece.replace(WORD_START, "#"))
    return out
