"""Whether a committed table (``results/sweeps/NAME/``) is current: its code fingerprint against the code now.

A table is current when the fingerprint its points recorded (chapter code, traced functions, data digest:
:mod:`ntputils.book.fingerprint`) is what the same trace gives under the current code; the machine, Python
and torch it was made with are provenance, never a reason to be stale. The build hands every table's
currency to the kernels (:func:`ntputils.book.execute.write_currency`), so a page marks a STALE table,
and re-certification (:mod:`ntputils.sweeps.recertify`) re-runs the sample :func:`sample_points` picks.
"""

from __future__ import annotations

import hashlib
import math
import random
from typing import Any

from ntputils.book.fingerprint import READ_VERSIONS, chapter_code_of, code_fingerprint, dependency_pins
from ntputils.book.params import read_source
from ntputils.book.project import Project, ProjectError
from ntputils.committed import RESULTS_DIR, described, read_committed, remake_cost


def current_fingerprint(project: Project, chapter: str, fingerprint: dict[str, Any]) -> str | None:
    """What ``fingerprint["digest"]`` would be under the current code (``None``: no such chapter, or a
    fingerprint of another version)."""
    if fingerprint.get("version") not in READ_VERSIONS:
        return None
    try:
        (chap,) = project.select([chapter])
        code = chapter_code_of(read_source(chap.source))
    except (ProjectError, OSError, ValueError, SyntaxError):
        return None
    return code_fingerprint(code, fingerprint.get("trace") or {}, dependency_pins(project.pyproject),
                            version=fingerprint["version"])


def recertify_estimate(table) -> float | None:
    """Seconds a re-certification of ``table`` takes without its training checkpoints (its sampled points'
    :func:`~ntputils.committed.remake_cost`), or ``None``."""
    try:
        points = sample_points(table, extra=0, name="estimate")
    except (KeyError, ValueError):
        return None
    per_point = (remake_cost(table) or {}).get("per_point", {})
    return float(sum(per_point.get(str(p), 0.0) for p in points))


def axes_of(table) -> list[str]:
    """The swept parameters of a tidy table: the columns between ``point_id`` and ``profile``."""
    cols = list(table.columns)
    return cols[1: cols.index("profile")]


def sample_points(table, *, extra: int = 1, name: str) -> list[str]:
    """The point ids a re-certification re-runs, in table order: per axis value the fastest point, plus
    ``extra`` drawn with a seed from ``name`` (all of a one-point table)."""
    points = table.drop_duplicates("point_id").reset_index(drop=True)
    ids = list(points["point_id"])
    if len(ids) <= 1:
        return ids
    seconds = {p: (float(s) if s == s and s is not None else math.inf)
               for p, s in zip(points["point_id"], points["seconds"], strict=True)}
    chosen: set[str] = set()
    for axis in axes_of(table):
        for value in points[axis].drop_duplicates():
            same = [p for p, v in zip(points["point_id"], points[axis], strict=True) if same_value(v, value)]
            chosen.add(min(same, key=lambda p: (seconds[p], p)))
    rest = sorted(set(ids) - chosen)
    rng = random.Random(int(hashlib.sha256(name.encode()).hexdigest()[:12], 16))
    chosen.update(rng.sample(rest, min(max(extra, 0), len(rest))))
    return [p for p in ids if p in chosen]


def same_value(a: Any, b: Any) -> bool:
    """Whether two axis values are equal (numbers as numbers: CSV reads 5e-05 back as a float)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a) == str(b)
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def currency(project: Project, table, prov: dict[str, Any]) -> dict[str, Any]:
    """``{"stale", "current_hash", "recertify_seconds"}`` of a committed table: stale when its fingerprint
    moved under the current code, or it has none."""
    fingerprint = prov.get("fingerprint") or {}
    current = current_fingerprint(project, prov["chapter"], fingerprint) if fingerprint else None
    return {"stale": current is None or current != fingerprint.get("digest"), "current_hash": current,
            "recertify_seconds": recertify_estimate(table)}


def checked(project: Project, name: str) -> dict[str, Any]:
    """:func:`ntputils.committed.published` of ``name`` with its currency found now (the runner's reader)."""
    table, prov = read_committed(name, project.root)
    return described(name, table, prov, currency(project, table, prov))


def currencies(project: Project) -> dict[str, dict[str, Any]]:
    """Name -> :func:`currency` of every readable committed table under ``results/sweeps/``."""
    base = project.root / RESULTS_DIR / "sweeps"
    out = {}
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        try:
            out[folder.name] = currency(project, *read_committed(folder.name, project.root))
        except (FileNotFoundError, ValueError):  # a hidden publish folder, a stray file, a garbled table
            continue
    return out
