"""Locations of data and caches.

The data root is read from the environment variable ``NTP_DATA_DIR``; its default is the
``shared/data`` folder beside the checkout (``<repo>/../shared/data``), which is where CI and the
developers' machines keep the offline copies of TinyStories, WikiText-2 and the authors' template
sentences. Caches (built datasets, solver results) go to ``NTP_CACHE_DIR`` (default
``<repo>/.cache``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_ENV = "NTP_DATA_DIR"
CACHE_ENV = "NTP_CACHE_DIR"
#: every folder of the data root a loader reads (corpora, WordNet, the GPT-2 tokenizer, MNIST)
CORPUS_FOLDERS = ("official-ntp-2024", "tinystories", "wikitext-2", "nltk_data", "gpt2-tokenizer", "mnist")
_SHA_MEMO: dict[tuple[str, int, int], str] = {}


def data_dir() -> Path:
    """Return the data root (``$NTP_DATA_DIR`` or ``<repo>/../shared/data``).
    """
    env = os.environ.get(DATA_ENV)
    return Path(env).expanduser().resolve() if env else (REPO_ROOT.parent / "shared" / "data").resolve()


def data_file(*parts: str) -> Path:
    """Path of a file under the data root; raises ``FileNotFoundError`` naming the setting."""
    path = data_dir().joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"data file {path} not found; set {DATA_ENV} to the folder that holds "
            f"{'/'.join(parts)} (default: ../shared/data beside the checkout)"
        )
    return path


def cache_dir(*parts: str) -> Path:
    """A (created) folder under the cache root ``$NTP_CACHE_DIR`` (default ``<repo>/.cache``)."""
    env = os.environ.get(CACHE_ENV)
    root = Path(env).expanduser().resolve() if env else REPO_ROOT / ".cache"
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, memoized on ``(path, size, mtime_ns)`` (a rewritten file is re-hashed)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA_MEMO:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _SHA_MEMO[key] = h.hexdigest()
    return _SHA_MEMO[key]


def data_digest(root: Path | None = None, folders: tuple[str, ...] = CORPUS_FOLDERS) -> str:
    """sha256 over the relative paths and contents of every file in the corpus ``folders`` of the data
    root (``README*`` files left out): the content address of the data the corpora are built from.

    The corpus caches (:mod:`ntputils.data.corpora.cache`) and the book runner's chapter cache keys use
    it, so editing a data file rebuilds what depends on it (the path of the data root plays no role).
    Missing folders contribute nothing (the readers then fall back to the online datasets). Symlinked
    folders inside a corpus folder are followed (their files are data like any other); a link back to
    a folder that contains it is a ``ValueError`` naming it (see :func:`_files_below`).
    """
    root = data_dir() if root is None else root
    h = hashlib.sha256()
    for folder in folders:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(p for p in _files_below(base) if not p.name.startswith("README")):
            h.update(f"{path.relative_to(root).as_posix()}\0{file_sha256(path)}\n".encode())
    return h.hexdigest()


def _files_below(folder: Path, inside: tuple[str, ...] = ()) -> list[Path]:
    """Every file below ``folder``, following symlinked folders (``Path.rglob`` does not before Python
    3.13, so an edit behind such a link went unseen); ``inside`` holds the real paths of the folders
    that contain ``folder``. A folder whose real path is one of them is a symlink cycle: ``ValueError``
    naming it."""
    real = os.path.realpath(folder)
    if real in inside:
        raise ValueError(f"data folder {folder} links back to {real}, a folder that contains it (a symlink "
                         f"cycle under {DATA_ENV}); remove or retarget the link")
    files: list[Path] = []
    for entry in folder.iterdir():
        if entry.is_dir():
            files += _files_below(entry, (*inside, real))
        elif entry.is_file():
            files.append(entry)
    return files
