"""The reproduction scorecard ``book/scorecard.md``: one row per figure and numbered result of both papers.

Generated before every HTML build from the records of the executed notebooks (never typed): each
:func:`ntputils.chapter.compare` (a pre-registered empirical claim) and each non-sanity
:func:`ntputils.chapter.check` (a mathematical fact) names the scorecard items it is evidence for
(``item="A:Fig 6"``). An item's status:

* ``deviates``: at least one of its pre-registered claims deviates (the reason is shown);
* ``reproduced``: every claim judged is reproduced and every check passed;
* ``not run``: its claims need a run this profile does not do (e.g. the paper profile on a GPU);
* ``not reproduced`` also when a chapter covers it but its claims are ``not reproduced`` (what they need,
  e.g. GPT-2's weights, is not available to the build; the reason is shown);
* ``unscored``: a chapter covers it and ran, but no claim or check of that chapter names it yet;
* ``failed``: a chapter that covers it failed and no good run of it is kept (nothing to judge);
* ``not executed``: a chapter that covers it has no executed notebook (never built);
* ``not reproduced``: no chapter reproduces it (the catalogue says why).

When a chapter's latest run failed but its last good run is kept (the page shows it under a banner),
the item keeps that run's verdict, marked "last good run; latest run failed" (:data:`LAST_GOOD`).

A chapter whose shown run had ``-p`` overrides (``steps=500, d=32``) is not the book's run: an item it
gives evidence for is ``not the book's run`` (:data:`NOT_BOOKS_RUN`, counted apart), with the overrides
and that run's verdict in its note, until the chapter is rebuilt with the profile's defaults.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ntputils.book.project import Chapter, Project

#: (item id, what the paper shows, chapters that reproduce it, why not, if no chapter does)
CATALOGUE: list[tuple[str, str, tuple[str, ...], str]] = [
    ("A:Fig 1", "Paper A Fig. 1: corr(H), corr(W^T) and logits of NTP-UFM and a transformer vs theory "
     "(Synthetic)", ("a05", "a06"), ""),
    ("A:Fig 2", "Paper A Fig. 2: L_lambda = L^in + a diverging component converging in direction to L^mm",
     ("a03",), ""),
    ("A:Fig 3", "Paper A Fig. 3: a 12-layer transformer on 100 TinyStories stories vs the proxy S~",
     ("a07",), ""),
    ("A:Fig 4", "Paper A Fig. 4: NTP-UFM L_k, corr(W_k^T), corr(H_k) align with the prediction", ("a05",),
     ""),
    ("A:Fig 5", "Paper A Fig. 5: NTP-UFM training curves (CE - H, norms, projections)", ("a05",), ""),
    ("A:Fig 6", "Paper A Fig. 6: Synthetic / Simplified TinyStories x UFM / TF convergence metrics",
     ("a05", "a06"), ""),
    ("A:Lemma 1", "Paper A Lemma 1: NTP-UFM with ridge = CE + lambda ||L||_* (d >= V)", ("a02",), ""),
    ("A:Thm 1", "Paper A Thm. 1: the regularization path, P_F(L_lambda) -> L^in, direction -> L^mm",
     ("a03",), ""),
    ("A:Thm 2", "Paper A Thm. 2: the rate of the path (CE - H ~ lambda)", ("a03",), ""),
    ("A:Cor 1", "Paper A Cor. 1 (statement not available)", (),
     "only its name is in the available paper text; the statement cannot be reconstructed (see a06)"),
    ("A:Prop 1", "Paper A Prop. 1: subspace collapse, L^mm = S~ in symmetric cases", ("a04",), ""),
    ("A:proxy", "Paper A: the centered support S~ as a proxy of L^mm (distance 0.163 on STS)", ("a04", "a07"),
     ""),
    ("B:Fig 1", "Paper B Fig. 1: SVD of S~ on the organism data", ("b01",), ""),
    ("B:Fig 2", "Paper B Fig. 2: trained embeddings cluster by concept; orthant hierarchy", ("b01",), ""),
    ("B:Fig 3", "Paper B Fig. 3: transformer confusion progression (broad classes first)", ("b05",), ""),
    ("B:Fig 4", "Paper B Fig. 4: orthant clusters on Simplified TinyStories / WikiText", ("b04",), ""),
    ("B:Fig 5", "Paper B Fig. 5: k-means on the top word analyzers", ("b04",), ""),
    ("B:Fig 6", "Paper B Fig. 6: context-word cluster pairs with identical sign patterns", ("b04",), ""),
    ("B:Fig 7", "Paper B Fig. 7: orthant clusters of GPT-2's decoder", ("b07",), ""),
    ("B:Fig 8", "Paper B Fig. 8: illustration of setup and terminology", (),
     "a schematic without data: nothing to compute"),
    ("B:Fig 9", "Paper B Fig. 9: CNN confusion progression on imbalanced MNIST", ("b06",), ""),
    ("B:Fig 10", "Paper B Fig. 10: concept representations of words and contexts", ("b01",), ""),
    ("B:Fig 11", "Paper B Fig. 11: hierarchical orthant clusters on Simplified TinyStories", ("b04",), ""),
    ("B:Fig 12", "Paper B Fig. 12: square-loss UFM dynamics on a synthetic example", ("b02",), ""),
    ("B:Fig 13", "Paper B Fig. 13: STEP imbalance, square and reweighted dynamics", ("b03",), ""),
    ("B:Fig 14", "Paper B Fig. 14: single concept dimensions are not interpretable", ("b04",), ""),
    ("B:Fig 15", "Paper B Fig. 15: GPT-2 orthant clusters, p = 4", ("b07",), ""),
    ("B:Fig 16", "Paper B Fig. 16: GPT-2 orthant clusters, p = 5", ("b07",), ""),
    ("B:Fig 17", "Paper B Fig. 17: GPT-2 orthant clusters, p = 6", ("b07",), ""),
    ("B:Fig 18", "Paper B Fig. 18: singular values of the logits, square vs CE", ("b02",), ""),
    ("B:Fig 19", "Paper B Fig. 19: d < V, square loss learns the top singular values", ("b02",), ""),
    ("B:Fig 20", "Paper B Fig. 20: 32-means clusters, Simplified TinyStories", ("b04",), ""),
    ("B:Fig 21", "Paper B Fig. 21: 64-means clusters, WikiText", ("b04",), ""),
    ("B:Fig 22", "Paper B Fig. 22: orthant clusters p = 4, Simplified TinyStories", ("b04",), ""),
    ("B:Fig 23", "Paper B Fig. 23: orthant clusters p = 5, Simplified TinyStories", ("b04",), ""),
    ("B:Fig 24", "Paper B Fig. 24: orthant clusters p = 5, WikiText", ("b04",), ""),
    ("B:Fig 25", "Paper B Fig. 25: orthant clusters p = 6, WikiText", ("b04",), ""),
    ("B:Prop 1", "Paper B Prop. 1: square-loss dynamics, concepts learned in order of sigma", ("b02", "b03"),
     ""),
    ("B:STEP", "Paper B App. D.1: STEP closed forms of the SVD of S~", ("b03",), ""),
    ("B:orthant", "Paper B Def. 1: orthant clustering with typicality", ("b01", "b04"), ""),
    ("B:kmeans", "Paper B Sec. 4: k-means on the word analyzers", ("b04",), ""),
    ("B:GPT-2", "Paper B Sec. 5.1: semantics in a pretrained model", ("b07",), ""),
]
ITEM_IDS = {item for item, *_ in CATALOGUE}
NOT_BOOKS_RUN = "not the book's run"
STATUSES = ("reproduced", "deviates", "not run", "unscored", "failed", "not executed", "not reproduced",
            NOT_BOOKS_RUN)
#: how a chapter's run stands: ``ok``; ``last good`` (its latest run failed, the last good run is shown);
#: ``failed`` (failed, no good run kept); ``not executed`` (no executed notebook)
RUN_STATES = ("ok", "last good", "failed", "not executed")
LAST_GOOD = "last good run; latest run failed"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        value = f"{value:.4g}"
    text = " ".join(str(value if value is not None else "-").split())
    for ch in ("|", "$", "*", "_", "`", "<", ">", "[", "]"):
        text = text.replace(ch, "\\" + ch)
    return text or "-"


def evidence(states: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """item id -> the comparisons and non-sanity checks that name it (each with its ``chapter``)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for chapter, st in states.items():
        for row in st.get("comparisons", []):
            for item in row.get("items", []):
                out[item].append({**row, "chapter": chapter, "kind": "compare"})
        for row in st.get("checks", []):
            if row.get("sanity"):
                continue
            for item in row.get("items", []):
                out[item].append({**row, "chapter": chapter, "kind": "check",
                                  "outcome": "reproduced" if row.get("passed") else "deviates"})
    return out


def item_status(rows: list[dict[str, Any]], chapters: tuple[str, ...],
                runs: dict[str, str] | None = None) -> str:
    """The item's status from its evidence ``rows``; ``runs`` (chapter prefix -> one of
    :data:`RUN_STATES`; ``None``: every chapter ran) tells an item without evidence whose chapter failed
    or was never executed from one truly unscored."""
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
    """item id -> the claims of the committed paper-profile runs (:func:`ntputils.book.paper_profile.
    paper_tables`) that name it (the table's ``items`` column), each ``{"chapter", "key", "outcome",
    "stale"}``."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for prefix, pub in paper.items():
        table = pub["table"]
        rows = table[(table["kind"] == "compare") & (table["status"] == "ok")]
        for row in rows.to_dict("records"):
            items = row.get("items")
            for item in items.split(";") if isinstance(items, str) and items else []:
                out[item].append({"chapter": prefix, "key": row["metric"], "outcome": row["outcome"],
                                  "stale": pub["stale"]})
    return out


def _paper_cell(rows: list[dict[str, Any]]) -> str:
    """The scorecard's paper-profile cell: outcome tallies per chapter, marked when stale."""
    if not rows:
        return "-"
    parts = []
    for chapter in dict.fromkeys(r["chapter"] for r in rows):
        mine = [r for r in rows if r["chapter"] == chapter]
        tally = {o: sum(r["outcome"] == o for r in mine)
                 for o in ("reproduced", "deviates", "not run", "not reproduced")}
        stale = " (STALE)" if mine[0]["stale"] else ""
        parts.append(f"{chapter}{stale}: " + ", ".join(f"{n} {o}" for o, n in tally.items() if n))
    return _cell("; ".join(parts))


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


def render_scorecard(states: dict[str, dict[str, Any]], links: dict[str, str],
                     paper: dict[str, dict[str, Any]] | None = None,
                     runs: dict[str, str] | None = None, overrides: dict[str, str] | None = None) -> str:
    """The markdown of the scorecard; ``states``: chapter stem -> notebook record (of a chapter whose
    latest run failed: its last good run); ``links``: chapter prefix (``a05``) -> page name; ``paper``:
    the committed paper-profile runs (chapter prefix -> ``{"table", "provenance", "stale"}``), shown in
    their own column; ``runs``: chapter prefix -> its run state (:data:`RUN_STATES`; ``None``: all ok);
    ``overrides``: chapter prefix -> the ``-p`` overrides of its run (its items: :data:`NOT_BOOKS_RUN`)."""
    ev = evidence(states)
    pev = paper_evidence(paper or {})
    unknown = sorted(set(ev) - ITEM_IDS)
    counts: dict[str, int] = defaultdict(int)
    rows = []
    for item, title, chapters, why in CATALOGUE:
        rs = ev.get(item, [])
        status = item_status(rs, chapters, runs)
        note = _run_note(chapters, runs or {}, rs)
        overrides = overrides or {}
        changed = [c for c in dict.fromkeys(r["chapter"].split("_")[0] for r in rs) if overrides.get(c)]
        if changed:  # never counted as the book's run
            note = "; ".join([f"{c} ran with overrides {overrides[c]}" for c in changed]
                             + [f"that run's verdict: {status}"] + ([note] if note else []))
            status = NOT_BOOKS_RUN
        counts[status] += 1
        shown_status = f"**{status}**" + (f" ({_cell(note)})" if note else "")
        where = ", ".join(f"[{c}]({links[c]}.ipynb)" if c in links else c for c in chapters) or "-"
        judged = [r for r in rs if r["kind"] == "compare"]
        n_checks = len(rs) - len(judged)
        parts = []
        if judged:
            tally = {o: sum(r["outcome"] == o for r in judged)
                     for o in ("reproduced", "deviates", "not run", "not reproduced")}
            parts.append(f"{len(judged)} claims: " + ", ".join(f"{n} {o}" for o, n in tally.items() if n))
        if n_checks:
            n_pass = sum(r["outcome"] == "reproduced" for r in rs if r["kind"] == "check")
            parts.append(f"{n_pass}/{n_checks} checks pass")
        # the deviating claims first (measured vs rule), else the first claim judged
        shown = ([r for r in judged if r["outcome"] == "deviates"][:3]
                 or [r for r in judged if r["outcome"] == "not reproduced"][:1] or judged[:1])
        parts += [f"{_cell(r['claim'])}: {_cell(r['measured'])}"
                  + (f" (chance {_cell(r['chance'])})" if r.get("chance") is not None else "")
                  + f", rule {_cell(r['rule'])}" for r in shown]
        measured = "; ".join(parts) or "-"
        failed = [r for r in shown if r["outcome"] in ("deviates", "not reproduced") and r.get("note")]
        reasons = "; ".join(dict.fromkeys(_cell(r["note"]) for r in failed))  # each reason once
        paper_cell = _paper_cell(pev.get(item, []))
        rows.append(f"| {_cell(title)} | {where} | {shown_status} | {measured} | {paper_cell} "
                    f"| {reasons or _cell(why)} |")
    lines = [
        "# Reproduction scorecard",
        "",
        "Generated by `python -m ntputils.book build` from the records of the executed chapters; do not "
        "edit. One row per figure and numbered result of both papers. A *claim* is an empirical statement "
        "of a paper judged by a rule registered before it was computed (`compare`); a *check* is a "
        "mathematical fact (`check`). Statuses (of the book's cpu-profile build): "
        + ", ".join(f"{s} {counts[s]}" for s in STATUSES) + ". A chapter last run with `-p` overrides is "
        "not the book's run: its items say so, with the overrides and that run's verdict, until "
        "`python -m ntputils.book build --only CHAPTER` (no `-p`) restores the profile's defaults.",
        "",
        "The column *paper profile* tallies the same claims in the committed paper-profile runs (the papers' "
        "sizes and steps, run through the sweep runner and shown at the end of each chapter; "
        + (", ".join(f"{p} of {str(v['provenance'].get('finished', '?'))[:10]}"
                     + (" STALE" if v["stale"] else "") for p, v in sorted((paper or {}).items()))
           or "none committed")
        + "). A STALE run was made by code that has changed since.",
        "",
        "| item | chapter | status | measured vs rule | paper profile | why it differs |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    if unknown:
        lines += [f"Records name unknown items: {', '.join(_cell(u) for u in unknown)}.", ""]
    return "\n".join(lines)


def write_scorecard(project: Project, chapters: list[Chapter]) -> None:
    """Write ``book/scorecard.md`` from the executed notebooks of ``chapters`` (if the toc lists it)."""
    from ntputils.book.execute import overrides_text
    from ntputils.book.status import chapter_state

    if not project.in_toc(project.scorecard_page):
        return

    states, links, runs, overrides = {}, {}, {}, {}
    for c in chapters:
        st = chapter_state(project, c)
        prefix = c.name.split("_")[0]
        if st.get("status") == "ok":
            states[c.name], runs[prefix] = st, "ok"
        elif st.get("status") == "failed" and st.get("shown"):  # the last good run is kept and shown
            states[c.name], runs[prefix] = st, "last good"
        elif st.get("status") == "failed":
            runs[prefix] = "failed"
        else:
            runs[prefix] = "not executed"
        if c.name in states:
            links[prefix] = c.name
            if overrides_text(st):
                overrides[prefix] = overrides_text(st)
    from ntputils.book.paper_profile import paper_tables

    project.scorecard_page.write_text(render_scorecard(states, links, paper_tables(project), runs, overrides))
