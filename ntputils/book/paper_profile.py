"""The paper profile beside the cpu run: a chapter's committed paper-profile sweep, rendered on its page.

The book builds every chapter at the ``cpu`` profile. The ``paper`` profile (the papers' sizes, steps and
draws) runs through the sweep runner as a one-point sweep named ``<prefix>-paper``::

    python -m ntputils.book sweep a05 --profile paper -p seed=0 --name a05-paper --workers 1
    python -m ntputils.book sweep-table a05-paper --publish

and its table (recorded values and pre-registered claims, with provenance: commit, machine, date, wall
time) is committed under ``results/sweeps/a05-paper/``. :func:`beside_cpu` puts that table next to the
values the current (cpu) run recorded: one row per claim (rule, cpu measured and outcome, paper measured
and outcome) and one per recorded value. A table whose producing code changed since it was made (the
chapter's code cells or the ``ntputils`` code its run executed, :func:`ntputils.book.sweep_table.published`)
is **stale**: it is still shown, under a red STALE line with the command that refreshes it.
:func:`paper_tables` gives the scorecard the outcomes of every committed paper-profile run.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from html import escape
from typing import Any

from ntputils.book.project import Project
from ntputils.book.sweep_table import RESULTS_DIR, published, state_line

SUFFIX = "-paper"


def sweep_name(prefix: str) -> str:
    """The name of chapter ``prefix``'s paper-profile sweep (``a05`` -> ``a05-paper``)."""
    return prefix + SUFFIX


def refresh_command(prefix: str) -> str:
    """The two commands that (re)make and commit chapter ``prefix``'s paper-profile table."""
    name = sweep_name(prefix)
    return (f"python -m ntputils.book sweep {prefix} --profile paper -p seed=0 --name {name} --workers 1"
            f" && python -m ntputils.book sweep-table {name} --publish")


def _shown(value: Any) -> str:
    """A measured value as short text (numbers to 4 significant digits)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    if isinstance(value, str):
        try:
            return f"{float(value):.4g}"
        except ValueError:
            return value
    return json.dumps(value)


def _paper_value(row: Any) -> Any:
    """The value of one published table row (the number, else its JSON text)."""
    value = row["value"]
    if isinstance(value, float) and math.isnan(value):
        text = row.get("value_text")
        return text if isinstance(text, str) and text else None
    return value


@dataclass
class PaperProfileView:
    """A chapter's committed paper-profile run next to the current run (see the module docstring)."""

    prefix: str
    found: bool
    stale: bool = False
    provenance: dict[str, Any] = field(default_factory=dict)
    refresh: str = ""
    claims: Any = None   # DataFrame: key, claim, rule, cpu, cpu outcome, paper, paper outcome, same outcome
    records: Any = None  # DataFrame: value, cpu, paper
    checks: tuple[int, int, int, int] = (0, 0, 0, 0)  # passed and total: cpu run, paper run
    error: str = ""
    failed: str = ""  # the error of a paper-profile run that failed (its table has no values)
    state: str = ""  # sweep_table.state_line: current / re-certified / STALE with both refresh commands

    def counts(self) -> dict[str, int]:
        """Outcome -> number of claims under the paper profile."""
        if self.claims is None or self.claims.empty:
            return {}
        return self.claims["paper outcome"].value_counts().to_dict()

    def html(self) -> str:
        """The section's HTML: provenance (or why there is no table), a STALE line, the two tables."""
        if not self.found:
            return (f"<p><b>No committed paper-profile run</b> of {escape(self.prefix)} "
                    f"({escape(self.error)}). Make it with <code>{escape(self.refresh)}</code>.</p>")
        p = self.provenance
        head = (f"<p>Paper-profile run <code>{escape(str(p.get('name')))}</code>: commit "
                f"<code>{escape(str(p.get('git')))}</code>, {escape(str(p.get('machine')))}, finished "
                f"{escape(str(p.get('finished')))}, wall {escape(str(p.get('wall_s')))} s. Claims: "
                + (", ".join(f"{n} {escape(o)}" for o, n in sorted(self.counts().items())) or "none")
                + f". Checks (mathematical facts) passed: cpu run {self.checks[0]}/{self.checks[1]}, "
                f"paper run {self.checks[2]}/{self.checks[3]}.</p>")
        if self.failed:
            head += ("<p style='color:#c00'><b>The committed paper-profile run FAILED</b>: "
                     f"<code>{escape(self.failed[:500])}</code></p>")
        if self.stale:
            head += (f"<p style='color:#c00'><b>{escape(self.state or 'STALE')}</b> Its numbers may not be "
                     "what the current code gives.</p>")
        elif self.state:
            head += f"<p>{escape(self.state)}.</p>"
        parts = [head]
        for title, df in (("Claims (rule fixed before either run)", self.claims),
                          ("Recorded values", self.records)):
            if df is not None and not df.empty:
                parts.append(f"<p><b>{title}</b></p>" + df.to_html(index=False, escape=True, border=0))
        return "\n".join(parts)

    def text(self) -> str:
        """A plain-text summary (terminals, logs)."""
        if not self.found:
            return (f"no committed paper-profile run of {self.prefix}: {self.error}; "
                    f"make it with {self.refresh}")
        p = self.provenance
        return (f"paper-profile run {p.get('name')}: commit {p.get('git')}, finished {p.get('finished')}, "
                f"wall {p.get('wall_s')} s, claims {self.counts()}" + (" [STALE]" if self.stale else "")
                + (f" [FAILED: {self.failed.splitlines()[0] if self.failed else ''}]" if self.failed else ""))

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return self.text()


def beside_cpu(prefix: str, record: dict[str, Any], project: Project | None = None) -> PaperProfileView:
    """Chapter ``prefix``'s committed paper-profile table next to ``record`` (the running chapter's
    :func:`ntputils.chapter.current_record`: its comparisons and recorded values).

    Rows: every claim judged in either run (by key, in the cpu run's order, then those only the paper
    run judged) and every value recorded in either run. A missing table gives ``found=False`` and the
    command that makes it; never raises for a missing or unreadable table."""
    import pandas as pd

    project = project or Project.default()
    refresh = refresh_command(prefix)
    try:
        pub = published(sweep_name(prefix), project)
    except (FileNotFoundError, KeyError, ValueError) as err:
        return PaperProfileView(prefix, False, refresh=refresh, error=str(err))
    table = pub["table"]
    ok = table[table["status"] == "ok"] if "status" in table else table
    bad = table[table["status"] != "ok"] if "status" in table else table.iloc[:0]
    failed = "; ".join(str(e) for e in bad["error"].dropna().unique()) if len(bad) else ""
    cmp_rows = {r["metric"]: r for r in ok[ok["kind"] == "compare"].to_dict("records")}
    rec_rows = {r["metric"]: r for r in ok[ok["kind"] == "record"].to_dict("records")}

    cpu_cmp = {c["key"]: c for c in record.get("comparisons", [])}
    claims = []
    for key in [*cpu_cmp, *(k for k in cmp_rows if k not in cpu_cmp)]:
        c, r = cpu_cmp.get(key, {}), cmp_rows.get(key)
        claims.append({"key": key, "claim": c.get("claim", ""), "rule": c.get("rule", ""),
                       "cpu": _shown(c.get("measured")) if c else "-", "cpu outcome": c.get("outcome", "-"),
                       "paper": _shown(_paper_value(r)) if r else "-",
                       "paper outcome": r["outcome"] if r else "not in the paper run"})
        last = claims[-1]
        last["same outcome"] = "yes" if last["cpu outcome"] == last["paper outcome"] else "NO"
    cpu_rec = record.get("results", {})
    records = []
    for name in [*cpu_rec, *(k for k in rec_rows if k not in cpu_rec)]:
        entry = cpu_rec.get(name)
        cpu_value = entry.get("value") if isinstance(entry, dict) else entry
        r = rec_rows.get(name)
        records.append({"value": name, "cpu": _shown(cpu_value) if name in cpu_rec else "-",
                        "paper": _shown(_paper_value(r)) if r else "-"})
    cpu_checks = record.get("checks", [])
    paper_checks = ok[ok["kind"] == "check"]
    checks = (sum(bool(c.get("passed")) for c in cpu_checks), len(cpu_checks),
              int((paper_checks["outcome"] == "pass").sum()), len(paper_checks))
    return PaperProfileView(prefix, True, stale=bool(pub["stale"]), provenance=pub["provenance"],
                            refresh=refresh, claims=pd.DataFrame(claims), records=pd.DataFrame(records),
                            checks=checks, failed=failed or ("failed" if len(bad) else ""),
                            state=state_line(sweep_name(prefix), pub))


def show_paper_profile(prefix: str, record: dict[str, Any], profile: str) -> PaperProfileView | None:
    """Display :func:`beside_cpu` in a chapter (the last cell). When the page itself runs at the paper
    profile (it is then the run that makes the table) it only says so and returns ``None``."""
    from IPython.display import HTML, display

    if profile == "paper":
        print("this run is the paper profile itself: its values are the ones recorded above")
        return None
    view = beside_cpu(prefix, record)
    display(HTML(view.html()))
    return view


def paper_tables(project: Project) -> dict[str, dict[str, Any]]:
    """Chapter prefix -> ``{"table", "provenance", "stale"}`` for every committed ``<prefix>-paper`` sweep
    (the scorecard's paper-profile column). An unreadable folder is left out with a warning naming it."""
    base = project.root / RESULTS_DIR / "sweeps"
    out: dict[str, dict[str, Any]] = {}
    for folder in sorted(base.glob("*" + SUFFIX)) if base.is_dir() else []:
        prefix = folder.name[: -len(SUFFIX)]
        try:
            pub = published(folder.name, project)
        except (FileNotFoundError, KeyError, ValueError) as err:
            print(f"warning: paper-profile column of {prefix}: {err}", file=sys.stderr)
            continue
        out[prefix] = {"table": pub["table"], "provenance": pub["provenance"], "stale": pub["stale"]}
    return out
