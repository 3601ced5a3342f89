"""Readers for the raw text corpora: TinyStories, WikiText-2 and the authors' template sentences.

Every reader looks for the offline copy under the data root (``ntputils.paths.data_dir()``, i.e.
``$NTP_DATA_DIR``, default ``../shared/data`` beside the checkout; see ``shared/data/README.md``).
When the local copy is missing it falls back to the official dataset on the Hugging Face hub
(``roneneldan/TinyStories``; ``wikitext`` / ``wikitext-2-v1``) through the ``datasets`` package,
imported lazily. Without local data and without ``datasets``/network a :class:`DataUnavailableError`
names the ``NTP_DATA_DIR`` setting.

Local files (xz-compressed UTF-8 text) and the sha256 of their uncompressed bytes (from the data
READMEs). They are **verified by default** (``verify=None`` follows ``$NTP_VERIFY_DATA``, default on):
a truncated or edited file raises :class:`ChecksumError`; set ``NTP_VERIFY_DATA=0`` (or pass
``verify=False``) to read user-supplied data. A file that cannot be read or decoded (corrupt ``.xz``,
not UTF-8) raises :class:`CorruptDataError`; every error names the file and ``NTP_DATA_DIR``.

* ``tinystories/tinystories_v1_train_head.txt.xz`` -- stories 1-2,316 of ``TinyStories-train.txt``;
* ``tinystories/tinystories_v1_valid_head.txt.xz`` -- the first 1,000 validation stories;
* ``tinystories/tinystories_v2gpt4_train_head.txt.xz`` -- 1,726 GPT-4 (v2) train stories;
* ``wikitext-2/{train,valid,test}.txt.xz`` -- WikiText-2 (v1, tokenized, ``<unk>`` for rare words);
* ``official-ntp-2024/verysmallset.txt`` -- the 160 template sentences of paper A's "Synthetic" data.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ntputils import paths

TINYSTORIES_DIR = "tinystories"
WIKITEXT_DIR = "wikitext-2"
TEMPLATES_DIR = "official-ntp-2024"
END_OF_STORY = "<|endoftext|>"

#: The three main TinyStories sample files (original letter case; 5,042 distinct stories).
TINYSTORIES_FILES = ("tinystories_v1_train_head", "tinystories_v1_valid_head",
                     "tinystories_v2gpt4_train_head")
#: The file whose first lines paper A's 2,000-line excerpt is taken from (``TinyStories-train.txt``).
TINYSTORIES_TRAIN_HEAD = "tinystories_v1_train_head"

#: sha256 of the *uncompressed* files, as documented in ``shared/data/**/README.md``.
SHA256 = {
    "tinystories_v1_train_head": "ba02237f5747a07d420cb7329f721fdc51b6f5c35a81788b9c4bb871e15ff30a",
    "tinystories_v1_valid_head": "c86f734a3a07fffb8a52f4a7970ac7dbeaf4eaf6a031dc8742a8de92fbbb9446",
    "tinystories_v2gpt4_train_head": "876a6df668a8990e3dcd0e12a9e6abb619ab9522d49f9688dae04b3d7d18b7df",
    "tinystories_v1_train_lowercased_extra":
        "14ffef55177896e1bc6b9f4f0f100f4a32de24b0708ac64f48bad70b72b300c7",
    "wikitext-2/train": "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f",
    "wikitext-2/valid": "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8",
    "wikitext-2/test": "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0",
    # the authors' data/verysmallset.txt (YizeZhao/Next_Token_yz, commit 73e434e), as shipped in shared/data
    "official-ntp-2024/verysmallset": "899cbf3a6c2729bb691e80d24a48b428afe66b2ac3c57da661c743d1ba271480",
}

WIKITEXT_SPLITS = ("train", "valid", "test")
_HF_WIKITEXT_SPLIT = {"train": "train", "valid": "validation", "test": "test"}
#: Stories taken from the hub when no local copy exists (the size of the local sample).
ONLINE_TINYSTORIES_STORIES = 5042
_HEADING = re.compile(r"^\s*(= )+.*( =)+\s*$")


class DataUnavailableError(FileNotFoundError):
    """Neither a local copy (under ``$NTP_DATA_DIR``) nor the online dataset could be read."""


class ChecksumError(ValueError):
    """A local data file does not have the sha256 documented in the data README."""


class CorruptDataError(ValueError):
    """A local data file cannot be read or decoded (corrupt compression, not UTF-8, I/O error)."""


VERIFY_ENV = "NTP_VERIFY_DATA"


def verify_default(verify: bool | None) -> bool:
    """``verify`` if given, else ``$NTP_VERIFY_DATA`` (``0``/``false``/``no``/``off`` switch it off;
    default on)."""
    if verify is not None:
        return bool(verify)
    return os.environ.get(VERIFY_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


# ----------------------------------------------------------------------------------------------
# low-level helpers
# ----------------------------------------------------------------------------------------------


def _where(path: Path) -> str:
    return f"{path} (under {paths.DATA_ENV}={paths.data_dir()})"


def _read_text(path: Path, key: str | None, verify: bool | None) -> str:
    """Text of a (possibly xz-compressed) UTF-8 file; check its documented sha256 (see
    :func:`verify_default`). Errors name the file and ``NTP_DATA_DIR``."""
    opener = lzma.open if path.suffix == ".xz" else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except (lzma.LZMAError, EOFError, OSError) as err:
        raise CorruptDataError(f"cannot read data file {_where(path)}: {type(err).__name__}: {err}; "
                               "restore it from the data README's source") from err
    if verify_default(verify) and key is not None:
        digest = hashlib.sha256(raw).hexdigest()
        if digest != SHA256[key]:
            raise ChecksumError(
                f"data file {_where(path)}: sha256 of its {len(raw):,} uncompressed bytes is {digest}, the "
                f"data README documents {SHA256[key]} (truncated or edited?); restore the file, or set "
                f"{VERIFY_ENV}=0 to use your own data"
            )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CorruptDataError(f"data file {_where(path)} is not UTF-8 text: {err}") from err


def _resolve_dir(path: str | Path | None, sub: str) -> Path:
    """The folder holding a corpus: ``path`` if given, else ``<data root>/<sub>``."""
    return Path(path).expanduser() if path is not None else paths.data_dir() / sub


def _unavailable(what: str, where: Path, cause: BaseException | None,
                 online: bool = True) -> DataUnavailableError:
    reason = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
    fallback = " and the online dataset could not be loaded" if online else " (no online source)"
    hint = ", or install the 'datasets' package and go online" if online else ""
    return DataUnavailableError(
        f"{what}: no local copy at {where}{fallback}{reason}. Set {paths.DATA_ENV} to the data folder "
        f"(it must contain {where.name}/; default ../shared/data beside the checkout){hint}."
    )


def _hf_load(name: str, config: str | None = None, split: str = "train", streaming: bool = False) -> Any:
    """Load a Hugging Face dataset (lazy import; replaced by a stub in the tests)."""
    import datasets  # noqa: PLC0415 - optional dependency, imported only when needed

    return datasets.load_dataset(name, config, split=split, streaming=streaming)


def _online(loader: Callable[[], list[str]], what: str, where: Path) -> list[str]:
    """Run an online loader, turning any failure (no package, no network) into DataUnavailableError."""
    try:
        return loader()
    except Exception as err:  # noqa: BLE001 - any failure means "not available"
        raise _unavailable(what, where, err) from err


def split_stories(text: str) -> list[str]:
    """Stories of a TinyStories ``.txt`` file: split on ``<|endoftext|>``, strip, drop empties."""
    return [s.strip() for s in text.split(END_OF_STORY) if s.strip()]


# ----------------------------------------------------------------------------------------------
# TinyStories
# ----------------------------------------------------------------------------------------------


def _online_stories(max_stories: int | None) -> list[str]:
    """The first stories of the official train split (streamed, so only what is used is read)."""
    limit = ONLINE_TINYSTORIES_STORIES if max_stories is None else max_stories
    stream = _hf_load("roneneldan/TinyStories", None, split="train", streaming=True)
    stories: list[str] = []
    for row in stream:
        if len(stories) >= limit:
            break
        text = str(row["text"]).strip()
        if text:
            stories.append(text)
    if not stories:
        raise ValueError("the online TinyStories stream returned no story")
    return stories


def read_tinystories(
    path: str | Path | None = None,
    files: Sequence[str] | None = None,
    max_stories: int | None = None,
    verify: bool | None = None,
) -> list[str]:
    """TinyStories stories (one string per story, paragraphs joined by ``\\n``).

    Parameters
    ----------
    path:
        folder with the ``*.txt.xz`` sample files; default ``<data root>/tinystories``.
    files:
        file stems to read, in order; default :data:`TINYSTORIES_FILES` (5,042 distinct stories).
    max_stories:
        keep only the first ``max_stories`` stories (``None``: all).
    verify:
        check every file against the sha256 of the data README (raises :class:`ChecksumError`);
        ``None`` (default): on unless ``$NTP_VERIFY_DATA=0``.

    Without a local folder, the first ``max_stories`` (default 5,042) stories of the official
    ``roneneldan/TinyStories`` train split are streamed from the hub.
    """
    if max_stories is not None and max_stories < 1:
        raise ValueError(f"max_stories must be positive, got {max_stories}")
    folder = _resolve_dir(path, TINYSTORIES_DIR)
    names = list(TINYSTORIES_FILES if files is None else files)
    if not names:
        raise ValueError("files: no TinyStories file named")
    unknown = [n for n in names if n not in SHA256]
    if unknown:
        valid = sorted(k for k in SHA256 if "/" not in k)
        raise ValueError(f"unknown TinyStories file(s) {unknown}; valid: {valid}")
    if not folder.is_dir():
        return _online(lambda: _online_stories(max_stories), "TinyStories", folder)
    stories: list[str] = []
    for name in names:
        file = folder / f"{name}.txt.xz"
        if not file.exists():
            raise _unavailable(f"TinyStories file {file.name}", folder, None, online=False)
        stories.extend(split_stories(_read_text(file, name, verify)))
        if max_stories is not None and len(stories) >= max_stories:
            break
    return stories[:max_stories] if max_stories is not None else stories


def read_tinystories_lines(n_lines: int | None = None, path: str | Path | None = None,
                           verify: bool | None = None) -> list[str]:
    """The first ``n_lines`` raw lines of ``TinyStories-train.txt`` (paper A's excerpt).

    Lines are paragraphs; each story is followed by a line ``<|endoftext|>``, as in the official
    release file. Offline: :data:`TINYSTORIES_TRAIN_HEAD`. Online: the train split's stories are
    written in the same layout (paragraphs on their own lines, blank lines dropped).
    """
    if n_lines is not None and n_lines < 1:
        raise ValueError(f"n_lines must be positive, got {n_lines}")
    folder = _resolve_dir(path, TINYSTORIES_DIR)
    file = folder / f"{TINYSTORIES_TRAIN_HEAD}.txt.xz"
    if file.exists():
        lines = _read_text(file, TINYSTORIES_TRAIN_HEAD, verify).split("\n")
    else:
        def load() -> list[str]:
            out: list[str] = []
            for story in _online_stories(None if n_lines is None else n_lines):
                out.extend(p for p in story.split("\n") if p.strip())
                out.append(END_OF_STORY)
            return out
        lines = _online(load, "TinyStories", folder)
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return lines[:n_lines] if n_lines is not None else lines


# ----------------------------------------------------------------------------------------------
# WikiText-2
# ----------------------------------------------------------------------------------------------


def is_heading(line: str) -> bool:
    """True for WikiText title/section lines such as `` = Title = `` or `` = = Section = = ``."""
    return bool(_HEADING.match(line))


def _group_articles(lines: Sequence[str]) -> list[str]:
    """Join lines into articles; a new article starts at a `` = Title = `` line (one ``=`` level)."""
    articles: list[list[str]] = []
    for line in lines:
        text = line.strip()
        if not text:
            continue
        if text.startswith("= ") and not text.startswith("= = ") and text.endswith(" =") or not articles:
            articles.append([])
        articles[-1].append(text)
    return ["\n".join(a) for a in articles]


def read_wikitext(split: str = "train", path: str | Path | None = None, unit: str = "lines",
                  verify: bool | None = None) -> list[str]:
    """WikiText-2 (v1) text of one split.

    ``unit="lines"`` returns the non-blank lines (paragraphs and headings), stripped;
    ``unit="articles"`` joins them into articles, each starting at its `` = Title = `` line.
    Offline: ``<data root>/wikitext-2/<split>.txt.xz``; online: ``wikitext``/``wikitext-2-v1``.
    """
    if split not in WIKITEXT_SPLITS:
        raise ValueError(f"unknown WikiText split {split!r}; valid: {WIKITEXT_SPLITS}")
    if unit not in ("lines", "articles"):
        raise ValueError(f"unknown unit {unit!r}; valid: 'lines', 'articles'")
    folder = _resolve_dir(path, WIKITEXT_DIR)
    file = folder / f"{split}.txt.xz"
    if file.exists():
        raw_lines = _read_text(file, f"wikitext-2/{split}", verify).split("\n")
    else:
        def load() -> list[str]:
            rows = _hf_load("wikitext", "wikitext-2-v1", split=_HF_WIKITEXT_SPLIT[split])
            return [str(t) for t in rows["text"]]
        raw_lines = _online(load, "WikiText-2", folder)
    lines = [ln.strip() for ln in raw_lines if ln.strip()]
    if not lines:
        raise ValueError(f"WikiText-2 {split}: empty corpus")
    return lines if unit == "lines" else _group_articles(lines)


# ----------------------------------------------------------------------------------------------
# paper A's template sentences
# ----------------------------------------------------------------------------------------------


def read_template_sentences(path: str | Path | None = None, verify: bool | None = None) -> list[str]:
    """The 160 template sentences of paper A's "Synthetic" data (``verysmallset.txt``), one per item.

    Shipped only as a local file (it comes with the authors' code, not with a hub dataset).
    """
    folder = _resolve_dir(path, TEMPLATES_DIR)
    file = folder / "verysmallset.txt"
    if not file.exists():
        raise _unavailable("paper A template sentences (verysmallset.txt)", folder, None, online=False)
    sentences = [s.strip() for s in _read_text(file, "official-ntp-2024/verysmallset", verify).split("\n")
                 if s.strip()]
    if not sentences:
        raise ValueError(f"{file}: empty corpus")
    return sentences
