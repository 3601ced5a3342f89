"""Cache keys: a chapter is re-executed only when its key changes (no file modification times).

key = sha256 of (chapter source text, resolved parameters, the ``ntputils`` sources a chapter can
import, the pinned dependency versions of ``pyproject.toml``, the Python minor version).

The runner's own package ``ntputils/book/`` is left out: it never runs inside a chapter's kernel,
and editing the status-page generator must not re-execute 45 minutes of chapters.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import ntputils

PACKAGE_DIR = Path(ntputils.__file__).resolve().parent
EXCLUDED_SUBPACKAGES = ("book",)


def ntputils_digest(package_dir: Path = PACKAGE_DIR) -> str:
    """sha256 over the relative paths and contents of every ``*.py`` in the package (``book/`` excluded)."""
    h = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        rel = path.relative_to(package_dir)
        if rel.parts[0] in EXCLUDED_SUBPACKAGES or "__pycache__" in rel.parts:
            continue
        h.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def dependency_pins(pyproject: Path) -> list[str]:
    """The ``[project] dependencies`` of ``pyproject.toml`` (sorted), or ``[]`` if there is none."""
    if not pyproject.exists():
        return []
    data = tomllib.loads(pyproject.read_text())
    return sorted(data.get("project", {}).get("dependencies", []))


def chapter_key(source_text: str, resolved: dict[str, Any], package_digest: str, pins: list[str]) -> str:
    """The cache key of one chapter run."""
    payload = {
        "source": hashlib.sha256(source_text.encode()).hexdigest(),
        "parameters": resolved,
        "ntputils": package_digest,
        "pins": pins,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=repr).encode()).hexdigest()
