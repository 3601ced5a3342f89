"""Locations of data and caches.

The data root is read from the environment variable ``NTP_DATA_DIR``; its default is the
``shared/data`` folder beside the checkout (``<repo>/../shared/data``), which is where CI and the
developers' machines keep the offline copies of TinyStories, WikiText-2 and the authors' template
sentences. Caches (built datasets, solver results) go to ``NTP_CACHE_DIR`` (default
``<repo>/.cache``).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_ENV = "NTP_DATA_DIR"
CACHE_ENV = "NTP_CACHE_DIR"


def data_dir() -> Path:
    """Return the data root (``$NTP_DATA_DIR`` or ``<repo>/../shared/data``).

    Used in: a01.
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
