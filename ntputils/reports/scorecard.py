"""The reproduction scorecard ``book/scorecard.md``, rendered before every HTML build from the build's
state snapshot (:mod:`ntputils.reports.status`; :func:`scorecard_from_snapshot`) and the committed tables:
one row per item of ``book/scorecard_items.yaml`` (the papers' figures and numbered results), its status
from the ``compare`` claims and non-sanity ``check`` facts naming it (``item="A:Fig 6"``,
:func:`item_status`). A chapter shown from its last good run keeps that run's verdict (:data:`LAST_GOOD`);
one last run with ``-p`` overrides makes its items :data:`NOT_BOOKS_RUN`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml

from ntputils.committed import (
    CANNOT_FAIL,
    MACHINE_FRAGILE,
    SEED_NOT_USED,
    SEED_SAME_COUNT,
    SEEDS_REPRODUCED_AT,
    SEEDS_WITHOUT_SAY,
    control_text,
)
from ntputils.reports.rule_history import control_changes, registered, rule_calls, rule_changes
from ntputils.reports.status import md_cell, overrides_text

CATALOGUE_FILE = Path(__file__).resolve().parents[2] / "book" / "scorecard_items.yaml"


def read_catalogue(path: Path = CATALOGUE_FILE) -> list[tuple[str, str, tuple[str, ...], str, str]]:
    """(item id, what the paper shows, chapters that reproduce it, why not if none does, what of the
    paper's scale did not run) per entry."""
    return [(e["id"], e["title"], tuple(e.get("chapters", ())), e.get("why", ""), e.get("partial", ""))
            for e in yaml.safe_load(path.read_text())]


DATASETS_FILE = CATALOGUE_FILE.parent / "datasets.yaml"
DATA_KINDS = ("paper", "rebuild", "sample")


def read_datasets(path: Path = DATASETS_FILE) -> dict[str, dict[str, Any]]:
    """The data catalogue ``book/datasets.yaml``: data set id -> ``{"title", "kind", "what", "shown"}``
    (``kind``: one of :data:`DATA_KINDS`; ``shown``: claim keys or record names whose values show how the
    data differ from the paper's)."""
    out = {}
    for e in yaml.safe_load(path.read_text()):
        if e.get("kind") not in DATA_KINDS:
            raise ValueError(f"{path.name}: data set {e.get('id')!r} has kind {e.get('kind')!r}, "
                             f"not one of {', '.join(DATA_KINDS)}")
        out[e["id"]] = {"title": e["title"], "kind": e["kind"], "what": e.get("what", ""),
                        "shown": list(e.get("shown") or [])}
    return out


def item_data(path: Path = CATALOGUE_FILE) -> dict[str, tuple[str, ...]]:
    """Item id -> the data sets (ids of :func:`read_datasets`) its evidence uses (the catalogue's
    ``data``)."""
    return {e["id"]: tuple(e.get("data") or ()) for e in yaml.safe_load(path.read_text())}


def _data_value(key: str, states: dict[str, dict[str, Any]]) -> str:
    """``key = measured (paper X)`` from the records: a claim key's measured value and the paper's, or a
    recorded value; ``key: not measured`` when no executed chapter has it."""
    for st in states.values():
        for row in st.get("comparisons", []):
            if row.get("key") == key and row.get("measured") is not None:
                paper = f" (paper {md_cell(row['paper'])})" if row.get("paper") is not None else ""
                return f"{key} = {md_cell(row['measured'])}{paper}"
        entry = (st.get("results") or {}).get(key)
        if entry is not None:
            value = entry.get("value") if isinstance(entry, dict) else entry
            return f"{key} = {md_cell(value)}"
    return f"{key}: not measured in this build"


def data_caps(data: tuple[str, ...], datasets: dict[str, dict[str, Any]],
              states: dict[str, dict[str, Any]]) -> list[str]:
    """Why an item is at best "partial (data)": each of its data sets that is a rebuild or a sample, what
    differs, and the measured values that show it (:func:`_data_value`)."""
    out = []
    for d in data:
        if d not in datasets:
            raise ValueError(f"the scorecard catalogue names the unknown data set {d!r} (book/datasets.yaml)")
        ds = datasets[d]
        if ds["kind"] == "paper":
            continue
        shown = "; ".join(_data_value(k, states) for k in ds["shown"])
        out.append(f"partial (data): {ds['title']} is a {ds['kind']}: {ds['what']}"
                   + (f"; measured: {shown}" if shown else ""))
    return out


NOT_BOOKS_RUN = "not the book's run"
STATUSES = ("reproduced", "partial", "fragile", "deviates", "not run", "unscored", "failed", "not executed",
            "not reproduced", NOT_BOOKS_RUN)
#: how far each judged status is from "the paper's result holds": the item's status is the worst of its
#: evidence (cpu run, five seeds, paper profile), then ``partial`` where the paper's scale did not run
SEVERITY = {"reproduced": 0, "partial": 1, "fragile": 2, "deviates": 3}
#: how a chapter's run stands: ``ok``; ``last good`` (its latest run failed, the last good run is shown);
#: ``failed`` (failed, no good run kept); ``not executed`` (no executed notebook)
RUN_STATES = ("ok", "last good", "failed", "not executed")
LAST_GOOD = "last good run; latest run failed"


def evidence(states: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """item id -> the comparisons and non-sanity checks that name it (each with its ``chapter``; a claim
    also with the ``seed`` of a cpu-profile run, the profile of the five-seed tables: its point there)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for chapter, st in states.items():
        seed = st.get("seed") if st.get("profile", "cpu") == "cpu" else None
        for row in st.get("comparisons", []):
            for item in row.get("items", []):
                out[item].append({**row, "chapter": chapter, "kind": "compare", "seed": seed})
        for row in st.get("checks", []):
            if row.get("sanity"):
                continue
            for item in row.get("items", []):
                out[item].append({**row, "chapter": chapter, "kind": "check",
                                  "outcome": "reproduced" if row.get("passed") else "deviates"})
    return out


def item_status(rows: list[dict[str, Any]], chapters: tuple[str, ...],
                runs: dict[str, str] | None = None) -> str:
    """The item's status from its evidence ``rows``: ``deviates`` if a claim deviates, else ``reproduced``,
    ``not reproduced`` (what the claims need is not available) or ``not run``. Without evidence: ``not
    reproduced`` (no chapter), else from ``runs`` (chapter prefix -> :data:`RUN_STATES`; ``None``: every
    chapter ran) ``failed``, ``not executed`` or ``unscored`` (no claim or check names it yet)."""
    if not rows:
        if not chapters:
            return "not reproduced"
        states = {runs.get(c, "not executed") for c in chapters} if runs is not None else {"ok"}
        if "failed" in states:
            return "failed"
        if "not executed" in states:
            return "not executed"
        return "unscored"
    outcomes = {r["outcome"] for r in rows}
    if "deviates" in outcomes:
        return "deviates"
    if "reproduced" in outcomes:
        return "reproduced"
    if "not reproduced" in outcomes:
        return "not reproduced"
    return "not run"


def paper_evidence(paper: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """item id -> the claims of the committed paper-profile runs (:func:`ntputils.committed.
    paper_tables`) that name it (the table's ``items`` column), each ``{"chapter", "key", "outcome",
    "measured", "stale", "made", "control", "control_value", "machine_fragile"}`` (``made``: commit and
    date of the table; ``control``: the claim's negative control row, ``passes``/``fails``, or ``none`` in a
    table made without one, ``control_value`` its value (``None`` without one); ``machine_fragile``: a rule
    bound lies inside the value's measured spread across CPU code paths)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for prefix, pub in paper.items():
        table, prov = pub["table"], pub.get("provenance", {})
        made = f"{str(prov.get('git', '?'))[:7]}, {str(prov.get('finished', '?'))[:10]}"
        ok = table[table["status"] == "ok"]
        control_rows = ok[ok["kind"] == "control"]
        controls = dict(zip(control_rows["metric"], control_rows["outcome"], strict=True))
        control_values = dict(zip(control_rows["metric"], control_rows["value"], strict=True))
        for row in ok[ok["kind"] == "compare"].to_dict("records"):
            items = row.get("items")
            for item in items.split(";") if isinstance(items, str) and items else []:
                out[item].append({"chapter": prefix, "key": row["metric"], "outcome": row["outcome"],
                                  "measured": row.get("value"), "stale": pub["stale"], "made": made,
                                  "control": controls.get(row["metric"], "none"),
                                  "control_value": control_values.get(row["metric"]),
                                  "machine_fragile": bool(row.get("machine_fragile", False))})
    return out


def other_evidence(others: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Item id -> the claims of the other committed runs (:func:`ntputils.committed.other_tables`: a07's
    ladder, parameter sweeps), like :func:`paper_evidence`, each also naming its ``table``; a claim judged
    at several points of a table has one row per point."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for name, pub in others.items():
        for item, rows in paper_evidence({pub["prefix"]: pub}).items():
            out[item] += [{**r, "table": name} for r in rows]
    return out


def seed_evidence(seeds: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The five-seed verdicts (:func:`ntputils.committed.seed_tables`) of the claims among an item's cpu
    evidence ``rows``: each ``{"chapter", "key", "k", "n", "outcomes", "values", "verdict", "stale",
    "twin"}`` (``twin``: the table's point of a seed is the book's cpu run of that seed)."""
    out = []
    for r in rows:
        prefix = r["chapter"].split("_")[0]
        claims = (seeds.get(prefix) or {}).get("claims", {})
        claim = claims.get(r.get("key")) if r["kind"] == "compare" else None
        if claim:
            out.append({"chapter": prefix, "key": r["key"], **claim, "stale": seeds[prefix]["stale"],
                        "twin": seeds[prefix].get("twin", True)})
    return out


#: outcomes of a claim that judged it (the others: not run, not reproduced, failed)
JUDGED = ("reproduced", "deviates", CANNOT_FAIL)
CLAIM_SEVERITY = {"reproduced": 0, CANNOT_FAIL: 0, "fragile": 2, MACHINE_FRAGILE: 2, "deviates": 3}


def decided_claims(rows: list[dict[str, Any]], paper_rows: list[dict[str, Any]],
                   seed_rows: list[dict[str, Any]], other_rows: list[dict[str, Any]] = ()
                   ) -> list[dict[str, Any]]:
    """One verdict per claim and check of an item, each ``{"chapter", "key", "kind", "outcome", "by",
    "control"}``. **The paper profile decides where it ran**: a claim its committed table judged takes
    that outcome (the cpu run is a preview); else the cpu run's outcome, worsened by its five-seed verdict
    (fragile or deviating seeds; five seeds that measured one value, :data:`SEEDS_WITHOUT_SAY`, have no
    say). A STALE table has no say. ``other_rows``: the claims of the chapter's other committed runs
    (a07's ladder toward the paper's model, parameter sweeps: :func:`other_evidence`); where the paper
    profile did not decide,
    a claim's verdict is the worst of the cpu run, its seeds and these runs. A claim whose outcome may flip
    on another CPU (a rule bound inside its value's measured spread, in the deciding table) is
    :data:`MACHINE_FRAGILE`, and so is one whose cpu run and the current five-seed table's point of the same
    seed disagree (the same code, seed and parameters, run twice: where the table was made on another
    machine, the outcome follows the CPU), unless the seeds' verdict is worse. ``control``: ``fails`` (the
    claim's negative control fails its rule: evidence), ``passes`` (cannot fail), ``none`` (no control
    registered) or ``check`` (a mathematical fact). A claim the paper profile did not decide also has
    ``worse_by``: what made its verdict other than the cpu run's (``"the five seeds"``, a table's name, the
    seeds table's point of the same seed), for the row's note, and ``twin_differs``."""
    paper_of = {(r["chapter"], r["key"]): r for r in paper_rows if not r["stale"] and r["outcome"] in JUDGED}
    seeds_of = {(r["chapter"], r["key"]): r for r in seed_rows if not r["stale"]}
    others_of: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in other_rows:
        if not r["stale"] and r["outcome"] in JUDGED:
            others_of[(r["chapter"], r["key"])].append(r)
    out = []
    for r in rows:
        prefix = r["chapter"].split("_")[0]
        if r["kind"] == "check":
            out.append({"chapter": prefix, "key": r.get("claim"), "kind": "check", "outcome": r["outcome"],
                        "by": "cpu run", "control": "check"})
            continue
        control = ("none" if not r.get("control") else "passes" if r.get("control_passes") else "fails")
        paper = paper_of.pop((prefix, r.get("key")), None)
        if paper is not None:
            out.append({"chapter": prefix, "key": r.get("key"), "kind": "compare",
                        "outcome": MACHINE_FRAGILE if paper.get("machine_fragile") else paper["outcome"],
                        "by": "paper profile",
                        "control": paper.get("control", "none")})
            continue
        outcome, by, worse_by, twin_differs = r["outcome"], "cpu run", [], False
        seeds = seeds_of.get((prefix, r.get("key")))
        if seeds and outcome in JUDGED and seeds["verdict"] in CLAIM_SEVERITY:
            before = outcome
            outcome = max(outcome, seeds["verdict"], key=CLAIM_SEVERITY.__getitem__)
            by = "cpu run and five seeds"
            if seeds.get("machine_fragile"):
                outcome = MACHINE_FRAGILE
            # the table's run of this seed, where its points are the book's run (no other parameters set)
            twin = (seeds.get("outcomes") or {}).get(r.get("seed")) if seeds.get("twin", True) else None
            if twin in JUDGED and twin != r["outcome"]:
                outcome = max(MACHINE_FRAGILE, seeds["verdict"], key=CLAIM_SEVERITY.__getitem__)
                worse_by += [f"{prefix}-seeds' seed {r.get('seed')} ({twin} there, {r['outcome']} here)"]
                twin_differs = True
            worse_by += ["the five seeds"] if outcome != before and not worse_by else []
        others = others_of.pop((prefix, r.get("key")), [])
        if others and outcome in JUDGED:
            verdicts = [(o["table"], MACHINE_FRAGILE if o.get("machine_fragile") else o["outcome"])
                        for o in others]
            worst = max([outcome] + [v for _, v in verdicts], key=CLAIM_SEVERITY.__getitem__)
            if worst != outcome:  # the runs that gave the worse verdict decide
                worse_by = [table for table, v in verdicts if v == worst]
            outcome = worst
            by += " and " + ", ".join(dict.fromkeys(o["table"] for o in others))
        out.append({"chapter": prefix, "key": r.get("key"), "kind": "compare", "outcome": outcome, "by": by,
                    "control": control, "worse_by": list(dict.fromkeys(worse_by)),
                    "twin_differs": twin_differs})
    for (prefix, key), p in paper_of.items():  # claims only the paper profile judged
        out.append({"chapter": prefix, "key": key, "kind": "compare",
                    "outcome": MACHINE_FRAGILE if p.get("machine_fragile") else p["outcome"],
                    "by": "paper profile", "control": p.get("control") or "none"})
    return out


def _claims(n: int) -> str:
    return f"{n} claim{'s' if n != 1 else ''}"


def caps(item: str, decided: list[dict[str, Any]], partial: str | list[str] = "") -> list[str]:
    """Why an item whose evidence holds is at best ``partial``: claims that cannot fail (their control
    passes the same rule), claims registered without a negative control, a figure backed by checks alone
    (a mathematical fact is not the figure's empirical content), and ``partial`` (what of the paper's
    scale or data did not run)."""
    claims = [d for d in decided if d["kind"] == "compare" and d["outcome"] in JUDGED]
    out = []
    cannot = sum(d["outcome"] == CANNOT_FAIL or d["control"] == "passes" for d in claims)
    if cannot:
        out.append(f"{_claims(cannot)} cannot fail (the negative control passes the same rule)")
    bare = sum(d["control"] == "none" for d in claims)
    if bare:
        out.append(f"{_claims(bare)} without a negative control")
    if "Fig" in item and not claims and any(d["kind"] == "check" for d in decided):
        out.append("checks only: a mathematical fact does not reproduce a figure's empirical content")
    out += [partial] if isinstance(partial, str) and partial else list(partial or [])
    return out


def final_status(cpu: str, decided: list[dict[str, Any]], item: str = "", partial: str | list[str] = ""
                 ) -> tuple[str, list[str]]:
    """The item's status and why it is capped: ``cpu`` (:func:`item_status` of the book's run) stands when
    the chapter failed, never ran or ran with overrides; else the worst of the claims' verdicts
    (:func:`decided_claims`); an item whose verdicts all hold is ``reproduced`` only when no
    :func:`caps` applies, else ``partial``."""
    if cpu in ("failed", "not executed", NOT_BOOKS_RUN) or not decided:
        return cpu, []
    outcomes = {d["outcome"] for d in decided}
    if "deviates" in outcomes:
        return "deviates", []
    if outcomes & {"fragile", MACHINE_FRAGILE}:
        return "fragile", []
    if outcomes & {"reproduced", CANNOT_FAIL}:
        why = caps(item, decided, partial)
        return ("partial" if why else "reproduced"), why
    return ("not reproduced" if "not reproduced" in outcomes else "not run"), []


def _seeds_cell(seed_rows: list[dict[str, Any]], rows: list[dict[str, Any]] = (),
                seeds: dict[str, Any] | None = None) -> str:
    """Per chapter: how many of the item's claims hold at enough of the five seeds, and which are fragile;
    else why the column is empty (only checks: no seed enters a mathematical fact; or no seeds table)."""
    if not seed_rows and rows:
        if not any(r["kind"] == "compare" for r in rows):
            return "- (checks only)"
        missing = sorted({r["chapter"].split("_")[0] for r in rows if r["kind"] == "compare"}
                         - set(seeds or {}))
        return f"- (no five-seed table of {', '.join(missing)})" if missing else "-"
    parts = []
    for chapter in dict.fromkeys(r["chapter"] for r in seed_rows):
        every = [r for r in seed_rows if r["chapter"] == chapter]
        mine = [r for r in every if r["verdict"] not in SEEDS_WITHOUT_SAY]
        no_say = {v: sum(r["verdict"] == v for r in every) for v in SEEDS_WITHOUT_SAY}
        held = sum(r["verdict"] == "reproduced" for r in mine)
        weak = [f"{r['k']}/{r['n']}" + (" cannot fail" if r["verdict"] == CANNOT_FAIL else "")
                for r in mine if r["verdict"] != "reproduced"]
        said = (f"{held}/{len(mine)} claims hold at >= {SEEDS_REPRODUCED_AT} of 5 seeds"
                + (f" (others: {', '.join(weak)})" if weak else "")) if mine else ""
        for verdict, n in no_say.items():
            if n:
                said += ("; " if said else "") + f"{_claims(n)} {verdict}"
        parts.append(f"{chapter}{' (STALE)' if every[0]['stale'] else ''}: {said}")
    return md_cell("; ".join(parts)) if parts else "-"


def _tally(rows: list[dict[str, Any]]) -> str:
    tally = {o: sum(r["outcome"] == o for r in rows) for o in ("reproduced", "deviates", CANNOT_FAIL,
                                                              "not run", "not reproduced")}
    return ", ".join(f"{n} {o}" for o, n in tally.items() if n)


def _cpu_cell(rows: list[dict[str, Any]]) -> str:
    judged = [r for r in rows if r["kind"] == "compare"]
    checks = [r for r in rows if r["kind"] == "check"]
    parts = [_tally(judged)] if judged else []
    if checks:
        parts.append(f"{sum(r['outcome'] == 'reproduced' for r in checks)}/{len(checks)} checks")
    return "; ".join(parts) or "-"


def _by_table(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["table"]].append(r)
    return out


def _paper_cell(rows: list[dict[str, Any]], other_rows: list[dict[str, Any]] = ()) -> str:
    """The scorecard's paper-profile cell: outcome tallies per chapter with the table's commit and date,
    marked when stale; then the tallies of the chapters' other committed runs (``other_rows``)."""
    others = [f"{name} ({mine[0]['made']}{', STALE' if mine[0]['stale'] else ''}): {_tally(mine)}"
              for name, mine in _by_table(list(other_rows)).items()]
    if not rows:
        return md_cell("; ".join(others)) if others else "-"
    parts = []
    for chapter in dict.fromkeys(r["chapter"] for r in rows):
        mine = [r for r in rows if r["chapter"] == chapter]
        made = f"{mine[0]['made']}{', STALE' if mine[0]['stale'] else ''}"
        machine = sum(bool(r.get("machine_fragile")) for r in mine)
        parts.append(f"{chapter} ({made}): {_tally(mine)}"
                     + (f" ({machine} {MACHINE_FRAGILE})" if machine else ""))
    return md_cell("; ".join(parts + others))


def _run_note(chapters: tuple[str, ...], runs: dict[str, str], rows: list[dict[str, Any]]) -> str:
    """What the status cell adds about the chapters' runs: the last good run's verdict is marked, and a
    chapter that failed or never ran beside one that gave evidence is named."""
    notes = []
    with_evidence = {r["chapter"].split("_")[0] for r in rows}
    for c in chapters:
        state = runs.get(c, "not executed") if runs else "ok"
        if state == "last good" and c in with_evidence:
            notes.append(f"{c}: {LAST_GOOD}")
        elif state in ("failed", "not executed", "last good") and rows:
            notes.append(f"{c}: {'latest run failed' if state != 'not executed' else 'not executed'}")
    return "; ".join(notes)


def _chance(r: dict[str, Any]) -> str:
    levels = r.get("baselines") or {}
    if len(levels) > 1:
        return " (chance: " + ", ".join(f"{md_cell(k)} {md_cell(v)}" for k, v in levels.items()) + ")"
    return f" (chance {md_cell(r['chance'])})" if r.get("chance") is not None else ""


def _paper_control(paper: dict[str, Any]) -> str:
    """The paper profile's negative control of a claim as its evidence line shows it: ``" (control 0.8,
    fails)"``, or nothing for a table made without one."""
    if paper.get("control") in (None, "none"):
        return ""
    value = paper.get("control_value")
    shown = "" if value is None or value != value else f" {md_cell(value)}"
    return f" (control{shown}, {paper['control']})"


def _evidence_block(title: str, status: str, note: str, rows: list[dict[str, Any]],
                    paper_rows: list[dict[str, Any]], why: str, seed_rows: list[dict[str, Any]] = (),
                    capped: list[str] = (), when: dict[str, tuple[str, str]] | None = None,
                    other_rows: list[dict[str, Any]] = ()) -> list[str]:
    """The item's evidence, folded below the table: each claim and check of the cpu run (measured,
    chance levels, negative control, rule, outcome, and ``when`` its key was registered: commit and date),
    its five seeds, the paper profile's value, why the item is at best partial (``capped``, :func:`caps`)
    and why it differs."""
    when = when or {}
    others_of: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for o in other_rows:
        others_of[(o["chapter"], o["key"])].append(o)
    lines = [f":::{{dropdown}} {md_cell(title)} · {status}", ""]
    paper_of = {(r["chapter"], r["key"]): r for r in paper_rows}
    seeds_of = {(r["chapter"], r["key"]): r for r in seed_rows}
    for r in rows:
        text = md_cell(r.get("claim", ""))
        if r["kind"] == "check":
            lines.append(f"- check ({r['chapter'].split('_')[0]}): {text}: "
                         f"{'passes' if r['outcome'] == 'reproduced' else 'FAILS'}")
            continue
        paper = paper_of.pop((r["chapter"].split("_")[0], r.get("key")), None)
        at_paper = (f"; paper profile: {md_cell(paper['measured'])}{_paper_control(paper)}, "
                    f"**{paper['outcome']}**"
                    + (f" ({MACHINE_FRAGILE})" if paper.get("machine_fragile") else "") if paper else "")
        seeds = seeds_of.get((r["chapter"].split("_")[0], r.get("key")))
        if seeds and seeds["verdict"] in SEEDS_WITHOUT_SAY:
            at_seeds = (f"; seeds 0-4: {seeds['verdict']}"
                        + (f" ({md_cell(next(iter(seeds['values'].values())))} at each)"
                           if seeds["verdict"] == SEED_SAME_COUNT else "")
                        + (" (STALE)" if seeds["stale"] else ""))
        elif seeds:
            at_seeds = (f"; seeds 0-4: {seeds['k']}/{seeds['n']} reproduced ("
                        + ", ".join(md_cell(v) for v in seeds["values"].values())
                        + f"), **{seeds['verdict']}**" + (" (STALE)" if seeds["stale"] else "")
                        + (f" ({MACHINE_FRAGILE}: seeds {', '.join(map(str, seeds['machine']))})"
                           if seeds.get("machine_fragile") else ""))
        else:
            at_seeds = ""
        rule = md_cell(r.get("rule", "-"))
        commit, date = when.get(r.get("key"), ("", ""))
        since = (f"; registered {date[:10]} ({commit})" if commit else
                 "; registered with its chapter (its key is built in code)" if r.get("key") in when else "")
        at_others = "".join(f"; {name}: {_tally(rows_)}" + (" (STALE)" if rows_[0]["stale"] else "")
                            for name, rows_ in _by_table(others_of.get((r["chapter"].split("_")[0],
                                                                        r.get("key")), [])).items())
        lines.append(f"- {text}: {md_cell(r.get('measured'))}{_chance(r)}; control: "
                     f"{md_cell(control_text(r))}; rule {rule}{since}: **{r['outcome']}**"
                     + (f" ({md_cell(r['note'])})" if r.get("note") else "")
                     + at_seeds + at_paper + at_others)
    for r in paper_of.values():  # claims only the paper profile judged
        lines.append(f"- paper profile ({r['chapter']}, {r['made']}{', STALE' if r['stale'] else ''}): "
                     f"`{r['key']}` = {md_cell(r['measured'])}{_paper_control(r)}: **{r['outcome']}**")
    if note:
        lines.append(f"- {md_cell(note)}")
    for why_partial in capped:
        lines.append(f"- at best partial: {md_cell(why_partial)}")
    if why:
        lines.append(f"- why it differs: {md_cell(why)}")
    return lines + ["", ":::", ""]


PAPERS = {"A": "Paper A", "B": "Paper B"}
#: the headline's categories of an item status (the others: "not judged in this build")
HEADLINE = (("reproduced", ("reproduced",)), ("partial", ("partial",)), ("fragile", ("fragile",)),
            ("deviating", ("deviates",)), ("not available", ("not reproduced",)))


def headline(statuses: dict[str, str], claims: dict[str, Counter[str]]) -> str:
    """The book's headline, per paper: how many of its catalogued items are reproduced, partial, fragile,
    deviating, not available (no chapter can judge them: no caption or statement, no weights) or not judged
    in this build, and how many of its judged claims cannot fail or have no negative control.
    ``statuses``: item id -> status (:func:`render_scorecard`); ``claims``: paper letter -> claim tally."""
    parts = []
    for letter, name in PAPERS.items():
        mine = [st for item, st in statuses.items() if item.startswith(letter + ":")]
        if not mine:
            continue
        said = [f"{sum(st in group for st in mine)} {label}" for label, group in HEADLINE]
        other = len(mine) - sum(st in group for _label, group in HEADLINE for st in mine)
        if other:
            said.append(f"{other} not judged in this build")
        tally = claims.get(letter, Counter())
        judged = sum(tally.values())
        parts.append(f"**{name}**, {len(mine)} numbered figures and results: {', '.join(said)}; of its "
                     f"{judged} judged claims, {tally[CANNOT_FAIL]} cannot fail (their negative control "
                     f"passes the same rule) and {tally['no control']} have no negative control yet.")
    return " ".join(parts)


def render_scorecard(states: dict[str, dict[str, Any]], links: dict[str, str],
                     paper: dict[str, dict[str, Any]] | None = None,
                     runs: dict[str, str] | None = None, overrides: dict[str, str] | None = None,
                     seeds: dict[str, dict[str, Any]] | None = None, root: Path | None = None,
                     others: dict[str, dict[str, Any]] | None = None) -> str:
    """The markdown of the scorecard (:func:`score`)."""
    return score(states, links, paper, runs, overrides, seeds, root, others)[0]


def _changes_table(title: str, intro: str, changes: list, columns: tuple[str, str], cells) -> list[str]:
    """A scorecard section listing commits that changed a chapter after it had run (:mod:`rule_history`):
    ``title``, ``intro``, then one row per change with its chapter, commit, date, whether it came after a
    table, and the two ``columns`` that ``cells(change)`` fills; "None." when there is none."""
    lines = [f"## {title}", "", intro, ""]
    if not changes:
        return lines + ["None.", ""]
    lines += [f"| chapter | commit | date | after a table | {columns[0]} | {columns[1]} |",
              "|---|---|---|---|---|---|"]
    for c in changes:
        first, second = cells(c)
        lines.append(f"| {c.chapter.split('_')[0]} | {c.commit} ({md_cell(c.subject[:60])}) | {c.date[:10]} "
                     f"| {'yes' if c.after_table else 'no'} | {first} | {second} |")
    return lines + [""]


def rule_history_lines(root: Path, chapters: list[str]) -> list[str]:
    """The scorecard's section on rules changed after their chapter had run (:mod:`rule_history`)."""
    return _changes_table(
        "Rules changed after their chapter had run",
        "Read from git: each commit that removed or rewrote a rule (or a check's threshold) of a "
        "chapter that had been committed, and so executed, before it; such a rule may have been set "
        "with its value in view. *after a table*: the change came after the chapter's first committed "
        "table, a measurement the repository itself holds. Each claim's evidence above says when its "
        "key was registered.",
        [c for name in chapters for c in rule_changes(root, name)], ("rules before", "rules after"),
        lambda c: ("; ".join(f"`{md_cell(x)}`" for x in rule_calls(c.old)) or "-",
                   "; ".join(f"`{md_cell(x)}`" for x in rule_calls(c.new)) or "- (removed)"))


def control_history_lines(root: Path, chapters: list[str]) -> list[str]:
    """The scorecard's section on negative controls changed after their chapter had run
    (:func:`~ntputils.reports.rule_history.control_changes`)."""
    return _changes_table(
        "Negative controls changed after their chapter had run",
        "Read from git like the rules above: each commit that removed or rewrote a code line naming a "
        "control (an identifier starting with `control`) of a chapter committed before it. A claim's "
        "verdict is decided by its rule and its control together, so a control changed with its value "
        "in view can tune a verdict as a rule can. The list over-reports (a renamed variable or a "
        "refactor counts); the commit's subject says what it changed.",
        [c for name in chapters for c in control_changes(root, name)], ("lines removed", "lines added"),
        lambda c: (len(c.old), len(c.new)))


def score(states: dict[str, dict[str, Any]], links: dict[str, str],
          paper: dict[str, dict[str, Any]] | None = None,
          runs: dict[str, str] | None = None, overrides: dict[str, str] | None = None,
          seeds: dict[str, dict[str, Any]] | None = None, root: Path | None = None,
          others: dict[str, dict[str, Any]] | None = None) -> tuple[str, str]:
    """The markdown of the scorecard; ``states``: chapter stem -> notebook record (of a chapter whose
    latest run failed: its last good run); ``links``: chapter prefix (``a05``) -> page name; ``paper``:
    the committed paper-profile runs (chapter prefix -> ``{"table", "provenance", "stale"}``), which
    decide with the cpu run (:func:`combined_status`); ``runs``: chapter prefix -> its run state
    (:data:`RUN_STATES`; ``None``: all ok); ``overrides``: chapter prefix -> the ``-p`` overrides of its
    run (its items: :data:`NOT_BOOKS_RUN`); ``seeds``: the committed five-seed runs
    (:func:`ntputils.committed.seed_tables`), which decide too (:func:`final_status`); ``root``: the
    project's git checkout, for when each claim was registered and which rules changed after their chapter
    ran (:mod:`ntputils.book.rule_history`; ``None``: left out); ``others``: the chapters' other committed
    runs (:func:`ntputils.committed.other_tables`), which decide too (:func:`decided_claims`). Returns the
    page and its :func:`headline`."""
    ev = evidence(states)
    pev, oev = paper_evidence(paper or {}), other_evidence(others or {})
    catalogue = read_catalogue()
    uses, datasets = item_data(), read_datasets()
    unknown = sorted(set(ev) - {item for item, *_ in catalogue})
    overrides = overrides or {}
    counts: dict[str, int] = defaultdict(int)
    claim_counts: Counter[str] = Counter()
    per_paper: dict[str, Counter[str]] = defaultdict(Counter)
    statuses: dict[str, str] = {}
    rows, blocks = [], []
    for item, title, chapters, why, partial in catalogue:
        rs, prs = ev.get(item, []), pev.get(item, [])
        srs = seed_evidence(seeds or {}, rs)
        cpu = item_status(rs, chapters, runs)
        note = _run_note(chapters, runs or {}, rs)
        changed = [c for c in dict.fromkeys(r["chapter"].split("_")[0] for r in rs) if overrides.get(c)]
        if changed:  # never counted as the book's run
            note = "; ".join([f"{c} ran with overrides {overrides[c]}" for c in changed]
                             + [f"that run's verdict: {cpu}"] + ([note] if note else []))
            cpu = NOT_BOOKS_RUN
        ors = oev.get(item, [])
        verdicts = decided_claims(rs, prs, srs, ors)
        status, capped = final_status(cpu, verdicts, item,
                                      ([partial] if partial else []) + data_caps(uses.get(item, ()), datasets,
                                                                                 states))
        by_paper = sum(d["by"] == "paper profile" for d in verdicts)
        if by_paper and cpu not in ("failed", "not executed", NOT_BOOKS_RUN):
            note = "; ".join([f"the paper profile decides {_claims(by_paper)} (cpu run: {cpu})"]
                             + ([note] if note else []))
        elif status not in (cpu, "partial") and cpu in ("reproduced", "deviates", "not run"):
            deciders = dict.fromkeys(w for d in verdicts if d["outcome"] == status
                                     or (status == "fragile" and d["outcome"] == MACHINE_FRAGILE)
                                     for w in d.get("worse_by", []))
            note = "; ".join([f"decided by {', '.join(deciders) or 'the five seeds'} (cpu run: {cpu})"]
                             + ([note] if note else []))
        twins = sum(d["outcome"] == MACHINE_FRAGILE and d.get("twin_differs", False) for d in verdicts)
        if machine := sum(d["outcome"] == MACHINE_FRAGILE for d in verdicts) - twins:
            note = "; ".join([f"{_claims(machine)} {MACHINE_FRAGILE}: a bound of the rule lies inside the "
                              "value's spread across CPU code paths"] + ([note] if note else []))
        if twins:
            note = "; ".join([f"{_claims(twins)} {MACHINE_FRAGILE}: the same code and seed gave another "
                              "outcome when its seeds table was made"] + ([note] if note else []))
        counts[status] += 1
        statuses[item] = status
        tally = Counter(d["outcome"] if d["outcome"] == CANNOT_FAIL else
                        "no control" if d["control"] == "none" else "controlled"
                        for d in verdicts if d["kind"] == "compare" and d["outcome"] in JUDGED)
        claim_counts.update(tally)
        per_paper[item.split(":")[0]].update(tally)
        where = ", ".join(f"[{c}]({links[c]}.ipynb)" if c in links else c for c in chapters) or "-"
        shown_note = "; ".join(n for n in (note, "" if rs or prs else why) if n)
        rows.append(f"| {md_cell(title)} | **{status}**{f' ({md_cell(shown_note)})' if shown_note else ''} "
                    f"| {_cpu_cell(rs)} | {_seeds_cell(srs, rs, seeds)} | {_paper_cell(prs, ors)} "
                    f"| {where} |")
        if rs or prs or ors:
            when = {r.get("key"): registered(root, r["key"]) for r in rs if root and r.get("key")}
            blocks += _evidence_block(title, status, note, rs, prs, why, srs, capped, when, ors)
    made = (", ".join(f"{p} of {str(v['provenance'].get('finished', '?'))[:10]}"
                      + (" STALE" if v["stale"] else "") for p, v in sorted((paper or {}).items()))
            or "none committed")
    top = headline(statuses, per_paper)
    lines = [
        "# Reproduction scorecard",
        "",
        top,
        "",
        "Generated by `python -m ntputils.book build` from the records of the executed chapters; do not "
        "edit. One row per figure and numbered result of both papers. A *claim* is an empirical statement "
        "of a paper judged by a rule registered before it was computed (`compare`); a *check* is a "
        "mathematical fact (`check`). An item's status is the worst of the book's cpu-profile run, the "
        f"chapter's committed five-seed run (seeds 0-4 of the cpu profile; a claim holding at fewer than "
        f"{SEEDS_REPRODUCED_AT} seeds is *fragile*, at none it deviates) and its committed paper-profile "
        f"run ({made}); a STALE table, made by code that has changed since, does not decide. An item "
        "whose evidence holds is *partial* when its paper-scale model or data did not run, when one of its "
        "claims *cannot fail* (its negative control, the same measurement with the paper's mechanism "
        "absent, passes the same rule), when a claim has no negative control, or when a figure rests on "
        "checks alone (its evidence says which). Where a claim's committed paper-profile run judged it, "
        "that verdict decides and the cpu run is a preview. A claim whose five seeds measured the very same "
        f"non-integer value is *{SEED_NOT_USED}*, and one whose five seeds measured the same whole number "
        f"(a step count, a share of one run) reads *{SEED_SAME_COUNT}*: in neither case do its seeds "
        "count. Statuses: "
        + ", ".join(f"{s} {counts[s]}" for s in STATUSES) + ". Judged claims: "
        + f"{claim_counts['controlled']} with a negative control that fails their rule (evidence), "
        + f"{claim_counts[CANNOT_FAIL]} cannot fail, {claim_counts['no control']} without a control.",
        "",
        "A chapter last run with `-p` overrides is not the book's run: its items say so, with the "
        "overrides and that run's verdict, until `python -m ntputils.book build --only CHAPTER` (no `-p`) "
        "restores the profile's defaults. The evidence of each item (every claim with its measured "
        "value, chance level and rule, and the paper profile's value) is folded below the table.",
        "",
        "| item | status | cpu run | seeds | paper profile, other committed runs | chapter |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "## Evidence per item",
        "",
        *blocks,
    ]
    if unknown:
        lines += [f"Records name unknown items: {', '.join(md_cell(u) for u in unknown)}.", ""]
    if root is not None:
        lines += rule_history_lines(root, sorted(states)) + control_history_lines(root, sorted(states))
    return "\n".join(lines), top


def coverage_problems(states: dict[str, dict[str, Any]], runs: dict[str, str]) -> list[str]:
    """What the build reports about the catalogue: item names in records that it does not list (a typo in
    ``item=``), and items whose chapters all ran but name them in no claim or check (unscored)."""
    ev = evidence(states)
    catalogue = read_catalogue()
    known = {i for i, *_ in catalogue}
    out = [f"scorecard: a record names the unknown item {item!r} "
           f"({', '.join(sorted({r['chapter'] for r in rs}))})"
           for item, rs in sorted(ev.items()) if item not in known]
    out += [f"scorecard: {item!r} is unscored: {', '.join(chapters)} ran but no claim or check names it"
            for item, _title, chapters, _why, _partial in catalogue
            if chapters and not ev.get(item) and item_status([], chapters, runs) == "unscored"]
    return out


def scorecard_from_snapshot(snapshot: dict[str, Any], root: Path) -> tuple[str, str, list[str]]:
    """``(page, headline, problems)`` of the build's state ``snapshot`` (:mod:`ntputils.reports.status`;
    a chapter's ``current`` says whether the build renders its page, so whether the scorecard links it) and
    the tables committed under ``root`` (read with the snapshot's ``currency``, name -> ``{"stale": bool,
    ...}``); ``problems``: :func:`coverage_problems`, for the build to print."""
    from ntputils.committed import other_tables, paper_tables, seed_tables

    states, links, runs, overrides = {}, {}, {}, {}
    for c in snapshot["chapters"]:
        st, name = c["state"], c["name"]
        prefix = name.split("_")[0]
        if st.get("status") == "ok":
            states[name], runs[prefix] = st, "ok"
        elif st.get("status") == "failed" and st.get("shown"):  # the last good run is kept and shown
            states[name], runs[prefix] = st, "last good"
        elif st.get("status") == "failed":
            runs[prefix] = "failed"
        else:
            runs[prefix] = "not executed"
        if name in states and c["current"]:
            links[prefix] = name
        if name in states and overrides_text(st):
            overrides[prefix] = overrides_text(st)
    currency = snapshot["currency"]
    paper, seeds = paper_tables(root, currency), seed_tables(root, currency)
    others = other_tables(root, currency)
    page, top = score(states, links, paper, runs, overrides, seeds, root, others)
    return page, top, coverage_problems(states, runs)


README_MARKS = ("<!-- headline: made by `python -m ntputils.book status --readme` from the scorecard; "
                "do not edit -->", "<!-- /headline -->")
