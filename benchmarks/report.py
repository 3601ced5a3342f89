"""Render ``book/performance.md`` from ``benchmarks/results/*.json`` (``python -m benchmarks.report``).

The page is static: the book build never re-runs a benchmark. Every number on it comes from the
JSON files (written by ``python -m benchmarks.lmm`` / ``python -m benchmarks.concepts`` /
``python -m benchmarks.sweep``) and the prose
around them from ``benchmarks/performance_template.md``; each performance target (the solvers
against their baselines; the L^mm solver at paper B's scale, with the budget of
``python -m benchmarks.lmm_budget``) gets a verdict computed from those numbers.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks import concepts as bench_concepts
from benchmarks import lmm as bench_lmm
from benchmarks import lmm_budget as bench_budget
from benchmarks import sweep as bench_sweep
from benchmarks import train_step as bench_train_step
from benchmarks.common import RESULTS_DIR
from ntputils.book.paper_cost import estimated_settings, point_costs, wall_estimate

BOOK_PAGE = Path(__file__).resolve().parents[1] / "book" / "performance.md"
TEMPLATE = Path(__file__).resolve().parent / "performance_template.md"
LMM_ORDER = ["tiny", "small", "big", "real"]


def load(prefix: str) -> list[dict]:
    files = sorted(
        RESULTS_DIR.glob(f"{prefix}_*.json"),
        key=lambda p: (
            LMM_ORDER.index(p.stem.split("_", 1)[1]) if p.stem.split("_", 1)[1] in LMM_ORDER else 99,
            p.name,
        ),
    )
    return [json.loads(p.read_text()) | {"file": p.name} for p in files]


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("**met**" if ok else "**not met**")


def lmm_verdicts(rows: list[dict]) -> list[str]:
    out = []
    fast = [r for r in rows if r.get("method", "").startswith("fast") and r.get("status") == "ok"]
    agree = [r for r in fast if r.get("agreement")]
    if agree:
        worst_n = max(r["agreement"]["rel_diff_normalized"] for r in agree)
        worst_c = max(r["agreement"]["rel_nuclear_diff"] for r in agree)
        worst_v = max(r["max_violation"] for r in fast)
        out.append(
            "- Agreement with cvxpy/SCS up to 200 x 1000 (normalized matrices <= 1e-3, "
            f"nuclear norm <= 1e-4, violation <= 1e-6): worst {worst_n:.1e} / {worst_c:.1e} / "
            f"{worst_v:.1e} -> "
            f"{verdict(worst_n <= 1e-3 and worst_c <= 1e-4 and worst_v <= 1e-6)}."
        )
    for r in fast:
        if r["V"] == 200 and r["m"] == 1000 and r.get("speedup"):
            out.append(
                f"- Speed-up at 200 x 1000 ({r['kind']} supports) >= 20x: {r['speedup']:.0f}x "
                f"(solver seconds {r['seconds']:.1f} vs cvxpy {r['speedup'] * r['seconds']:.0f} s, "
                f"compute-only ratio) -> {verdict(r['speedup'] >= 20)}."
            )
    for r in fast:
        if r["V"] * r["m"] >= 500 * 2000:
            out.append(
                f"- {r['V']} x {r['m']} ({r['kind']} supports) within 30 min with certificate: "
                f"{r['seconds']:.0f} s, gap {r['rel_gap']:.1e}, violation {r['max_violation']:.1e} -> "
                f"{verdict(r['seconds'] <= 1800 and r['converged'])}."
            )
    return out


def concepts_verdicts(rows: list[dict]) -> list[str]:
    out = []
    for r in rows:
        if r.get("status") != "ok":
            continue
        if r.get("vs_dense"):
            d = r["vs_dense"]
            worst = max(d.values())
            out.append(
                f"- {r['case']}, {r['method']} vs dense LAPACK SVD (sigma/s_1, U, Vt entrywise after the "
                f"sign rule) <= 1e-8: {worst:.1e} -> {verdict(worst <= 1e-8)}."
            )
        if r["V"] >= 50_000:
            out.append(
                f"- {r['case']}, k = {r['k']}, {r['method']}: {r['seconds']:.0f} s SVD "
                f"({r['wall_seconds']:.0f} s wall incl. start-up and building S), peak RSS "
                f"{r['peak_rss_mb'] / 1024:.2f} GB; target <= 300 s and <= 4 GB -> "
                f"{verdict(r['wall_seconds'] <= 300 and r['peak_rss_mb'] <= 4096)}."
            )
    return out


def machine_line(payload: dict) -> str:
    m = payload["machine"]
    return (
        f"`{payload['file']}` ({payload['created']}): {m['cpu_count']} CPU cores, "
        f"{m.get('mem_total_gb', '?')} GB, numpy {m['numpy']}, scipy {m['scipy']}, torch {m['torch']}, "
        f"cvxpy {m.get('cvxpy')}; "
        f"load average at start {m['loadavg'][0]:.1f}."
    )


def fold(summary: str, lines: list[str]) -> list[str]:
    """``lines`` (Markdown) folded under a one-line ``summary``: a ``<details>`` HTML block, the Markdown
    between its blank lines parsed as usual; nothing for no lines."""
    body = list(lines)
    while body and not body[-1].strip():
        body.pop()
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>", ""] if body else []


def _tables(payloads: list[dict], format_table, verdicts) -> list[str]:
    parts = []
    for payload in payloads:
        parts += [
            f"**{payload['group']} sizes** -- " + machine_line(payload),
            "",
            format_table(payload["rows"]),
            "",
        ]
        notes = sorted({r["baseline_note"] for r in payload["rows"] if r.get("baseline_note")})
        parts += [f"- {n}" for n in notes] + ([""] if notes else [])
    rows = [r for p in payloads for r in p["rows"]]
    parts = fold(f"Every case measured: {len(rows)} rows in {len(payloads)} table(s) (open)", parts)
    if rows:
        parts += ["**Targets (speed and memory goals set for these solvers)**", ""] + verdicts(rows) + [""]
    return parts


def budget_section(lmm_payloads: list[dict]) -> list[str]:
    """Paper B's scale: the per-iteration budget (``lmm_budget.json``) and the verdicts on its two targets,
    from the real-text rows of ``lmm_real.json`` and the budget's floors."""
    path = RESULTS_DIR / "lmm_budget.json"
    if not path.exists():
        return []
    payload = json.loads(path.read_text()) | {"file": path.name}
    parts = ["**Where one iteration's time goes** -- " + machine_line(payload), "",
             bench_budget.format_components(payload), "",
             "**Full solves at 1000 x 10,000 (b04 TinyStories), same session**", "",
             bench_budget.format_solves(payload), "", "**Targets at paper B's scale**", ""]
    rows = [r for p in lmm_payloads if p.get("group") == "real" for r in p["rows"]]
    for r in rows:
        if r.get("method", "").startswith("fast") and r["V"] * r["m"] >= 1000 * 10_000:
            ok = r.get("status") == "ok" and r.get("converged") and r["seconds"] <= 60
            detail = (f"{r['seconds']:.0f} s ({r['iterations']} iterations), gap {r['rel_gap']:.1e}, "
                      f"violation {r['max_violation']:.1e}, load {r['loadavg_before'][0]:.1f}"
                      if r.get("status") == "ok" else str(r.get("status")))
            parts.append(f"- {r['V']} x {r['m']} {r['kind']} supports certified (gap <= 1e-6) in <= 60 s: "
                         f"{detail} -> {verdict(ok)}.")
    needed = [r["iterations"] for r in payload.get("solves", [])
              if r.get("status") == "ok" and r.get("converged")]
    for c in payload.get("components", []):
        if c.get("status") != "ok" or c["V"] * c["m"] < 5000 * 50_000:
            continue
        floor = min(s["floor"] for s in c["steps"].values())
        mb = min(s["array_mb"] for s in c["steps"].values())
        allowed = c["target_s"] / floor
        parts.append(
            f"- {c['V']} x {c['m']} {c['kind']} supports ({c['unique_columns']} unique contexts) in <= "
            f"{c['target_s'] / 60:.0f} min and <= {c['target_gb']:.0f} GB: one iteration costs at least "
            f"{floor:.1f} s (no Anderson step counted), so the budget leaves {allowed:.0f} iterations; at "
            f"1000 x 10,000 the solver needed {min(needed) if needed else '?'} or more. One iterate is "
            f"{mb:.0f} MB in float32; the solver holds about ten of them plus 2 x Anderson memory -> "
            f"{verdict(False if needed and allowed < min(needed) else None)} (not attempted)."
        )
    parts += rank_line(lmm_payloads)
    return parts + [""]


def rank_line(lmm_payloads: list[dict]) -> list[str]:
    """The rank of every certified real-text or Zipf solution of at least 200 x 1000, over V --
    why a rank-r (truncated) thresholding would not make an iteration cheaper on these supports."""
    seen = {}
    for p in lmm_payloads:
        for r in p["rows"]:
            if (r.get("method", "").startswith("fast") and r.get("status") == "ok" and r.get("rank")
                    and r["kind"] != "uniform" and r["V"] * r["m"] >= 200 * 1000):
                seen[r["kind"], r["V"], r["m"]] = int(r["rank"])
    if not seen:
        return []
    shares = [rank / V for (_, V, _), rank in seen.items()]
    listed = ", ".join(f"{rank} of {V} ({kind} {V} x {m})" for (kind, V, m), rank in sorted(seen.items()))
    return [f"- Rank of the certified solutions: {listed}, i.e. {min(shares):.2f} to {max(shares):.2f} of V. "
            "A truncated (rank-r) thresholding therefore costs about what the full one costs; it cannot "
            "lower the floor above."]


def sweep_tables() -> list[str]:
    parts = []
    for group in ("overhead", "throughput", "memory"):
        path = RESULTS_DIR / f"sweep_{group}.json"
        if not path.exists():
            continue
        payload = json.loads(path.read_text()) | {"file": path.name}
        parts += [f"**{group}** -- " + machine_line(payload), ""]
        parts += fold(f"The {group} table: {len(payload['rows'])} rows (open)",
                      [bench_sweep.format_table(group, payload["rows"])])
        parts += bench_sweep.verdicts(group, payload["rows"]) + [""]
    return parts


def trace_overhead() -> list[str]:
    """The run-time trace's cost (``trace_overhead.json``): chapter cells with and without the hook."""
    path = RESULTS_DIR / "trace_overhead.json"
    if not path.exists():
        return []
    payload = json.loads(path.read_text()) | {"file": path.name}
    rows = ["| chapter | cells, traced (s) | cells, untraced (s) | ratio | functions traced |",
            "|---|---|---|---|---|"]
    rows += [f"| {r['chapter']} | {r['cells_traced_s']:.1f} | {r['cells_untraced_s']:.1f} | "
             f"{r['ratio_cells']:.2f} | {r['functions_traced']} |" for r in payload["rows"]]
    return [machine_line(payload), "", *rows, ""]


def train_step_section() -> list[str]:
    """ms per training step, ours against the bare loop (``train_step.json``): table, verdicts, load."""
    path = RESULTS_DIR / "train_step.json"
    if not path.exists():
        return []
    payload = json.loads(path.read_text()) | {"file": path.name}
    rows = payload["rows"]
    loads = [x for r in rows if r.get("status") == "ok" for x in r["loadavg"]]
    load = (f"The load average (1 min) when the workers started ranged from {min(loads):.1f} to "
            f"{max(loads):.1f} (last column: ours/bare)." if loads else "")
    goal = payload["goal"]
    ok = [r for r in rows if r.get("status") == "ok"]
    met = [r for r in ok if r["meets_goal"]]
    worst = max(ok, key=lambda r: r["ratio_cpu"]) if ok else None
    summary = (f"**Goal: ours within {goal:.1f}x of the bare loop (CPU ms per step, median).** Met in "
               f"{len(met)} of {len(ok)} configurations; the largest ratio is {worst['ratio_cpu']:.2f} "
               f"(`{worst['spec']}`, {worst['threads']} thread(s))." if worst else "")
    profiles = bench_train_step.profile_lines(payload)
    where = fold(f"Where ours' extra time goes: cProfile of the {len(payload.get('profiles', {}))} model(s) "
                 "that miss the goal at 1 thread (open)", profiles)
    table = fold(f"Every (model, threads): {len(rows)} rows (open)", [bench_train_step.format_table(rows)])
    return [summary, "", machine_line(payload) + " " + load, "", *table, *where]


FIGURES_DIR = BOOK_PAGE.parent / "images"


def train_step_figure(out: Path) -> bool:
    """Left: ours / bare (CPU ms per step) per model at 1 thread, with the goal; right: CPU ms per step of
    both loops at 1 and 2 threads (log scale)."""
    path = RESULTS_DIR / "train_step.json"
    if not path.exists():
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    payload = json.loads(path.read_text())
    rows = [r for r in payload["rows"] if r.get("status") == "ok"]
    one = [r for r in rows if r["threads"] == 1]
    if not one:
        return False
    names = list(dict.fromkeys(r["spec"] for r in rows))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8), dpi=110)
    ax1.barh([r["spec"] for r in one], [r["ratio_cpu"] for r in one],
             color=["C2" if r["meets_goal"] else "C3" for r in one])
    ax1.axvline(1.0, color="k", lw=0.8)
    ax1.axvline(payload["goal"], color="C3", ls="--", lw=1, label=f"goal {payload['goal']:.1f}x")
    ax1.invert_yaxis()
    ax1.set(xlabel="ours / bare, CPU ms per step (1 thread)")
    ax1.legend(fontsize=8, loc="lower right")
    width = 0.2
    for k, (loop, threads) in enumerate([("ours", 1), ("bare", 1), ("ours", 2), ("bare", 2)]):
        ys, xs = [], []
        for i, name in enumerate(names):
            r = next((r for r in rows if r["spec"] == name and r["threads"] == threads), None)
            if r is not None:
                ys.append(i + (k - 1.5) * width)
                xs.append(r[f"{loop}_cpu_ms"])
        ax2.barh(ys, xs, height=width, color=f"C{k // 2}", alpha=1.0 if loop == "ours" else 0.45,
                 label=f"{loop}, {threads} thread{'s' if threads > 1 else ''}")
    ax2.set_yticks(range(len(names)), names)
    ax2.invert_yaxis()
    ax2.set(xscale="log", xlabel="CPU ms per step (process time, all threads)")
    ax2.legend(fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(True, axis="x", alpha=0.3)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, metadata={"Software": None})
    plt.close(fig)
    return True


def timing_figure(prefix: str, out: Path, size_of, xlabel: str) -> bool:
    """Seconds per solve against problem size (log-log), one marker series per method, from every
    ``<prefix>_*.json``; a run that timed out is drawn at its limit with an open marker. Returns whether
    there was anything to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for payload in load(prefix) if payload["file"] != "lmm_budget.json" for r in payload["rows"]]
    rows = [r | {"seconds": r["seconds"] if r.get("seconds") is not None else r.get("wall_seconds")}
            for r in rows]
    rows = [r for r in rows if r["seconds"] is not None]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    for i, method in enumerate(dict.fromkeys(r["method"] for r in rows)):
        mine = sorted((r for r in rows if r["method"] == method), key=size_of)
        done = [r for r in mine if r.get("status") == "ok"]
        late = [r for r in mine if r.get("status") != "ok"]
        color = f"C{i}"
        ax.plot([size_of(r) for r in done], [r["seconds"] for r in done], "o", color=color, label=method)
        if late:
            ax.plot([size_of(r) for r in late], [r["seconds"] for r in late], "o", mfc="none", color=color,
                    label=f"{method}: stopped at its limit")
    ax.set(xscale="log", yscale="log", xlabel=xlabel, ylabel="seconds per solve")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, metadata={"Software": None})
    plt.close(fig)
    return True


def figure_block(name: str, alt: str, caption: str) -> str:
    label = name.removesuffix(".png")
    return f"```{{figure}} images/{name}\n:alt: {alt}\n:name: fig-{label}\n\n{caption}\n```"


def figures() -> dict[str, str]:
    """The page's two plots, written under ``book/images/`` (placeholder -> MyST figure block)."""
    out = {}
    if timing_figure("lmm", FIGURES_DIR / "performance_lmm.png", lambda r: r["V"] * r["m"], "V x m"):
        out["<!-- LMM_FIGURE -->"] = figure_block(
            "performance_lmm.png", "seconds per max-margin solve against V times m, log-log, per method",
            "Seconds per $L^{mm}$ solve against the size $V\\times m$ of the support matrix, every case of "
            "the tables below (open marker: cvxpy stopped at its time limit, drawn at its wall time).")
    if timing_figure("concepts", FIGURES_DIR / "performance_concepts.png", lambda r: r["nnz"],
                     "non-zeros of S"):
        out["<!-- CONCEPTS_FIGURE -->"] = figure_block(
            "performance_concepts.png", "seconds per top-k SVD of the centered support against its non-zeros",
            "Seconds per top-$k$ SVD of $\\widetilde S$ against the non-zeros of $S$, per method "
            "(dense LAPACK, ARPACK on the implicit operator, randomized).")
    if train_step_figure(FIGURES_DIR / "performance_train_step.png"):
        out["<!-- TRAIN_STEP_FIGURE -->"] = figure_block(
            "performance_train_step.png",
            "bar charts: ours over bare ms per training step per model, and CPU ms per step at 1 and 2 "
            "threads",
            "Left: CPU ms per training step of `train_ntp` divided by the bare PyTorch loop's, per chapter "
            "model at 1 thread (green: within the goal, red: not; dashed: the goal). Right: CPU ms per step "
            "(process time, summed over threads) of both loops at 1 and 2 torch threads, log scale.")
    return out


def gpu_estimate(prefix: str = "a07") -> list[str]:
    """The wall estimate of a chapter's paper point(s) on the GPU machine, one row per point and setting
    (:func:`ntputils.book.paper_cost.wall_estimate`, the numbers ``make device-bundle`` prints)."""
    points = point_costs(prefix)
    if not points:
        return ["(no step counts recorded: run `python -m benchmarks.step_counts`)"]
    rows = ["| point | setting | compute a step (ms) | launches a step (ms) | steps | wall with evaluation, "
            "set-up (and compilation) (s) |", "|---|---|---|---|---|---|"]
    for label, parts in points.items():
        steps = " + ".join(f"{p.steps:,}" for p in parts)
        for name, precision, compiled in estimated_settings(parts):
            e = wall_estimate(parts, precision, compiled)
            rows.append(f"| {label or prefix} | {name} | {e['compute_ms'][0]}-{e['compute_ms'][1]} | "
                        f"{e['launch_ms'][0]}-{e['launch_ms'][1]} | {steps} | {e['wall_s'][0]:,}-"
                        f"{e['wall_s'][1]:,} |")
    return rows


def render() -> str:
    text = TEMPLATE.read_text()
    lmm_payloads = [p for p in load("lmm") if p["file"] != "lmm_budget.json"]
    lmm = _tables(lmm_payloads, bench_lmm.format_table, lmm_verdicts)
    budget = "\n".join(budget_section(lmm_payloads)).strip()
    text = text.replace("<!-- LMM_BUDGET -->", budget or "(no results yet)")
    conc = _tables(load("concepts"), bench_concepts.format_table, concepts_verdicts)
    text = text.replace("<!-- LMM_TABLES -->", "\n".join(lmm).strip() or "(no results yet)")
    text = text.replace("<!-- CONCEPTS_TABLES -->", "\n".join(conc).strip() or "(no results yet)")
    text = text.replace("<!-- SWEEP_TABLES -->", "\n".join(sweep_tables()).strip() or "(no results yet)")
    trace = "\n".join(trace_overhead()).strip() or "(not measured yet)"
    text = text.replace("<!-- TRACE_OVERHEAD -->", trace)
    train = "\n".join(train_step_section()).strip() or "(not measured yet)"
    text = text.replace("<!-- TRAIN_STEP -->", train)
    text = text.replace("<!-- GPU_ESTIMATE -->", "\n".join(gpu_estimate("a07")))
    text = text.replace("<!-- GPU_ESTIMATE_A06 -->", "\n".join(gpu_estimate("a06")))
    for placeholder, block in figures().items():
        text = text.replace(placeholder, block)
    return text.rstrip() + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="benchmarks.report", description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(BOOK_PAGE))
    a = p.parse_args(argv)
    text = render()
    Path(a.out).write_text(text)
    print(f"wrote {a.out} ({len(text.splitlines())} lines)")


if __name__ == "__main__":
    main()
