"""WordNet 3.0 through NLTK, read offline from the shared data folder (paper A's synonym step).

Paper A's Simplified TinyStories adds, for every frequent context, variants in which one adjective or
noun is replaced by one of "up to 10 WordNet synonyms" (the authors' ``expand_m``; spec 4.2). The data
is ``<data root>/nltk_data/corpora/wordnet.zip`` (NLTK's own layout, WordNet 3.0; see
``shared/data/README.md``), the data root being ``$NTP_DATA_DIR`` (default ``../shared/data``).

:func:`load_wordnet` checks that the zip exists (else
:class:`~ntputils.data.corpora.readers.DataUnavailableError` naming the file and the setting) and has the
documented sha256 (else
:class:`~ntputils.data.corpora.readers.ChecksumError`), puts its ``nltk_data`` folder on ``nltk.data.path``
(NLTK refuses to open data outside that list, so the user never has to set ``NLTK_DATA``) and returns a
``WordNetCorpusReader`` bound to that very file. Loading the indexes takes a few seconds; the reader is
kept per file for the process.

:func:`wordnet_synonyms` is the synonym list: the lemma names of every synset of the word (all parts of
speech, as ``wordnet.synsets(word)``), lower-cased, without the word itself and without repeats, the first
``limit`` = 10 of them, and among those only the single words (a name with ``_`` is a multi-word lemma and
is skipped, as in the authors' code, *after* the cut at 10). The authors took the first 10 of a Python
``set`` -- an order that changes with the interpreter's string-hash seed -- so their choice among more
than 10 lemma names is not reproducible; we take WordNet's own order (synsets by sense frequency, lemmas
in synset order), which is deterministic.
"""

from __future__ import annotations

import hashlib
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

from ntputils import paths
from ntputils.data.corpora.readers import ChecksumError, DataUnavailableError

#: Location of the WordNet zip under the data root.
WORDNET_PARTS = ("nltk_data", "corpora", "wordnet.zip")
#: sha256 of ``wordnet.zip`` (``shared/data/README.md``).
WORDNET_SHA256 = "ada33c4b3c6e0079830c8f791824c85cc015f28e206e2bdebaa0bc24e8ff9b64"
#: Synonyms kept per word (the authors' "up to 10").
SYNONYM_LIMIT = 10


def wordnet_zip(root: str | Path | None = None) -> Path:
    """Path ``<root>/nltk_data/corpora/wordnet.zip``, ``root`` defaulting to the data root.

    Paper A's Simplified TinyStories (synonym step, spec 4.2).
    """
    base = Path(root).expanduser() if root is not None else paths.data_dir()
    return base.joinpath(*WORDNET_PARTS)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_wordnet_file(path: Path, verify: bool = True) -> Path:
    """Raise a clear error when ``path`` (a ``wordnet.zip``) is missing or has the wrong sha256.

    Paper A's Simplified TinyStories (synonym step, spec 4.2).
    """
    if not path.is_file():
        raise DataUnavailableError(
            f"WordNet: {path} not found. Paper A's Simplified TinyStories needs WordNet 3.0 in NLTK's layout "
            f"at <data root>/{'/'.join(WORDNET_PARTS)}; set {paths.DATA_ENV} to the data folder "
            "(default ../shared/data beside the checkout; see shared/data/README.md)."
        )
    if verify:
        digest = _sha256(path)
        if digest != WORDNET_SHA256:
            raise ChecksumError(f"{path}: sha256 {digest} differs from the documented {WORDNET_SHA256}")
    return path


@lru_cache(maxsize=4)
def _reader(zip_path: str) -> Any:
    import nltk  # noqa: PLC0415 - heavy import, only when WordNet is needed
    from nltk.corpus.reader.wordnet import WordNetCorpusReader  # noqa: PLC0415

    nltk_root = str(Path(zip_path).parents[1])
    if nltk_root not in nltk.data.path:
        nltk.data.path.insert(0, nltk_root)  # NLTK opens data only under the folders of this list
    pointer = nltk.data.find("corpora/wordnet.zip/wordnet/", paths=[nltk_root])
    with warnings.catch_warnings():  # no Open Multilingual Wordnet on purpose: English synonyms only
        warnings.filterwarnings("ignore", message="The multilingual functions are not available")
        return WordNetCorpusReader(pointer, None)


def load_wordnet(root: str | Path | None = None, verify: bool = True) -> Any:
    """WordNet 3.0 (an NLTK ``WordNetCorpusReader``) from ``<root>/nltk_data/corpora/wordnet.zip``.

    ``root`` defaults to the data root (``$NTP_DATA_DIR``). The file is checked first (missing:
    :class:`DataUnavailableError`; wrong sha256 with ``verify``: :class:`ChecksumError`), then its
    ``nltk_data`` folder is put on ``nltk.data.path``. One reader per file and process.

    Paper A's Simplified TinyStories (synonym step, spec 4.2).
    """
    path = check_wordnet_file(wordnet_zip(root), verify)
    return _reader(str(path.resolve()))


def wordnet_synonyms(word: str, limit: int = SYNONYM_LIMIT, wordnet: Any = None) -> tuple[str, ...]:
    """Up to ``limit`` single-word WordNet synonyms of ``word`` (lower-cased; order: see the module doc).

    All synsets of ``word`` (every part of speech, NLTK's morphological look-up, so ``"friends"`` finds
    the synsets of ``"friend"``), their lemma names lower-cased, the word itself and repeats removed;
    the first ``limit`` are kept and the multi-word ones among them (``_`` in the name) dropped.
    ``wordnet`` defaults to :func:`load_wordnet`.

    Paper A's Simplified TinyStories (synonym step, spec 4.2).
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    wn = load_wordnet() if wordnet is None else wordnet
    names: list[str] = []
    for synset in wn.synsets(word):
        for lemma in synset.lemma_names():
            name = lemma.lower()
            if name != word and name not in names:
                names.append(name)
    return tuple(n for n in names[:limit] if "_" not in n)
