"""Benchmark: where one iteration of the certified L^mm solver spends its time, and how many
iterations issue 17's targets leave (``python -m benchmarks.lmm_budget``).

Issue 17 asks for the NTP-SVM (Paper A, Eq. (NTP-SVM); :func:`ntputils.geometry.max_margin_logits`,
``solver="fast"``) on real-text supports in <= 60 s at 1000 x 10,000 and <= 10 min / 8 GB at
5,000 x 50,000, certified to a relative gap of 1e-6. This script measures, on paper B's b04
supports (``paper_b_text``, GPT-2 tokenizer, contexts of length 2-6):

* ``components``: the cost of each step of one ADMM iteration of
  :mod:`ntputils.geometry.maxmargin_admm`, with its own building blocks, in float64 and float32 and
  the solver's thread settings -- the exact column projection, the Gram matrix, its eigen-
  decomposition, applying the thresholded eigenbasis, one Anderson step, and a tenth of a
  certificate (one every ``check_every = 10`` iterations). Their sum is a floor for one iteration;
  ``target / floor`` is the number of iterations a target leaves.
* ``solve``: full certified solves at 1000 x 10,000 (default options; Anderson memory 15; float32
  iterations), with the iteration at which the primal ``||L||_*`` first comes within 1e-6 of the
  certified optimum next to the iteration at which the certified gap does -- the solver is limited
  by how fast its dual bound tightens, not by the primal.

Every measurement runs in its own subprocess (fresh peak-memory counter, timeout, memory cap).
Results: ``benchmarks/results/lmm_budget.json``, rendered on the Performance page.

Usage::

    nohup python -m benchmarks.lmm_budget > benchmarks/results/lmm_budget.log 2>&1 &
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from benchmarks.common import (
    dispatch_worker,
    fmt,
    machine_info,
    markdown_table,
    peak_rss_mb,
    run_worker,
    write_json,
)

MODULE = "benchmarks.lmm_budget"

#: (kind, V, m, target seconds, target peak GB) -- issue 17's two targets
CASES = [
    ("tinystories", 1000, 10_000, 60.0, None),
    ("wikitext", 1000, 10_000, 60.0, None),
    ("tinystories", 5000, 50_000, 600.0, 8.0),
]
#: full solves at the first target's size: (label, solver options)
SOLVES = [
    ("default (float64, Anderson 5)", {}),
    ("Anderson memory 15", {"anderson": 15}),
    ("float32 iterations, Anderson 15", {"anderson": 15, "dtype": "float32", "time_limit": 240.0}),
]
CHECK_EVERY = 10  # the solver's default certificate interval
GAP = 1e-6  # issue 17's certified relative gap


# ---------------------------------------------------------------------------------------------
# workers (run in subprocesses)
# ---------------------------------------------------------------------------------------------
def _timed(fn, *args, reps: int) -> tuple[float, object]:
    """Median wall seconds of ``reps`` calls ``fn(*args)`` and the last result."""
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def _iteration_steps(cons, y, reps: int, anderson: bool) -> dict:
    """Seconds of each step of one solver iteration at the state ``y`` (the solver's own blocks)."""
    from ntputils.geometry import maxmargin_admm as admm

    _, t = cons.project(y)
    y2 = y + 1e-3 * (y - y.mean())  # a nearby point, projected warm-started as in the solver's loop
    s_proj, (L, _) = _timed(cons.project, y2, t, reps=reps)
    Z = 2 * L - y2  # L - U with U = y - L
    s_gram, G = _timed(admm._gram, Z, reps=reps)
    s_eigh, (w, _) = _timed(admm._eigh, G, reps=reps)
    s0 = np.sqrt(np.clip(w.numpy(), 0, None))
    tau = float(s0[s0 > 1e-12 * s0.max()].mean()) / 2.0  # the solver's rho = 2 / mean singular value
    s_svt, (X, rank) = _timed(admm._svt, Z, tau, reps=reps)
    s_nuc, _ = _timed(admm._nuclear_norm_gram, L, reps=reps)
    s_op, _ = _timed(admm._op_norm_t, Z, reps=reps)
    s_aa = None
    if anderson:
        acc, g = admm._Anderson(5), X - L
        for k in range(6):  # fill the memory, then time a full step
            acc.step(y2 + k * 1e-3, g + k * 1e-3)
        s_aa, _ = _timed(acc.step, y2, g, reps=reps)
    return {"projection": s_proj, "gram": s_gram, "eigh": s_eigh, "apply": max(s_svt - s_gram - s_eigh, 0.0),
            "anderson5": s_aa, "certificate/10": (s_nuc + s_op) / CHECK_EVERY, "svt_rank": int(rank)}


def components(kind: str, V: int, m: int) -> dict:
    """Seconds of each step of one solver iteration near the starting point ``Pi_C(S~ diag(c))``."""
    import torch

    from benchmarks.lmm import make_support
    from ntputils.device import limit_threads
    from ntputils.geometry import maxmargin_admm as admm

    S = make_support(kind, V, m)
    first, _, mult = admm._unique_columns(S)
    c = np.sqrt(mult.astype(np.float64))
    mask = S.toarray().astype(bool)[:, first]
    n = first.size
    big = V * n >= 50_000_000  # 5,000 x 50,000: one repetition, no Anderson buffers (memory)
    out: dict = {"kind": kind, "V": V, "m": m, "unique_columns": int(n), "nnz": int(S.nnz), "steps": {}}
    rng = np.random.default_rng(0)
    for dtype in (torch.float64, torch.float32):
        # the solver's thread settings (num_threads=-1): LAPACK/BLAS single-threaded, torch default
        # threads for problems with >= 4e6 entries
        with limit_threads(1 if V * m < 4_000_000 else None, 1):
            cons = admm._Columns.build(mask, c, dtype, torch.device("cpu"))
            y0 = (mask - mask.mean(axis=0)) * c + 0.05 * rng.standard_normal((V, n))
            y = torch.as_tensor(y0, dtype=dtype)
            del y0
            steps = _iteration_steps(cons, y, 1 if big else 3, anderson=not big)
            del y, cons
        floor = sum(v for k, v in steps.items() if k != "svt_rank" and v is not None)
        out["steps"][str(dtype).replace("torch.", "")] = {
            **steps, "floor": floor, "array_mb": V * n * dtype.itemsize / 2**20}
    out["peak_rss_mb"] = peak_rss_mb()
    return out


def solve(kind: str, V: int, m: int, opts: dict) -> dict:
    """One certified solve; the history gives the iterations at which primal and gap reach ``GAP``."""
    import torch

    from benchmarks.lmm import make_support
    from ntputils.geometry.maxmargin_admm import solve_max_margin

    S = make_support(kind, V, m)
    kw = dict(opts)
    if "dtype" in kw:
        kw["dtype"] = getattr(torch, kw["dtype"])
    sol = solve_max_margin(S, progress=False, **kw)
    keys = ("iter", "seconds", "nuclear_norm", "lower_bound", "rel_gap")
    hist = [{k: r[k] for k in keys} for r in sol.history]
    return {"kind": kind, "V": V, "m": m, "options": opts, "seconds": sol.seconds,
            "iterations": sol.iterations,
            "rel_gap": sol.rel_gap, "max_violation": sol.max_violation, "converged": sol.converged,
            "nuclear_norm": sol.nuclear_norm, "lower_bound": sol.lower_bound, "rank": sol.rank,
            "unique_columns": sol.info["unique_columns"], "history": hist, "peak_rss_mb": peak_rss_mb()}


def first_reaching(history: list[dict], optimum: float, key: str) -> int | None:
    """First recorded iteration whose primal error (``key="primal"``: ``(||L||_* - opt) / opt``) or
    certified gap (``key="gap"``) is at most ``GAP``; None if none is."""
    for r in history:
        err = (r["nuclear_norm"] - optimum) / optimum if key == "primal" else r["rel_gap"]
        if err <= GAP:
            return int(r["iter"])
    return None


def worker(argv: list[str]) -> None:
    mode, kind, V, m, *rest = argv
    if mode == "components":
        out = components(kind, int(V), int(m))
    else:
        out = solve(kind, int(V), int(m), json.loads(rest[0]))
    print(json.dumps(out, default=float))


# ---------------------------------------------------------------------------------------------
# driver and table
# ---------------------------------------------------------------------------------------------
def run(cases=CASES, solves=SOLVES) -> dict:
    rows, solve_rows = [], []
    for kind, V, m, target_s, target_gb in cases:
        print(f"[{time.strftime('%H:%M:%S')}] components {kind} {V}x{m} ...", flush=True)
        r = run_worker(MODULE, ["components", kind, str(V), str(m)], timeout=3600, mem_limit_gb=20.0)
        rows.append({**r, "kind": kind, "V": V, "m": m, "target_s": target_s, "target_gb": target_gb})
    kind, V, m = cases[0][:3]
    for label, opts in solves:
        print(f"[{time.strftime('%H:%M:%S')}] solve {kind} {V}x{m}: {label} ...", flush=True)
        args = ["solve", kind, str(V), str(m), json.dumps(opts)]
        r = run_worker(MODULE, args, timeout=3600, mem_limit_gb=16.0)
        solve_rows.append({**r, "label": label})
    certified = [r for r in solve_rows if r.get("status") == "ok" and r.get("converged")]
    optimum = min((r["nuclear_norm"] for r in certified), default=None)
    for r in solve_rows:
        if optimum is not None and r.get("history"):
            r["primal_within_gap_at"] = first_reaching(r["history"], optimum, "primal")
            r["gap_within_gap_at"] = first_reaching(r["history"], optimum, "gap")
    return {"machine": machine_info(), "components": rows, "solves": solve_rows, "optimum": optimum,
            "gap": GAP, "check_every": CHECK_EVERY}


def format_components(payload: dict) -> str:
    headers = ["supports", "V x m (unique cols)", "dtype", "projection s", "Gram s", "eigh s", "apply s",
               "Anderson s", "certificate/10 s", "floor s/iter", "one array MB", "target",
               "iterations the target leaves"]
    body = []
    for r in payload.get("components", []):
        if r.get("status") != "ok":
            body.append([r["kind"], f"{r['V']} x {r['m']}", "-", *["-"] * 8,
                         f"{r['target_s']:.0f} s", str(r.get("status"))])
            continue
        for dt, s in r["steps"].items():
            target = f"{r['target_s']:.0f} s" + (f", {r['target_gb']:.0f} GB" if r.get("target_gb") else "")
            size = f"{r['V']} x {r['m']} ({r['unique_columns']})"
            body.append([r["kind"], size, dt, fmt(s["projection"], ".3f"), fmt(s["gram"], ".3f"),
                         fmt(s["eigh"], ".3f"), fmt(s["apply"], ".3f"),
                         fmt(s["anderson5"], ".3f"), fmt(s["certificate/10"], ".3f"), fmt(s["floor"], ".3f"),
                         fmt(s["array_mb"], ".0f"), target, fmt(r["target_s"] / s["floor"], ".0f")])
    return markdown_table(headers, body)


def format_solves(payload: dict) -> str:
    headers = ["supports", "options", "status", "seconds", "iterations", "s/iter", "certified gap",
               "primal within 1e-6 at iter", "certified gap <= 1e-6 at iter", "peak RSS MB", "load"]
    body = []
    for r in payload.get("solves", []):
        ok = r.get("status") == "ok"
        its = r.get("iterations")
        body.append([f"{r.get('kind', '')} {r.get('V', '')} x {r.get('m', '')}", r["label"],
                     ("certified" if r.get("converged") else "not certified") if ok else str(r.get("status")),
                     fmt(r.get("seconds"), ".1f"), fmt(its, "d"),
                     fmt(r["seconds"] / its if ok and its else None, ".2f"), fmt(r.get("rel_gap"), ".1e"),
                     fmt(r.get("primal_within_gap_at"), "d", "not reached"),
                     fmt(r.get("gap_within_gap_at"), "d", "not reached"),
                     fmt(r.get("peak_rss_mb"), ".0f"), fmt(r.get("loadavg_before", [None])[0], ".1f")])
    return markdown_table(headers, body)


def main(argv: list[str] | None = None) -> None:
    argv = dispatch_worker(argv, worker)
    if argv is None:
        return
    p = argparse.ArgumentParser(prog=MODULE, description=__doc__.splitlines()[0])
    p.parse_args(argv)
    payload = run()
    path = write_json("lmm_budget.json", payload)
    print(format_components(payload))
    print(format_solves(payload))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
