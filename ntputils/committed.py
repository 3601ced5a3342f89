"""The chapter side's reader of committed results: ``results/sweeps/<name>/{table.csv,provenance.json}``.

Chapters use it through :mod:`ntputils.chapter` (``published``, ``provenance_text``, ``show_paper_profile``:
the paper-profile run and the five-seed run beside the cpu run); the runner imports it for the scorecard,
re-certification and publishing. Whether a table is current is the runner's to say: before it runs a
chapter it hands each table's currency over in the file ``$NTPBOOK_CURRENCY``. Nothing of ``ntputils.book``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

RESULTS_DIR = "results"
#: the project whose committed tables a chapter reads (set by the runner; default: this checkout)
ROOT_ENV = "NTPBOOK_ROOT"
#: set by the sweep runner in a point's kernel (``<sweep>/<point id>``): :func:`published` then reads
#: nothing, so a point never records another table's values (or its currency) as its own
POINT_ENV = "NTPBOOK_SWEEP_POINT"
#: the chapter's record file (:data:`ntputils.chapter.RECORD_ENV`); the tables read are noted beside it
RECORD_ENV = "NTPBOOK_RECORD"
#: a JSON file of ``{name: {"stale", "current_hash", "recertify_seconds"}}`` the runner writes per run
CURRENCY_ENV = "NTPBOOK_CURRENCY"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
PAPER_SUFFIX, SEEDS_SUFFIX = "-paper", "-seeds"
SEEDS = (0, 1, 2, 3, 4)
#: a claim is reproduced across seeds when it holds at this many of the five (fixed before any seed run)
SEEDS_REPRODUCED_AT = 4
UNCHECKED = "currency not checked: run through `python -m ntputils.book build` to check"


class SweepTableError(ValueError):
    """A sweep name, sweep folder or committed table that cannot be used (exit code 2; the message names
    the file)."""


class UnreadableTable(FileNotFoundError):
    """A committed table whose files exist but cannot be read (garbled CSV or provenance): its readers
    treat it as absent, with this message naming the folder and how to restore it; ``path`` is the file
    that failed and ``why`` what is wrong with it (the runner names the file)."""

    def __init__(self, message: str, path: Path, why: str):
        super().__init__(message)
        self.path, self.why = path, why


def check_name(name: Any) -> str:
    """A sweep name as ``sweep --name`` accepts it (letters, digits, ``.``, ``_``, ``-``; no path
    separator, no ``..``); raises :class:`SweepTableError` before anything is read or written."""
    if not isinstance(name, str) or not NAME_RE.match(name) or ".." in name:
        raise SweepTableError(f"sweep name {name!r}: use letters, digits, '.', '_' or '-' (at most 80, "
                              "starting with a letter or digit; no path separators)")
    return name


def default_root() -> Path:
    """``$NTPBOOK_ROOT`` or the checkout that holds this package."""
    from ntputils.paths import REPO_ROOT

    env = os.environ.get(ROOT_ENV)
    return Path(env).resolve() if env else REPO_ROOT


def table_digest(folder: Path) -> str | None:
    """sha256 over the relative paths and contents of the files of a committed table's folder
    (``results/sweeps/<name>/``), or ``None`` when there is no such folder."""
    if not folder.is_dir():
        return None
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix().encode()
        h.update(rel + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def tables_path(record: Path) -> Path:
    """Where the kernel notes the committed tables it read (:func:`note_read`): ``tables.json`` beside
    the record."""
    return record.with_name("tables.json")


def _json(path: Path | str | None) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text()) if path else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def note_read(folder: Path) -> None:
    """In a chapter run by the build (``NTPBOOK_RECORD`` set): add the committed table ``folder`` and its
    :func:`table_digest` (``None``: no such table yet) to ``tables.json`` beside the record, which the
    runner stores with the run: the build key covers exactly those tables."""
    record = os.environ.get(RECORD_ENV)
    if not record:
        return
    path = tables_path(Path(record))
    noted = _json(path)
    noted[folder.name] = table_digest(folder)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(noted, indent=1))
    os.replace(tmp, path)


def handed_currency() -> dict[str, Any]:
    """The currency the runner computed for every committed table (``{}`` outside the runner)."""
    return _json(os.environ.get(CURRENCY_ENV))


#: columns every published table has (``ntputils.sweeps.table.collect``) that its readers use
TABLE_COLUMNS = ("point_id", "kind", "metric", "value", "outcome")


def read_committed(name: str, root: Path | None = None) -> tuple[Any, dict[str, Any]]:
    """``(table, provenance)`` of ``results/sweeps/<name>/``; ``FileNotFoundError`` when there is none,
    :class:`UnreadableTable` (naming the folder, never a machine path) when it cannot be read."""
    import pandas as pd

    folder = (root or default_root()) / RESULTS_DIR / "sweeps" / check_name(name)
    shown = f"{RESULTS_DIR}/sweeps/{name}"  # no machine path on a page
    if not (folder / "provenance.json").is_file():
        raise FileNotFoundError(f"no published sweep {name!r} in {shown}")

    def unreadable(fname: str, err: Exception) -> UnreadableTable:
        text = " ".join(str(err).split())
        why = f"{type(err).__name__}: {text[:200]}{'...' if len(text) > 200 else ''}"
        return UnreadableTable(f"the committed table {shown} cannot be read ({fname}: {why}); restore it "
                               f"with `git checkout -- {shown}` or publish it again", folder / fname, why)

    try:
        prov = json.loads((folder / "provenance.json").read_text())
        if not isinstance(prov, dict) or not isinstance(prov.get("axes"), dict) or not prov.get("chapter"):
            raise ValueError("not a provenance record (no chapter or axes)")
        prefix, _, kind = name.rpartition("-")
        if f"-{kind}" in (PAPER_SUFFIX, SEEDS_SUFFIX) and not str(prov["chapter"]).startswith(prefix + "_"):
            # a table copied or renamed from another chapter must not speak on this chapter's page
            raise ValueError(f"it is of chapter {prov['chapter']}, not of {prefix}")
    except (OSError, ValueError) as err:
        raise unreadable("provenance.json", err) from None
    try:  # ParserError, EmptyDataError and UnicodeDecodeError are ValueErrors
        table = pd.read_csv(folder / "table.csv")
        if missing := [c for c in TABLE_COLUMNS if c not in table.columns]:
            raise ValueError(f"not a sweep table (no column {', '.join(missing)})")
        if name.endswith(SEEDS_SUFFIX):
            seeds = pd.to_numeric(table["seed"], errors="coerce") if "seed" in table else None
            if seeds is None or not (seeds % 1 == 0).all():
                raise ValueError("a seed table needs a column seed of whole numbers")
    except (OSError, ValueError) as err:
        raise unreadable("table.csv", err) from None
    try:
        spread = read_spread(folder)
    except ValueError as err:
        raise unreadable(SPREAD_FILE, err) from None
    if spread:
        table["machine_fragile"] = machine_fragile(table, spread)
    return table, prov


#: recorded values that are a training's own wall time (a06: ``a06_train_wall_<data>_<model>``, a07:
#: ``a07_train_seconds``); a point that reloads a finished training records the seconds it took when it ran
TRAINING_TIME = re.compile(r"_train_seconds$|_train_wall_")


def remake_cost(table: Any) -> dict[str, Any] | None:
    """What remaking a committed table costs where its training checkpoints are not at hand (a fresh clone:
    they live in the ``.cache`` of the machine that made it), from what the table recorded.

    A point's ``seconds`` are its wall time; its training time is the sum of its :data:`TRAINING_TIME`
    values. A point whose training time exceeds its wall cannot have trained in that wall: it reloaded its
    trainings and costs its wall plus their time. Returns ``{"seconds", "training", "reloaded", "points",
    "per_point"}`` (``per_point``: point id -> seconds), or ``None`` when the table records no seconds."""
    import pandas as pd

    if "seconds" not in table or table.empty:
        return None
    wall = pd.to_numeric(table.drop_duplicates("point_id").set_index("point_id")["seconds"],
                         errors="coerce").fillna(0.0)
    rows = table[(table["kind"] == "record") & table["metric"].astype(str).str.contains(TRAINING_TIME)]
    training = (pd.to_numeric(rows["value"], errors="coerce").fillna(0.0).groupby(rows["point_id"]).sum()
                .reindex(wall.index, fill_value=0.0))
    reloaded = training > wall
    fresh = wall + training.where(reloaded, 0.0)
    return {"seconds": float(fresh.sum()), "training": float(training.sum()), "reloaded": int(reloaded.sum()),
            "points": len(wall), "per_point": {str(k): float(v) for k, v in fresh.items()}}


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``: a wall time for a reader (pages, ``sweep-status``)."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def wall_text(prov: dict[str, Any], cost: dict[str, Any] | None) -> str:
    """``"wall 158.1 s (2 of 2 points reloaded trainings that took 5 h 46 min when they ran)"``: the recorded
    wall of a table and, when it holds reloads, the training time it does not show."""
    text = f"wall {prov.get('wall_s')} s"
    if cost and cost["reloaded"]:
        text += (f" ({cost['reloaded']} of {cost['points']} points reloaded trainings that took "
                 f"{duration(cost['training'])} when they ran)")
    return text


def recertified(prov: dict[str, Any]) -> dict[str, Any] | None:
    """The latest re-certification of a committed table (``provenance["history"]``), or ``None``."""
    entries = [h for h in prov.get("history", []) if h.get("event") == "recertified"]
    return entries[-1] if entries else None


def described(name: str, table: Any, prov: dict[str, Any], currency: dict[str, Any] | None) -> dict[str, Any]:
    """What :func:`published` returns for a read table and its ``currency`` (``None``: not checked, and
    ``stale`` is ``None``)."""
    currency = currency or {}
    return {"table": table, "provenance": prov, "current_hash": currency.get("current_hash"),
            "stale": currency.get("stale"),
            "refresh": f"{prov.get('command')} && python -m ntputils.book sweep-table {name} --publish",
            "recertify": f"python -m ntputils.book recertify {name}", "recertified": recertified(prov),
            "remake": remake_cost(table), "recertify_seconds": currency.get("recertify_seconds")}


def published(name: str, root: Path | None = None, currency: dict[str, Any] | None = None) -> dict[str, Any]:
    """The committed sweep ``name`` (of the project at ``root``, default :func:`default_root`): ``table``
    (DataFrame), ``provenance``, ``stale`` (code the table ran has changed since it was made: ``True`` /
    ``False`` as the runner found, ``None`` when not checked), ``refresh`` and ``recertify`` (the commands
    that bring it up to date) and their estimated costs. ``currency``: name -> the runner's verdict
    (default: :func:`handed_currency`). The run notes what it read (:func:`note_read`), found or not.

    Inside a sweep point (:data:`POINT_ENV` set) it raises ``FileNotFoundError``: a point's record holds
    only what that point computed, never values (or a stale flag) of a committed table."""
    if os.environ.get(POINT_ENV):
        raise FileNotFoundError(f"committed table {name!r} not read: this run is a sweep point "
                                f"({os.environ[POINT_ENV]}), and a point's record holds only its own values")
    root = root or default_root()
    note_read(root / RESULTS_DIR / "sweeps" / check_name(name))  # before reading: see the build key
    table, prov = read_committed(name, root)
    return described(name, table, prov, (handed_currency() if currency is None else currency).get(name))


def shown_committed(name: str, root: Path | None = None) -> dict[str, Any] | None:
    """:func:`published` for a chapter section that shows a committed sweep: prints where it comes from and
    whether it is current (:func:`provenance_text`), or why there is none, and returns it (``None``: no
    table to show, because none is committed or this run is a sweep point)."""
    try:
        pub = published(name, root)
    except FileNotFoundError as err:
        print(f"no committed sweep: {err}")
        return None
    print(provenance_text(name, pub))
    return pub


def state_line(name: str, pub: dict[str, Any]) -> str:
    """Whether a committed table (:func:`published`) is current, re-certified, STALE or not checked; a
    STALE line names both ways to refresh it and what each costs (from the table's recorded times)."""
    rec = pub.get("recertified")
    if pub["stale"] is None:
        return UNCHECKED
    if not pub["stale"]:
        if rec:
            return (f"current: re-certified at {str(rec.get('commit'))[:12]} on {rec.get('date')} by "
                    f"re-running {rec.get('points')} of {rec.get('of')} points")
        return "current (the code it ran is unchanged)"
    est = pub.get("recertify_seconds")
    cost = f"about {duration(est)} of point time" if est is not None else "a sample of its points"
    prov = pub.get("provenance") or {}
    made = ".".join(str(prov.get("versions", {}).get("python", "")).split(".")[:2])
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    held_python = (prov.get("fingerprint") or {}).get("version", 2) <= 2  # format 3 leaves Python out
    why = ("code this table ran has changed since it was made" if made in ("", here) or not held_python else
           f"it was made with Python {made} and this run is Python {here} (a table's fingerprint holds "
           f"Python's minor version; under Python {made}, e.g. `make book PYTHON=python{made}` in a new "
           ".venv, it is current again if its code is unchanged)")
    remake = pub.get("remake")
    whole = (f"about {duration(remake['seconds'])} of point time without its training checkpoints"
             if remake else f"about {prov.get('wall_s')} s wall")
    return (f"STALE: {why}. Re-certify ({cost}): `{pub['recertify']}`; or refresh it whole ({whole}): "
            f"`{pub['refresh']}`")


def provenance_text(name: str, pub: dict[str, Any]) -> str:
    """Two lines for a chapter that shows a committed table: where it comes from and :func:`state_line`."""
    prov = pub["provenance"]
    return (f"sweep {prov.get('name', name)}: {prov.get('points')} points, profile {prov.get('profile')}, "
            f"commit {prov.get('git')}, {prov.get('machine')}{made_with(prov)}, finished "
            f"{prov.get('finished')}, {wall_text(prov, pub.get('remake'))}\n{state_line(name, pub)}")


def made_with(prov: dict[str, Any]) -> str:
    """``", made on an NVIDIA H100 80GB HBM3 (cuda, tf32), torch 2.11.0+cu130, Python 3.12.3"``: the device
    and versions a table's provenance records (``""`` when it records none)."""
    env, versions = prov.get("environment") or {}, prov.get("versions") or {}
    settings = ", ".join(str(x) for x in (env.get("device"), env.get("precision"),
                                          env.get("compile") and f"compiled: {env['compile']}") if x)
    where = (f", made on {env['gpu']} ({settings})" if env.get("gpu")
             else f", made on {env['device']}" if env.get("device") else "")
    made = [f"torch {versions['torch']}" if versions.get("torch") else "",
            f"Python {versions['python']}" if versions.get("python") else ""]
    return where + "".join(f", {m}" for m in made if m)


def _state_html(stale: bool | None, state: str) -> str:
    if stale:
        return (f"<p style='color:#c00'><b>{escape(state or 'STALE')}</b> Its numbers may not be what the "
                "current code gives.</p>")
    return f"<p>{escape(state)}.</p>" if state else ""


# ----------------------------------------------------------------------------------------------
# the paper profile beside the cpu run
# ----------------------------------------------------------------------------------------------
# The book builds every chapter at the cpu profile; the paper profile (the papers' sizes) runs as a
# one-point sweep ``<prefix>-paper`` (:func:`refresh_command`), committed under results/sweeps/.


def sweep_name(prefix: str) -> str:
    """The name of chapter ``prefix``'s paper-profile sweep (``a05`` -> ``a05-paper``)."""
    return prefix + PAPER_SUFFIX


def sweep_command(prefix: str, axes: dict[str, Any], name: str, workers: int,
                  profile: str | None = None) -> str:
    """The two commands that (re)make and commit the sweep ``name`` of chapter ``prefix``: ``axes`` maps a
    parameter to its value, or to a tuple or list of values (an axis of the sweep); ``profile`` ``None`` is
    the cpu profile. E.g. ``sweep_command("a07", {"d": (64, 128), "seed": 0}, "a07-w", 2)``."""
    spelled = " ".join(f"-p {k}={','.join(map(str, v)) if isinstance(v, tuple | list) else v}"
                       for k, v in axes.items())
    chosen = f" --profile {profile}" if profile else ""
    return (f"python -m ntputils.book sweep {prefix}{chosen} {spelled} --name {name} --workers {workers}"
            f" && python -m ntputils.book sweep-table {name} --publish")


def recorded_values(table: Any, index: str | list[str]) -> Any:
    """The values a committed sweep ``table`` recorded at its finished points, one row per point (``index``:
    the swept parameters that tell the points apart) and one column per metric."""
    done = table[(table.status == "ok") & (table.kind == "record")]
    return done.pivot_table(index=index, columns="metric", values="value")


def control_values(table: Any, index: str | list[str]) -> Any:
    """The negative controls' values a committed sweep ``table`` judged at its finished points (rows of kind
    ``control``), one row per point (``index`` as :func:`recorded_values`) and one column per claim key."""
    done = table[(table.status == "ok") & (table.kind == "control")]
    return done.pivot_table(index=index, columns="metric", values="value")


def refresh_command(prefix: str) -> str:
    """The two commands that (re)make and commit chapter ``prefix``'s paper-profile table."""
    return sweep_command(prefix, {"seed": 0}, sweep_name(prefix), workers=1, profile="paper")


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
    """A chapter's committed paper-profile run next to the current run (:func:`beside_cpu`)."""

    prefix: str
    found: bool
    stale: bool | None = False  # None: currency not checked (outside the runner)
    provenance: dict[str, Any] = field(default_factory=dict)
    remake: dict[str, Any] | None = None  # :func:`remake_cost` of its table
    refresh: str = ""
    claims: Any = None   # DataFrame: key, claim, rule, cpu, cpu outcome, paper, paper outcome, same outcome
    records: Any = None  # DataFrame: value, cpu, paper
    checks: tuple[int, int, int, int] = (0, 0, 0, 0)  # passed and total: cpu run, paper run
    error: str = ""
    failed: str = ""  # the error of a paper-profile run that failed (its table has no values)
    state: str = ""  # state_line: current / re-certified / STALE with both refresh commands / not checked
    seeds: Any = None  # the five-seed view shown with it (show_paper_profile)
    dots: list[DotRow] = field(default_factory=list)  # per claim: the cpu run's and the paper run's value

    def counts(self) -> dict[str, int]:
        """Outcome -> number of claims under the paper profile."""
        if self.claims is None or self.claims.empty:
            return {}
        return self.claims["paper outcome"].value_counts().to_dict()

    def html(self) -> str:
        """The section's HTML: provenance (or why there is no table), a STALE line, a dot plot of the
        claims (:func:`plot_html`) and, folded below it, the two tables."""
        if not self.found:
            return (f"<p><b>No committed paper-profile run</b> of {escape(self.prefix)} "
                    f"({escape(self.error)}). Make it with <code>{escape(self.refresh)}</code>.</p>")
        p = self.provenance
        head = (f"<p>Paper-profile run <code>{escape(str(p.get('name')))}</code>: commit "
                f"<code>{escape(str(p.get('git')))}</code>, {escape(str(p.get('machine')))}, finished "
                f"{escape(str(p.get('finished')))}, {escape(wall_text(p, self.remake))}. Claims: "
                + (", ".join(f"{n} {escape(o)}" for o, n in sorted(self.counts().items())) or "none")
                + f". Checks (mathematical facts) passed: cpu run {self.checks[0]}/{self.checks[1]}, "
                f"paper run {self.checks[2]}/{self.checks[3]}.</p>")
        if self.failed:
            head += ("<p style='color:#c00'><b>The committed paper-profile run FAILED</b>: "
                     f"<code>{escape(self.failed[:500])}</code></p>")
        parts = [head + _state_html(self.stale, self.state), plot_html(self.dots, PAPER_LANES, "outcomes",
                                                                "'differ': the runs' outcomes differ.")]
        tables, sizes = [], []
        for title, df, what in (("Claims (rule fixed before either run)", self.claims, "claims"),
                                ("Recorded values", self.records, "recorded values")):
            if df is not None and not df.empty:
                tables.append(f"<p><b>{title}</b></p>" + df.to_html(index=False, escape=True, border=0))
                sizes.append(f"{len(df)} {what}")
        parts.append(folded(f"The numbers: {' and '.join(sizes)} (click to open)", "\n".join(tables)))
        return "\n".join(p for p in parts if p)

    def text(self) -> str:
        """A plain-text summary (terminals, logs)."""
        if not self.found:
            return (f"no committed paper-profile run of {self.prefix}: {self.error}; "
                    f"make it with {self.refresh}")
        p = self.provenance
        return (f"paper-profile run {p.get('name')}: commit {p.get('git')}, finished {p.get('finished')}, "
                f"{wall_text(p, self.remake)}, claims {self.counts()}"
                + (" [STALE]" if self.stale else " [currency not checked]" if self.stale is None else "")
                + (f" [FAILED: {self.failed.splitlines()[0] if self.failed else ''}]" if self.failed else ""))

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return self.text()


def beside_cpu(prefix: str, record: dict[str, Any], root: Path | None = None,
               currency: dict[str, Any] | None = None) -> PaperProfileView:
    """Chapter ``prefix``'s committed paper-profile table next to ``record`` (the running chapter's
    :func:`ntputils.chapter.current_record`: its comparisons and recorded values).

    Rows: every claim judged in either run (by key, in the cpu run's order, then those only the paper
    run judged) and every value recorded in either run. A missing table gives ``found=False`` and the
    command that makes it; never raises for a missing or unreadable table."""
    import pandas as pd

    refresh = refresh_command(prefix)
    try:
        pub = published(sweep_name(prefix), root, currency)
    except (FileNotFoundError, KeyError, ValueError) as err:
        return PaperProfileView(prefix, False, refresh=refresh, error=str(err))
    table = pub["table"]
    ok = table[table["status"] == "ok"] if "status" in table else table
    bad = table[table["status"] != "ok"] if "status" in table else table.iloc[:0]
    failed = "; ".join(str(e) for e in bad["error"].dropna().unique()) if len(bad) and "error" in bad else ""
    cmp_rows = {r["metric"]: r for r in ok[ok["kind"] == "compare"].to_dict("records")}
    rec_rows = {r["metric"]: r for r in ok[ok["kind"] == "record"].to_dict("records")}

    cpu_cmp = {c["key"]: c for c in record.get("comparisons", [])}
    claims, dots = [], []
    for key in [*cpu_cmp, *(k for k in cmp_rows if k not in cpu_cmp)]:
        c, r = cpu_cmp.get(key, {}), cmp_rows.get(key)
        cpu_outcome, paper_outcome = c.get("outcome"), (r["outcome"] if r else None)
        dots.append(DotRow(str(key), [Dot(0, c.get("measured"), cpu_outcome, c.get("low"), c.get("high")),
                                      Dot(1, _paper_value(r) if r else None, paper_outcome,
                                          r.get("low") if r else None, r.get("high") if r else None)],
                           note="differ" if c and r and cpu_outcome != paper_outcome else "",
                           note_outcome="deviates"))
        claims.append({"key": key, "claim": c.get("claim", ""), "rule": c.get("rule", ""),
                       "cpu": _shown(c.get("measured")) if c else "-", "cpu outcome": c.get("outcome", "-"),
                       "paper": _shown(_paper_value(r)) if r else "-",
                       "paper outcome": (r["outcome"] + (f" ({MACHINE_FRAGILE})" if r.get("machine_fragile")
                                                         else "")) if r else "not in the paper run"})
        last = claims[-1]
        last["same outcome"] = "yes" if r is not None and last["cpu outcome"] == r["outcome"] else "NO"
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
    return PaperProfileView(prefix, True, stale=pub["stale"], provenance=pub["provenance"],
                            remake=pub.get("remake"), refresh=refresh, claims=pd.DataFrame(claims),
                            records=pd.DataFrame(records),
                            checks=checks, failed=failed or ("failed" if len(bad) else ""),
                            state=state_line(sweep_name(prefix), pub), dots=dots)


def show_paper_profile(prefix: str, record: dict[str, Any], profile: str) -> PaperProfileView | None:
    """Display :func:`beside_cpu` and :func:`seeds_view` in a chapter (the last cell). When the page itself
    runs at the paper profile (it is then the run that makes the table) it only says so and returns
    ``None``."""
    from IPython.display import HTML, display

    if profile == "paper":
        print("this run is the paper profile itself: its values are the ones recorded above")
        return None
    view = beside_cpu(prefix, record)
    view.seeds = seeds_view(prefix, record)
    display(HTML(view.html() + "\n" + view.seeds.html()))
    return view


def _published_tables(root: Path | None, currency: dict[str, Any] | None,
                      wanted: Callable[[str], bool]) -> dict[str, dict[str, Any]]:
    """Table name -> :func:`published` of every committed table folder whose name is ``wanted`` (an
    unreadable folder is left out with a warning naming it); the runner passes ``currency``."""
    root = root or default_root()
    base = root / RESULTS_DIR / "sweeps"
    currency = handed_currency() if currency is None else currency
    out: dict[str, dict[str, Any]] = {}
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        if folder.name.startswith(".") or not folder.is_dir() or not wanted(folder.name):
            continue
        try:
            out[folder.name] = published(folder.name, root, currency)
        except (FileNotFoundError, KeyError, ValueError) as err:
            print(f"warning: committed table {folder.name}: {err}", file=sys.stderr)
    return out


def _tables(suffix: str, root: Path | None, currency: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Chapter prefix -> :func:`published` of every committed ``<prefix><suffix>`` table."""
    return {name[: -len(suffix)]: pub
            for name, pub in _published_tables(root, currency, lambda n: n.endswith(suffix)).items()}


def paper_tables(root: Path | None = None, currency: dict[str, Any] | None = None) -> dict[str, dict]:
    """Chapter prefix -> ``{"table", "provenance", "stale"}`` for every committed ``<prefix>-paper`` sweep
    (the scorecard's paper-profile column)."""
    return {prefix: {k: pub[k] for k in ("table", "provenance", "stale")}
            for prefix, pub in _tables(PAPER_SUFFIX, root, currency).items()}


def other_tables(root: Path | None = None, currency: dict[str, Any] | None = None) -> dict[str, dict]:
    """Table name -> ``{"table", "provenance", "stale", "prefix"}`` for every committed sweep that is
    neither a ``-paper`` nor a ``-seeds`` table (a07's ladder toward the paper's model, parameter sweeps):
    the scorecard counts their claims too. ``prefix``: the chapter's (from the provenance)."""
    tables = _published_tables(root, currency, lambda n: not n.endswith((PAPER_SUFFIX, SEEDS_SUFFIX)))
    return {name: {k: pub[k] for k in ("table", "provenance", "stale")}
            | {"prefix": str(pub["provenance"].get("chapter", "")).split("_")[0]}
            for name, pub in tables.items()}


# ----------------------------------------------------------------------------------------------
# five seeds: does a claim hold at other seeds than the one the page ran?
# ----------------------------------------------------------------------------------------------


#: a claim's outcome when the rule holds for the measurement *and* for its negative control: no evidence
CANNOT_FAIL = "cannot fail"
#: a claim's five-seed verdict when all seeds measured the same non-integer value: the seed entered no
#: computation (five seeds landing on the same float are one measurement)
SEED_NOT_USED = "deterministic (seed not used)"
#: ... when all seeds measured the same whole number (a count, a step, a share of one run, inf): the seed
#: may have entered (five trainings reaching the same step count) or not (a data set's size); the table
#: cannot tell, so its seeds do not count either
SEED_SAME_COUNT = "the same whole number at every seed (whether the seed entered is unknown)"
#: the five-seed verdicts that have no say in a claim's verdict
SEEDS_WITHOUT_SAY = (SEED_NOT_USED, SEED_SAME_COUNT)
NO_CONTROL = "no control"


def control_text(row: dict[str, Any]) -> str:
    """A judged claim's negative control as pages show it: what it is, its value and whether the claim's
    rule holds for it (``passes``: the claim cannot fail), or :data:`NO_CONTROL`."""
    if not row.get("control"):
        return NO_CONTROL
    if row.get("control_value") is None:
        return f"{row['control']}: not measured"
    verdict = "passes" if row.get("control_passes") else "fails"
    return f"{row['control']}: {_shown(row['control_value'])} ({verdict})"


def seeds_name(prefix: str) -> str:
    """The name of chapter ``prefix``'s seed sweep (``a05`` -> ``a05-seeds``)."""
    return prefix + SEEDS_SUFFIX


def seeds_command(prefix: str) -> str:
    """The two commands that (re)make and commit chapter ``prefix``'s five-seed table (cpu profile)."""
    return sweep_command(prefix, {"seed": SEEDS}, seeds_name(prefix), workers=2)


def seed_verdict(outcomes: list[str], values: list[Any] | None = None) -> str:
    """``reproduced`` when at least :data:`SEEDS_REPRODUCED_AT` seeds reproduce the claim, ``deviates``
    at none, ``fragile`` in between; ``not run`` when no seed measured it (the scorecard's words: its
    ``not reproduced`` means that what a claim needs is not available). A claim that holds at enough
    seeds only together with seeds where it :data:`CANNOT_FAIL` reads ``cannot fail``. ``values``: the
    seeds' measured values; when every seed measured the very same value the seed entered no computation
    of the claim, and the verdict is :data:`SEED_NOT_USED` (five identical rows are one measurement) --
    unless that value is a whole number (or infinite), which five seeded runs can share:
    :data:`SEED_SAME_COUNT`, which does not count either."""
    measured = [v for v in values or [] if v is not None]
    if len(measured) == len(outcomes) > 1 and len(set(map(repr, measured))) == 1 \
            and len(set(outcomes)) == 1 and outcomes[0] not in ("failed", "not run"):
        return SEED_SAME_COUNT if _whole(measured[0]) else SEED_NOT_USED
    k = outcomes.count("reproduced")
    if k >= SEEDS_REPRODUCED_AT:
        return "reproduced"
    if k + outcomes.count(CANNOT_FAIL) >= SEEDS_REPRODUCED_AT:
        return CANNOT_FAIL
    if k == 0:
        return "not run" if all(o == "not run" for o in outcomes) else "deviates"
    return "fragile"


def _whole(value: Any) -> bool:
    """Whether a measured value is a whole number or infinite (``True``/``False`` are 1 and 0)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return False
    return math.isinf(number) or number.is_integer()


def seed_claims(table: Any) -> dict[str, dict[str, Any]]:
    """Claim key -> ``{"k", "n", "outcomes", "values", "verdict"}`` of a seed table: ``outcomes`` and
    ``values`` by seed (a seed whose point failed: outcome ``failed``), ``k`` seeds of ``n`` reproduced."""
    points = table.drop_duplicates("point_id")
    seeds = {pid: int(s) for pid, s in zip(points["point_id"], points["seed"], strict=True)}
    ok = table[table["kind"] == "compare"]
    ok = ok[ok["status"] == "ok"] if "status" in ok else ok
    out: dict[str, dict[str, Any]] = {}
    for key, rows in ok.groupby("metric", sort=False):
        by_seed = {seeds[r["point_id"]]: r for r in rows.to_dict("records")}
        outcomes = {s: by_seed[s]["outcome"] if s in by_seed else "failed" for s in sorted({*seeds.values()})}
        values = {s: _paper_value(by_seed[s]) if s in by_seed else None for s in outcomes}
        listed = list(outcomes.values())
        machine = [s for s in outcomes if s in by_seed and bool(by_seed[s].get("machine_fragile", False))]
        out[key] = {"k": listed.count("reproduced"), "n": len(listed), "outcomes": outcomes, "values": values,
                    "verdict": seed_verdict(listed, list(values.values())), "machine": machine,
                    "machine_fragile": verdict_may_flip(outcomes, machine)}
    return out


def verdict_may_flip(outcomes: dict[int, str], machine: list[int]) -> bool:
    """Whether the five-seed verdict changes when the seeds ``machine`` (their claim :data:`MACHINE_FRAGILE`)
    all reproduce or all deviate: the verdict then depends on the CPU."""
    if not machine:
        return False
    ends = [[o if s not in machine else flipped for s, o in outcomes.items()]
            for flipped in ("reproduced", "deviates")]
    return seed_verdict(ends[0]) != seed_verdict(ends[1])


#: cross-machine tolerance of a value measured twice by the same code and seed (other CPUs' BLAS kernels
#: round differently): the re-certifier's and the same-seed line's; outcomes must match exactly
FLOAT_RTOL, FLOAT_ATOL = 1e-4, 1e-9
#: parameters a page's run may set and still be a point of its five-seed table
SEED_TABLE_PARAMETERS = {"profile", "seed", "device"}


def value_gap(u: Any, v: Any, rtol: float = FLOAT_RTOL) -> float | None:
    """The largest relative difference of two values of one shape (numbers, or JSON lists and dicts of
    them) whose numbers are all within ``rtol`` (default :data:`FLOAT_RTOL`) / :data:`FLOAT_ATOL`, else
    ``None`` (``rtol=math.inf``: the difference of any two finite values of one shape)."""
    if isinstance(u, dict) and isinstance(v, dict):
        gaps = [value_gap(u[k], v[k], rtol) for k in u] if u.keys() == v.keys() else [None]
    elif isinstance(u, list) and isinstance(v, list):
        gaps = [value_gap(p, q, rtol) for p, q in zip(u, v, strict=True)] if len(u) == len(v) else [None]
    elif isinstance(u, (int, float)) and isinstance(v, (int, float)) and not isinstance(u, bool):
        if u == v or (math.isnan(u) and math.isnan(v)):
            return 0.0
        if not (math.isfinite(u) and math.isfinite(v)) or not math.isclose(u, v, rel_tol=rtol,
                                                                            abs_tol=FLOAT_ATOL):
            return None
        return abs(u - v) / max(abs(u), abs(v), FLOAT_ATOL)
    else:
        return 0.0 if u == v else None
    return None if None in gaps else max(gaps, default=0.0)


# ----------------------------------------------------------------------------------------------
# a value's spread across CPU code paths (``python -m ntputils.book spread``)
# ----------------------------------------------------------------------------------------------

#: beside a committed table: each value's measured spread across CPU code paths of one machine
SPREAD_FILE = "spread.json"
#: a value with a recorded spread ``s`` matches within ``max(FLOAT_RTOL, SPREAD_MULTIPLE * s)``: other
#: CPUs take other paths than the ones measured, so the band is wider than what one machine showed
SPREAD_MULTIPLE = 3.0
#: a claim whose rule bound lies inside its value's band: its outcome may flip on another CPU
MACHINE_FRAGILE = "fragile (machine)"


def read_spread(folder: Path) -> dict[str, Any]:
    """The ``spread.json`` beside a committed table (``{}``: none); ``ValueError`` naming the file when it is
    not a spread record."""
    path = folder / SPREAD_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("spread"), dict):
            raise ValueError("no 'spread' mapping")
    except (OSError, ValueError) as err:
        raise ValueError(f"{path.parent.name}/{SPREAD_FILE} is not a spread record ({err})") from None
    return data


def spread_of(spread: dict[str, Any], kind: str, metric: str) -> float | None:
    """The recorded spread of value ``kind``/``metric`` (``None``: not measured or not comparable)."""
    value = ((spread.get("spread") or {}).get(kind) or {}).get(metric)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def value_tolerance(spread: float | None) -> float:
    """The relative tolerance of a value of recorded ``spread`` (``None``: :data:`FLOAT_RTOL`)."""
    return FLOAT_RTOL if spread is None else max(FLOAT_RTOL, SPREAD_MULTIPLE * spread)


def crosses_bound(value: Any, rtol: float, low: Any, high: Any) -> bool:
    """Whether a rule bound (``low``/``high``; ``None`` or NaN: open) lies inside ``value``'s band
    ``[value - rtol |value|, value + rtol |value|]``: the claim's outcome may differ on another CPU."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return False
    if not math.isfinite(x):
        return False
    band = rtol * max(abs(x), FLOAT_ATOL)
    bounds = [float(b) for b in (low, high) if isinstance(b, (int, float)) and not isinstance(b, bool)]
    return any(math.isfinite(b) and x - band <= b <= x + band for b in bounds)


def machine_fragile(table: Any, spread: dict[str, Any]) -> list[bool]:
    """Per row of a committed table: a judged claim (``compare``) whose value, or its negative control's
    value, has a recorded spread whose band (:func:`value_tolerance`) holds a bound of its rule (columns
    ``low``, ``high``). Without bounds or a spread: ``False``."""
    if not spread or "low" not in table or "high" not in table:
        return [False] * len(table)
    controls = {(r["point_id"], r["metric"]): r["value"] for r in table[table["kind"] == "control"]
                .to_dict("records")}
    out = []
    for r in table.to_dict("records"):
        fragile = False
        if r["kind"] == "compare":
            control = controls.get((r["point_id"], r["metric"]))
            for kind, value in (("compare", r["value"]), ("control", control)):
                s = spread_of(spread, kind, r["metric"])
                fragile = fragile or (s is not None and crosses_bound(value, value_tolerance(s), r["low"],
                                                                      r["high"]))
        out.append(fragile)
    return out


def _as_value(value: Any) -> Any:
    """A measured value as recorded (a number, JSON text of a list or dict, ``"inf"``) -> Python value."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            return value


def fixed_parameters(provenance: dict[str, Any] | None) -> dict[str, Any]:
    """The parameters a seed table sets besides the seed (its other axes, e.g. b04's ``data_sample=0.9``):
    where there are any, its points are not the book's cpu run of the same seed."""
    axes = (provenance or {}).get("axes") or {}
    return {k: v for k, v in axes.items() if k not in SEED_TABLE_PARAMETERS}


def same_seed_line(claims: dict[str, dict[str, Any]], record: dict[str, Any] | None,
                   provenance: dict[str, Any] | None = None) -> str:
    """Whether this page's run measured what the table's point of the same seed measured ("same seed,
    same numbers" between the book's kernel and a sweep worker). Compared: every claim both measured, by
    value (:func:`value_gap`) and outcome. Empty when the run is not a point of the table (another
    profile, other parameters on either side: the page's overrides, the table's :func:`fixed_parameters`
    from its ``provenance``; a seed outside it, no measured claim in common)."""
    record = record or {}
    if (record.get("profile") != "cpu" or set(record.get("injected") or []) - SEED_TABLE_PARAMETERS
            or fixed_parameters(provenance)):
        return ""
    seed = record.get("seed")
    page = {c.get("key"): c for c in record.get("comparisons", [])}
    unmeasured = ("not run", "failed")  # e.g. a claim that reads another committed table, which a point skips
    common = [k for k, c in claims.items() if k in page and page[k].get("outcome") not in unmeasured
              and c["outcomes"].get(seed, "failed") not in unmeasured]
    if not common:
        return ""
    differ = [k for k in common if claims[k]["outcomes"][seed] != page[k].get("outcome")
              or value_gap(_as_value(claims[k]["values"][seed]), _as_value(page[k].get("measured"))) is None]
    if not differ:
        return (f"This page's run is seed {seed} of this table: claims measured by both: {len(common)}, each "
                f"with the same value (relative difference at most {FLOAT_RTOL:g}, the re-certification's "
                "tolerance) and outcome.")
    shown = "; ".join(f"{k}: this page {_shown(page[k].get('measured'))} ({page[k].get('outcome')}), "
                      f"table {_shown(claims[k]['values'][seed])} ({claims[k]['outcomes'][seed]})"
                      for k in differ[:5])
    return (f"This page's run and seed {seed} of this table differ in {len(differ)} of {len(common)} claims "
            f"({shown}{'; ...' if len(differ) > 5 else ''}): the same code and seed gave other numbers here "
            "(another machine, a computation that depends on the thread count, or a cached intermediate "
            "result); the table's seeds decide.")


@dataclass
class SeedsView:
    """A chapter's committed five-seed run (:func:`seeds_view`): one row per claim."""

    prefix: str
    found: bool
    stale: bool | None = None
    state: str = ""
    rows: Any = None  # DataFrame: claim, [rule,] reproduced, seed 0 ... seed 4, verdict
    error: str = ""
    same_seed: str = ""  # :func:`same_seed_line`
    dots: list[DotRow] = field(default_factory=list)  # per claim: each seed's value (:func:`dot_figure`)
    lanes: list[tuple[str, str]] = field(default_factory=list)  # the seeds, top to bottom in a row

    def html(self) -> str:
        """A one-line note with the command that makes the table, or its STALE line, a dot plot of the
        seeds' values and, folded below it, the table."""
        if not self.found:
            return (f"<p>No committed five-seed run of {escape(self.prefix)} ({escape(self.error)}). Make it "
                    f"with <code>{escape(seeds_command(self.prefix))}</code>.</p>")
        n = 0 if self.rows is None else len(self.rows)
        table = self.rows.to_html(index=False, escape=True, border=0) if n else ""
        return (f"<p><b>Five seeds</b> (a claim is reproduced when it holds at {SEEDS_REPRODUCED_AT} or more "
                f"of them, fragile at fewer, deviates at none)</p>"
                + _state_html(self.stale, self.state)
                + (f"<p>{escape(self.same_seed)}</p>" if self.same_seed else "")
                + plot_html(self.dots, self.lanes, "held at",
                            "'held at': reproduced at k of n seeds ('all same': every seed measured the "
                            "same value).")
                + folded(f"The numbers: {n} claims x {len(self.lanes)} seeds, each value and outcome "
                         "(click to open)", table))

    def text(self) -> str:
        """A plain-text summary (terminals, logs)."""
        if not self.found:
            return f"no committed five-seed run of {self.prefix}: {self.error}"
        verdicts = self.rows["verdict"].value_counts().to_dict() if self.rows is not None and len(self.rows) \
            else {}
        return (f"five-seed run {seeds_name(self.prefix)}: {0 if self.rows is None else len(self.rows)} "
                f"claims, verdicts {verdicts}"
                + (" [STALE]" if self.stale else " [currency not checked]" if self.stale is None else ""))

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return self.text()


def seeds_view(prefix: str, record: dict[str, Any] | None = None, root: Path | None = None,
               currency: dict[str, Any] | None = None) -> SeedsView:
    """Chapter ``prefix``'s committed seed sweep ``<prefix>-seeds``: per claim its text and rule (from
    ``record``'s comparisons, else the table's ``rule`` column), k of n seeds reproduced, each seed's
    measured value and outcome, and the verdict (:func:`seed_verdict`). Never raises for a missing or
    unreadable table (``found=False``)."""
    import pandas as pd

    name = seeds_name(prefix)
    try:
        pub = published(name, root, currency)
    except (FileNotFoundError, KeyError, ValueError) as err:
        return SeedsView(prefix, False, error=str(err))
    table = pub["table"]
    cpu = {c.get("key"): c for c in (record or {}).get("comparisons", [])}
    rules = (table[table["kind"] == "compare"].groupby("metric")["rule"].first().to_dict()
             if "rule" in table else {})
    rows, dots = [], []
    claims = seed_claims(table)
    seeds = sorted({s for c in claims.values() for s in c["outcomes"]})
    judged = table[table["kind"] == "compare"]
    judged = judged[judged["status"] == "ok"] if "status" in judged else judged
    bounds = {(r["metric"], int(r["seed"])): (r.get("low"), r.get("high")) for r in judged.to_dict("records")}
    for key, c in claims.items():
        marks = [Dot(seeds.index(s), c["values"][s], o, *bounds.get((key, s), (None, None)))
                 for s, o in c["outcomes"].items()]
        dots.append(DotRow(str(key), marks, note="all same" if c["verdict"] == SEED_NOT_USED else
                           f"{c['k']}/{c['n']}",
                           note_outcome=c["verdict"]))
        row = {"key": key, "claim": cpu.get(key, {}).get("claim") or key}
        if cpu or rules:
            row["rule"] = cpu.get(key, {}).get("rule") or rules.get(key, "")
        row["reproduced"] = "seed not used" if c["verdict"] == SEED_NOT_USED else f"{c['k']}/{c['n']}"
        row |= {f"seed {s}": f"{_shown(c['values'][s])} ({o}"
                + (f", {MACHINE_FRAGILE})" if s in c["machine"] else ")") for s, o in c["outcomes"].items()}
        flip = f"; {MACHINE_FRAGILE}" if c["machine_fragile"] else ""
        rows.append(row | {"verdict": c["verdict"] + flip})
    return SeedsView(prefix, True, stale=pub["stale"], state=state_line(name, pub), rows=pd.DataFrame(rows),
                     same_seed=same_seed_line(claims, record, pub["provenance"]), dots=dots,
                     lanes=[(f"seed {s}", "o") for s in seeds])


def seed_tables(root: Path | None = None, currency: dict[str, Any] | None = None) -> dict[str, dict]:
    """Chapter prefix -> ``{"claims": seed_claims(table), "provenance", "stale", "twin"}`` for every
    committed ``<prefix>-seeds`` sweep (for the scorecard, like :func:`paper_tables`); ``twin``: its point
    of a seed is the book's cpu run of that seed (no :func:`fixed_parameters`)."""
    return {prefix: {"claims": seed_claims(pub["table"]), "provenance": pub["provenance"],
                     "stale": pub["stale"], "twin": not fixed_parameters(pub["provenance"])}
            for prefix, pub in _tables(SEEDS_SUFFIX, root, currency).items()}


# ----------------------------------------------------------------------------------------------
# the evidence at a glance: one dot plot per view (a row per claim, a dot per run), tables folded
# ----------------------------------------------------------------------------------------------

#: a dot's colour by the outcome of its claim at that run; any other outcome (not run, failed, not
#: reproduced, not judged by that run): :data:`OTHER_COLOUR`
OUTCOME_COLOURS = {"reproduced": "#1b7837", "deviates": "#b2182b", CANNOT_FAIL: "#b35806"}
OTHER_COLOUR = "#7f7f7f"
#: a row whose numbers are all positive and span more than this ratio is drawn on a logarithmic axis
LOG_RATIO = 100.0
#: the plot's width (inches; shown 100 px an inch, so 800 px: a text column), resolution and font size
PLOT_WIDTH_IN, PLOT_DPI, PLOT_FONT_PT = 8.0, 100, 10
#: x positions (inches) of the plot's columns: claim labels end, the no-number column, the row's smallest
#: number (right-aligned), the strip of values, the row's largest number, the note column's centre
_X_LABEL, _X_NA, _X_MIN, _STRIP, _X_MAX, _X_NOTE = 2.45, 2.62, 3.4, (3.48, 6.45), 6.53, 7.45
_PAD = 0.04  # share of the strip left free at each end (where +-inf is drawn)
PAPER_LANES = (("cpu run (this page)", "o"), ("paper profile", "D"))


@dataclass
class Dot:
    """One run's measurement of a claim in a dot plot (:func:`dot_figure`): its ``lane`` (which run: the cpu
    run, the paper run, a seed), the ``value`` as recorded (a number, ``"inf"``, JSON text of a list,
    ``None``: not measured), the claim's ``outcome`` at that run (``None``: that run did not judge it)
    and the rule's bounds at that run (``low``/``high``; ``None``: open or not recorded)."""

    lane: int
    value: Any
    outcome: str | None
    low: Any = None
    high: Any = None


@dataclass
class DotRow:
    """One claim of a dot plot: its short ``label``, one :class:`Dot` per run, and a short ``note`` shown at
    the right end (e.g. ``4/5``) in the colour of ``note_outcome``."""

    label: str
    dots: list[Dot]
    note: str = ""
    note_outcome: str | None = None


def _number(value: Any) -> float | None:
    """A recorded value as a float (``inf`` included); ``None`` when it has no number (missing, NaN, a
    bool, a list, text)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def _bound(value: Any) -> float | None:
    """A rule bound as recorded (``low``/``high`` of a record or a table row): a finite float or ``None``."""
    x = _number(value)
    return x if x is not None and math.isfinite(x) else None


def _colour(outcome: str | None) -> str:
    return OUTCOME_COLOURS.get(str(outcome), OTHER_COLOUR)


def row_scale(row: DotRow) -> tuple[Callable[[float], float], float, float, bool] | None:
    """A row's own axis: ``(position, smallest, largest, log)`` over its finite values and bounds, where
    ``position(x)`` is the share of the strip (``_PAD`` at the smallest number, ``1 - _PAD`` at the largest,
    ``0.5`` when all are equal); ``None`` when the row has no finite number."""
    nums = [x for d in row.dots for x in (_number(d.value), _bound(d.low), _bound(d.high))
            if x is not None and math.isfinite(x)]
    if not nums:
        return None
    lo, hi = min(nums), max(nums)
    log = lo > 0 and hi / lo > LOG_RATIO
    def scaled(x: float) -> float:
        return math.log10(x) if log else x
    a, b = scaled(lo), scaled(hi)

    def position(x: float) -> float:
        return 0.5 if b == a else _PAD + (1 - 2 * _PAD) * (scaled(x) - a) / (b - a)

    return position, lo, hi, log


def _label(text: str, width_in: float, fits: Callable[[str], float]) -> str:
    """``text`` cut in the middle (with an ellipsis) to ``width_in`` inches as ``fits`` measures it: its
    start and its end stay (keys differ at both: ``sim_H_proxy_STS_TF`` / ``..._offdiag``)."""
    if fits(text) <= width_in:
        return text
    head, tail = text[: len(text) // 2], text[len(text) // 2:]
    while len(head) + len(tail) > 4 and fits(f"{head}\u2026{tail}") > width_in:
        if len(head) >= len(tail):
            head = head[:-1]
        else:
            tail = tail[1:]
    return f"{head}\u2026{tail}"


def dot_figure(rows: list[DotRow], lanes: tuple[tuple[str, str], ...] | list[tuple[str, str]],
               note_title: str = "") -> Any:
    """A compact dot plot (a matplotlib ``Figure``, Agg): one row per claim, in each row one mark per run
    (``lanes``: name and marker of each run, drawn top to bottom), coloured by the claim's outcome at
    that run. Each row has its own axis (:func:`row_scale`): its smallest and largest number stand at the
    strip's ends; the rule's bounds are black bars, shaded on the side where the rule holds. A value with
    no number is an ``x`` in the ``n/a`` column, ``inf`` a triangle at the strip's end: no value is left
    out. Every mark is a ``Line2D`` whose gid is ``dot``, ``inf`` or ``no number``; a bound's bar has gid
    ``bound``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    n = max(len(lanes), 1)
    spacing = 0.09 if n <= 2 else 0.05
    row_h = max(0.24, spacing * (n - 1) + 0.1)
    width = PLOT_WIDTH_IN
    fig = Figure(figsize=(width, 1.0), dpi=PLOT_DPI)  # its height is set below the legend's lines
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))  # data coordinates are inches from the top left corner
    ax.set_xlim(0, width)
    ax.set_ylim(1.0, 0)
    ax.set_axis_off()
    renderer = fig.canvas.get_renderer()
    font = {"fontsize": PLOT_FONT_PT}

    def text_width(text: str) -> float:
        t = ax.text(0, 0, text, **font)
        w = t.get_window_extent(renderer).width / fig.dpi
        t.remove()
        return w

    # legend: the outcome colours, then the runs' markers
    x, y = 0.08, 0.2
    items = [("o", _colour(o), o) for o in OUTCOME_COLOURS]
    items.append(("o", OTHER_COLOUR, "other"))
    lane_items = [(m, "#333333", name) for name, m in lanes] if n <= 2 else []
    for marker, colour, name in items + lane_items:
        w = text_width(name) + 0.22
        if x + w > width - 0.05:
            x, y = 0.08, y + 0.2
        ax.plot([x + 0.06], [y], marker=marker, color=colour, markersize=6, linestyle="none")
        ax.text(x + 0.15, y, name, va="center", **font)
        x += w + 0.15
    if n > 2:
        order = f"runs top to bottom in each row: {lanes[0][0]} ... {lanes[-1][0]}"
        if x + text_width(order) > width - 0.05:
            x, y = 0.08, y + 0.2
        ax.text(x, y, order, va="center", **font)
    head = y + 0.27
    bold = {**font, "fontweight": "bold", "va": "center"}
    ax.text(0.08, head, "claim", ha="left", **bold)
    ax.text(_X_NA, head, "n/a", ha="center", **bold)
    ax.text(_X_MIN, head, "min", ha="right", **bold)
    ax.text(sum(_STRIP) / 2, head, "value (each row its own axis)", ha="center", **bold)
    ax.text(_X_MAX, head, "max", ha="left", **bold)
    if note_title:
        ax.text(_X_NOTE, head, note_title, ha="center", **bold)
    top = head + 0.15
    height = top + row_h * max(len(rows), 1) + 0.1
    fig.set_size_inches(width, height)
    ax.set_ylim(height, 0)
    ax.plot([0.05, width - 0.05], [top, top], color="#999999", linewidth=0.8)

    strip_w = _STRIP[1] - _STRIP[0]
    for i, row in enumerate(rows):
        y0, yc = top + i * row_h, top + (i + 0.5) * row_h
        if i % 2:
            ax.add_patch(Rectangle((0.05, y0), width - 0.1, row_h, facecolor="#f3f3f3", edgecolor="none",
                                   zorder=0))
        ax.text(_X_LABEL, yc, _label(row.label, _X_LABEL - 0.08, text_width), ha="right", va="center", **font)
        if row.note:
            ax.text(_X_NOTE, yc, row.note, ha="center", va="center", color=_colour(row.note_outcome), **font)

        def lane_y(lane: int, yc: float = yc) -> float:
            return yc + (lane - (n - 1) / 2) * spacing

        scale = row_scale(row)
        if scale is not None:
            position, lo, hi, log = scale

            def xof(v: float, position: Callable[[float], float] = position) -> float:
                return _STRIP[0] + strip_w * position(v)

            ax.plot([_STRIP[0], _STRIP[1]], [yc, yc], color="#cccccc", linewidth=0.8, zorder=1)
            ax.text(_X_MIN, yc, f"{lo:.3g}", ha="right", va="center", **font)
            ax.text(_X_MAX, yc, f"{hi:.3g}" + (" log" if log else ""), ha="left", va="center", **font)
            # one bar across the row when every measured value was judged against the same bounds, else
            # a short bar in each value's lane (a chance level that differs by run, a table without bounds)
            bounds = {(_bound(d.low), _bound(d.high)) for d in row.dots if _number(d.value) is not None}
            spans = ([(b, yc - row_h * 0.42, yc + row_h * 0.42) for b in bounds - {(None, None)}]
                     if len(bounds) == 1 else
                     [((_bound(d.low), _bound(d.high)), lane_y(d.lane) - spacing / 2,
                       lane_y(d.lane) + spacing / 2) for d in row.dots
                      if (_bound(d.low), _bound(d.high)) != (None, None)])
            for (low, high), ya, yb in spans:
                left = xof(low) if low is not None else _STRIP[0]
                right = xof(high) if high is not None else _STRIP[1]
                ax.add_patch(Rectangle((left, ya), max(right - left, 0.0), yb - ya, facecolor="#1b7837",
                                       alpha=0.12, edgecolor="none", zorder=1))
                for b in (low, high):
                    if b is not None:
                        ax.plot([xof(b), xof(b)], [ya, yb], color="black", linewidth=1.4, zorder=2,
                                gid="bound")
        for d in row.dots:
            v, colour, yd = _number(d.value), _colour(d.outcome), lane_y(d.lane)
            marker = lanes[d.lane][1] if d.lane < len(lanes) else "o"
            if v is None:
                ax.plot([_X_NA], [yd], marker="x", color=colour, markersize=5, markeredgewidth=1.5,
                        linestyle="none", gid="no number", zorder=3)
            elif math.isinf(v):
                ax.plot([_STRIP[1] if v > 0 else _STRIP[0]], [yd], marker=">" if v > 0 else "<",
                        color=colour, markersize=6, linestyle="none", gid="inf", zorder=3)
            else:
                assert scale is not None  # a finite value gives the row a scale
                ax.plot([_STRIP[0] + strip_w * scale[0](v)], [yd], marker=marker, color=colour,
                        markersize=5.5 if n <= 2 else 5, markeredgecolor="white", markeredgewidth=0.5,
                        linestyle="none", gid="dot", zorder=3)
    return fig


def figure_png(fig: Any) -> bytes:
    """The PNG bytes of a :func:`dot_figure` (RGB: it has no transparency, a sixth smaller than RGBA)."""
    import io

    import numpy as np
    from PIL import Image

    fig.canvas.draw()
    buf = io.BytesIO()
    Image.fromarray(np.asarray(fig.canvas.buffer_rgba())[..., :3]).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def plot_caption(lanes: tuple[tuple[str, str], ...] | list[tuple[str, str]], note: str = "") -> str:
    """The line above a dot plot: what the axis, a mark and (``note``) the right column are."""
    order = f" Runs: {lanes[0][0]} to {lanes[-1][0]}, top to bottom in each row." if len(lanes) > 2 else ""
    return ("Axis: each row its own, from min to max, the row's smallest and largest number (values and "
            "the rule's bounds; 'log': logarithmic). Black bars: the rule's bounds, the shaded side passes; "
            "grey: other outcomes (not run, failed, not judged); \u00d7: no number (not measured, or a list "
            f"of values); \u25b6 / \u25c0: inf / -inf.{order}" + (f" {note}" if note else ""))


def plot_html(rows: list[DotRow], lanes: tuple[tuple[str, str], ...] | list[tuple[str, str]],
              note_title: str = "", note: str = "") -> str:
    """A :func:`dot_figure` as an HTML ``<figure>``: the PNG inline (base64), 800 px wide, and its caption
    (``figcaption``; the book's extension keeps it legible, :mod:`ntputils.reports.sphinx_ext`); ``""`` for
    no rows. A plot that cannot be drawn says why in one line (the tables below it still show)."""
    import base64

    if not rows:
        return ""
    try:
        fig = dot_figure(rows, lanes, note_title)
        png = base64.b64encode(figure_png(fig)).decode("ascii")
    except Exception as err:  # noqa: BLE001 - a page's tables must show even when matplotlib fails
        return f"<p>(no dot plot: {escape(type(err).__name__)}: {escape(str(err))})</p>"
    marks = sum(len(r.dots) for r in rows)
    px = round(fig.get_figwidth() * 100)
    alt = f"dot plot: {len(rows)} claims, {marks} measurements"
    return (f"<figure class='ntp-dot-plot'><img src='data:image/png;base64,{png}' alt='{escape(alt)}' "
            f"width='{px}' style='max-width:100%;height:auto'><figcaption><span class='caption-text'>"
            f"{escape(plot_caption(lanes, note))}</span></figcaption></figure>")


def folded(summary: str, body: str) -> str:
    """``body`` folded under a one-line ``summary`` (``<details>``): one click away."""
    return f"<details><summary>{escape(summary)}</summary>\n{body}\n</details>" if body else ""
