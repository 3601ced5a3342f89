"""How a sweep's table differs from its committed one: ``python -m ntputils.book sweep-table NAME --diff``.

A re-run of a committed table (new code, a new CPU) is published only after one looks at what moved. Point
ids change with the code, so rows are matched on the swept parameters, ``kind`` and ``metric``. The report
says which rows are in one table only, how many values are bit-identical, the largest relative moves, and
every outcome that flipped (a claim, its control, a check): what a closing note must state before the new
table replaces the committed one. Read-only: it writes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ntputils.book.currency import axes_of
from ntputils.book.project import Project, say
from ntputils.committed import RESULTS_DIR, SweepTableError, check_name
from ntputils.sweeps.recertify import read_committed_table, row_values
from ntputils.sweeps.table import collect

#: rows per table that :func:`diff_lines` lists (the largest moves)
SHOWN_MOVES = 15


@dataclass(frozen=True)
class TableDiff:
    """The differences between a committed table (``old``) and a sweep's new table (``new``)."""

    only_old: list[tuple]  # (axes..., kind, metric) of rows the new table lacks
    only_new: list[tuple]  # ... of rows the committed table lacks
    compared: int  # rows in both
    identical: int  # of those, value (bit for bit, NaN = NaN) and text unchanged
    moved: list[tuple[tuple, Any, Any, float]]  # (key, old, new, relative difference), largest first
    flips: list[tuple[tuple, Any, Any, str, str]]  # (key, old value, new value, old outcome, new outcome)


def _rows(table) -> dict[tuple, tuple[float, str, str]]:
    """(axis values as text..., kind, metric) -> (value, value_text, outcome) of every row of ``table``,
    each point read by recertification's row reader (:func:`~ntputils.sweeps.recertify.row_values`)."""
    axes, kinds = axes_of(table), tuple(table["kind"].unique())
    out: dict[tuple, tuple[float, str, str]] = {}
    for point, group in table.groupby(axes, sort=False, dropna=False) if axes else [((), table)]:
        point = tuple(str(v) for v in (point if isinstance(point, tuple) else (point,)))
        out |= {(*point, kind, metric): row for (kind, metric), row in row_values(group, kinds).items()}
    return out


def table_diff(old, new) -> TableDiff:
    """Compare two tidy tables (:func:`ntputils.sweeps.table.collect`'s columns) row by row on their swept
    parameters, ``kind`` and ``metric``; the parameters must be the same columns."""
    if axes_of(old) != axes_of(new):
        raise ValueError(f"the tables sweep different parameters: committed {axes_of(old)}, new "
                         f"{axes_of(new)}")
    a, b = _rows(old), _rows(new)
    both = [k for k in a if k in b]
    identical, moved, flips = 0, [], []
    for k in both:
        (va, ta, oa), (vb, tb, ob) = a[k], b[k]
        if ta == tb and (va == vb or (math.isnan(va) and math.isnan(vb))):
            identical += 1
        elif math.isfinite(va) and math.isfinite(vb):
            moved.append((k, va, vb, abs(vb - va) / max(abs(va), 1e-300)))
        else:
            moved.append((k, ta or va, tb or vb, math.inf))
        if oa != ob:
            flips.append((k, va, vb, oa, ob))
    moved.sort(key=lambda m: (-m[3], m[0]))
    return TableDiff(only_old=[k for k in a if k not in b], only_new=[k for k in b if k not in a],
                     compared=len(both), identical=identical, moved=moved, flips=flips)


def _key_text(key: tuple) -> str:
    *point, kind, metric = key
    return f"{kind} {metric} [{', '.join(point)}]"


def diff_lines(name: str, d: TableDiff, shown: int = SHOWN_MOVES) -> list[str]:
    """What ``sweep-table NAME --diff`` prints for :class:`TableDiff` ``d``."""
    lines = [f"sweep {name} against results/sweeps/{name}/table.csv: {d.compared} rows in both, "
             f"{d.identical} bit-identical, {len(d.moved)} moved, {len(d.flips)} outcome(s) flipped; "
             f"{len(d.only_old)} row(s) only in the committed table, {len(d.only_new)} only in the new one"]
    if d.flips:
        lines.append("outcomes flipped:")
        lines += [f"  {_key_text(k)}: {va!r} -> {vb!r}, {oa or '-'} -> {ob or '-'}"
                  for k, va, vb, oa, ob in d.flips]
    if d.moved:
        lines.append(f"largest moves ({min(shown, len(d.moved))} of {len(d.moved)}):")
        lines += [f"  {_key_text(k)}: {va!r} -> {vb!r} (relative {rel:.3g})"
                  for k, va, vb, rel in d.moved[:shown]]
    for label, keys in (("only in the committed table", d.only_old), ("only in the new table", d.only_new)):
        if keys:
            lines.append(f"{label}: " + "; ".join(_key_text(k) for k in keys[:shown])
                         + (f"; and {len(keys) - shown} more" if len(keys) > shown else ""))
    return lines


def diff_command(project: Project, name: str) -> int:
    """``sweep-table NAME --diff``: 0, or 2 with one ``error:`` line (no such sweep, no committed table,
    tables of different parameters)."""
    try:
        committed = project.root / RESULTS_DIR / "sweeps" / check_name(name) / "table.csv"
        if not committed.is_file():
            raise FileNotFoundError(f"no committed table {committed} to compare sweep {name!r} with")
        lines = diff_lines(name, table_diff(read_committed_table(committed), collect(project, name)))
    except (FileNotFoundError, SweepTableError, ValueError) as err:
        say(f"error: {err}")
        return 2
    print("\n".join(lines))  # a closed pipe (--diff | head): ntputils.cli.main ends it quietly
    return 0
