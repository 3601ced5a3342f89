"""Benchmark: the certified fast L^mm solver against cvxpy/SCS (``python -m benchmarks.lmm``).

Every solve runs in its own subprocess (fresh peak-memory counter, hard timeout, address-space
cap), so a baseline that needs 10 GB or an hour cannot take the machine down. For each case the
table shows the wall time, peak RSS, ``||L||_*``, the certified relative duality gap and the
maximal constraint violation; the fast rows also show the agreement with the cvxpy solution
(relative Frobenius distance of the normalized matrices and relative nuclear-norm difference) and
the speed-up over cvxpy measured in the same run. Results: ``benchmarks/results/lmm_<group>.json``.

Usage::

    python -m benchmarks.lmm --group small          # cvxpy-comparable sizes (<= 200 x 1000)
    nohup python -m benchmarks.lmm --group real > benchmarks/results/lmm_real.log 2>&1 &  # issue 17
    nohup python -m benchmarks.lmm --group big > benchmarks/results/lmm_big.log 2>&1 &
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from benchmarks.common import (
    dispatch_worker,
    fmt,
    machine_info,
    markdown_table,
    peak_rss_mb,
    run_worker,
    write_json,
)

MODULE = "benchmarks.lmm"

# (kind, V, m, run cvxpy?, cvxpy timeout s)
GROUPS = {
    "tiny": [("uniform", 50, 100, True, 600)],
    "small": [
        ("uniform", 100, 300, True, 1800),
        ("uniform", 200, 1000, True, 1800),
        ("zipf", 200, 1000, True, 1800),
    ],
    "big": [("zipf", 500, 2000, True, 900), ("zipf", 1000, 10_000, False, 0)],
    # paper B's b04 supports (GPT-2 tokenizer, contexts of length 2-6), issue 17: cvxpy at its
    # frontier on the same corpus, then the b04 sizes
    "real": [
        ("tinystories", 200, 1000, True, 1800),
        ("tinystories", 1000, 10_000, False, 0),
        ("wikitext", 1000, 10_000, False, 0),
    ],
}
CVXPY_MEM_GB = 14.0
#: support kinds read from paper B's corpora (``ntputils.data.corpora.paper_b_text``)
REAL_KINDS = ("tinystories", "wikitext")


# ---------------------------------------------------------------------------------------------
# supports and the cvxpy baseline
# ---------------------------------------------------------------------------------------------
def make_support(kind: str, V: int, m: int, seed: int = 0) -> sp.csc_array:
    """``uniform``: 1-3 next tokens per context, uniformly at random;
    ``zipf``: :func:`ntputils.data.zipf_supports` (Zipf token frequencies, supports of 1-50);
    ``tinystories`` / ``wikitext``: paper B's Simplified TinyStories / WikiText supports as in b04
    (``paper_b_text(kind, V, m, context_lengths=(2, ..., 6), tokenizer="gpt2")``, ``S = counts > 0``;
    ``seed`` unused)."""
    from ntputils.data import zipf_supports

    if kind in REAL_KINDS:
        from ntputils.data.corpora import paper_b_text

        d = paper_b_text(kind, V=V, m=m, context_lengths=(2, 3, 4, 5, 6), tokenizer="gpt2")
        return sp.csc_array((sp.csc_array(d.S) > 0).astype(np.int8))
    if kind == "zipf":
        return zipf_supports(V, m, max_support=50, exponent=1.1, seed=seed)
    if kind == "uniform":
        rng = np.random.default_rng(seed)
        sizes = rng.integers(1, 4, size=m)
        ranks = np.argsort(np.argsort(rng.random((V, m)), axis=0), axis=0)
        return sp.csc_array((ranks < sizes).astype(np.int8))
    raise ValueError(f"unknown support kind {kind!r}; valid: 'uniform', 'zipf', {REAL_KINDS}")


def anchor_constraints(mask: np.ndarray) -> tuple[sp.csr_array, sp.csr_array]:
    """Sparse ``E`` (``L[z,j] - L[a_j,j] = 0``) and ``D`` (``L[a_j,j] - L[v,j] >= 1``) on ``vec(L)``
    (column-major), ``a_j`` = first support row of column j: the all-pairs constraints, minimal form."""
    V, m = mask.shape
    anchor = mask.argmax(axis=0)
    anchor_idx = anchor + V * np.arange(m)
    j, z = np.nonzero(mask.T)
    keep = z != anchor[j]
    zj, jj = z[keep], j[keep]
    k = zj.size
    rows = np.r_[np.arange(k), np.arange(k)]
    E = sp.csr_array(
        (np.r_[np.ones(k), -np.ones(k)], (rows, np.r_[zj + V * jj, anchor_idx[jj]])), shape=(k, V * m)
    )
    jv, v = np.nonzero(~mask.T)
    q = v.size
    rows = np.r_[np.arange(q), np.arange(q)]
    D = sp.csr_array(
        (np.r_[np.ones(q), -np.ones(q)], (rows, np.r_[anchor_idx[jv], v + V * jv])), shape=(q, V * m)
    )
    return E, D


def solve_cvxpy(mask: np.ndarray, eps: float | None = None) -> tuple[np.ndarray | None, dict]:
    """cvxpy + SCS on the anchor formulation; ``eps=None`` keeps cvxpy's defaults (1e-5 for SCS)."""
    import cvxpy as cp

    V, m = mask.shape
    E, D = anchor_constraints(mask)
    L = cp.Variable((V, m))
    x = cp.vec(L, order="F")
    cons = [D @ x >= 1] + ([E @ x == 0] if E.shape[0] else [])
    prob = cp.Problem(cp.Minimize(cp.normNuc(L)), cons)
    opts = {} if eps is None else {"eps_abs": eps, "eps_rel": eps}
    t0 = time.perf_counter()
    prob.solve(solver=cp.SCS, **opts)
    seconds = time.perf_counter() - t0
    info = {
        "status": prob.status,
        "objective": float(prob.value),
        "seconds": seconds,
        "eps": eps if eps is not None else "cvxpy default (1e-5)",
    }
    return (None if L.value is None else np.asarray(L.value)), info


# ---------------------------------------------------------------------------------------------
# worker (one solve per process)
# ---------------------------------------------------------------------------------------------
def worker(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog=f"{MODULE} worker")
    p.add_argument("--method", choices=["fast", "cvxpy"], required=True)
    p.add_argument("--kind", required=True)
    p.add_argument("--V", type=int, required=True)
    p.add_argument("--m", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", default=None)
    p.add_argument("--tight-reference", action="store_true")
    a = p.parse_args(argv)
    from ntputils.geometry.maxmargin_admm import certify, solve_max_margin

    S = make_support(a.kind, a.V, a.m, a.seed)
    mask = S.toarray().astype(bool)
    out = {
        "method": a.method,
        "kind": a.kind,
        "V": a.V,
        "m": a.m,
        "seed": a.seed,
        "nnz_per_column": S.nnz / a.m,
        "max_support": int(np.diff(S.indptr).max()),
    }
    if a.method == "fast":
        sol = solve_max_margin(S, progress=False)
        out.update(
            seconds=sol.seconds,
            nuclear_norm=sol.nuclear_norm,
            lower_bound=sol.lower_bound,
            rel_gap=sol.rel_gap,
            max_violation=sol.max_violation,
            iterations=sol.iterations,
            rank=sol.rank,
            converged=sol.converged,
            solver=sol.solver,
            unique_columns=sol.info["unique_columns"],
            threads=_threads(),
        )
        out["peak_rss_mb"] = peak_rss_mb()  # of the timed solve
        L_tight = None
        if a.tight_reference:  # untimed: the same problem to gap 1e-11, to see who is closer to the optimum
            tight = solve_max_margin(S, progress=False, gap_tol=1e-11, max_iter=5000, warm_start=sol)
            out.update(tight_rel_gap=tight.rel_gap, tight_nuclear_norm=tight.nuclear_norm)
            out["untimed_seconds"] = tight.seconds
            out["rel_diff_to_tight"] = float(np.linalg.norm(_unit(sol.L) - _unit(tight.L)))
            L_tight = tight.L
        if a.save:
            np.savez(a.save, L=sol.L, dual=sol.dual, **({} if L_tight is None else {"L_tight": L_tight}))
    else:
        L, info = solve_cvxpy(mask)
        out.update(
            seconds=info["seconds"],
            status_solver=info["status"],
            objective=info["objective"],
            eps=info["eps"],
            solver="cvxpy/SCS",
        )
        if L is not None:
            cert = certify(S, L, dual="none")
            out.update(nuclear_norm=cert["nuclear_norm"], max_violation=cert["max_violation"])
            if a.save:
                np.savez(a.save, L=L)
        out["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(out, default=float), flush=True)


def _threads() -> int:
    import torch

    return torch.get_num_threads()


# ---------------------------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------------------------
def compare(S: sp.csc_array, fast_npz: Path, cvx_npz: Path) -> dict:
    """Agreement of the fast and cvxpy solutions, and the cvxpy point certified with the fast dual."""
    from ntputils.geometry.maxmargin_admm import certify

    f = np.load(fast_npz)
    Lc = np.load(cvx_npz)["L"]
    Lf = f["L"]
    cert = certify(S, Lc, f["dual"])
    nf, nc = np.linalg.svd(Lf, compute_uv=False).sum(), np.linalg.svd(Lc, compute_uv=False).sum()
    out = {
        "rel_diff_normalized": float(np.linalg.norm(_unit(Lf) - _unit(Lc))),
        "rel_nuclear_diff": float(abs(nf - nc) / nc),
        "cvxpy_gap_vs_fast_dual": cert["rel_gap"],
    }
    if "L_tight" in f:
        out["cvxpy_rel_diff_to_tight"] = float(np.linalg.norm(_unit(Lc) - _unit(f["L_tight"])))
    return out


def _unit(A: np.ndarray) -> np.ndarray:
    return A / np.linalg.norm(A)


def run_group(group: str, seed: int = 0) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind, V, m, with_cvxpy, timeout in GROUPS[group]:
            args = ["--kind", kind, "--V", str(V), "--m", str(m), "--seed", str(seed)]
            fast_npz, cvx_npz = Path(tmp) / f"fast_{V}_{m}.npz", Path(tmp) / f"cvx_{V}_{m}.npz"
            print(f"[{time.strftime('%H:%M:%S')}] {kind} {V}x{m}: fast solver ...", flush=True)
            fast_args = ["--method", "fast", *args, "--save", str(fast_npz)]
            tight = with_cvxpy and V * m <= 200_000
            fast = run_worker(MODULE, fast_args + (["--tight-reference"] if tight else []), timeout=3600)
            if "untimed_seconds" in fast:  # the reference solve is not part of the measurement
                fast["wall_seconds"] -= fast["untimed_seconds"]
            fast.update(case=f"{V} x {m}", method="fast (ADMM+AA, certified)")
            row_c = None
            if with_cvxpy:
                print(
                    f"[{time.strftime('%H:%M:%S')}] {kind} {V}x{m}: cvxpy/SCS (timeout {timeout}s) ...",
                    flush=True,
                )
                row_c = run_worker(
                    MODULE,
                    ["--method", "cvxpy", *args, "--save", str(cvx_npz)],
                    timeout=timeout,
                    mem_limit_gb=CVXPY_MEM_GB,
                )
                row_c.update(case=f"{V} x {m}", method="cvxpy/SCS", kind=kind, V=V, m=m)
                if row_c["status"] == "ok" and fast["status"] == "ok" and cvx_npz.exists():
                    fast["agreement"] = compare(make_support(kind, V, m, seed), fast_npz, cvx_npz)
                    # the cvxpy point measured against the fast solver's certified lower bound
                    row_c["rel_gap"] = fast["agreement"]["cvxpy_gap_vs_fast_dual"]
                    row_c["rel_diff_to_tight"] = fast["agreement"].get("cvxpy_rel_diff_to_tight")
                if fast.get("status") == "ok" and row_c["status"] == "ok":
                    # compute seconds (cvxpy: canonicalization + SCS; fast: whole solve incl. certificate)
                    fast["speedup"] = row_c["seconds"] / fast["seconds"]
                    fast["speedup_wall"] = row_c["wall_seconds"] / fast["wall_seconds"]
                    fast["speedup_is_lower_bound"] = False
                elif fast.get("status") == "ok":  # cvxpy hit the timeout: wall-clock ratio is a lower bound
                    fast["speedup"] = row_c["wall_seconds"] / fast["wall_seconds"]
                    fast["speedup_is_lower_bound"] = True
            else:
                fast["baseline_note"] = (
                    f"{V} x {m}: cvxpy/SCS not run -- its semidefinite block has size V+m = {V + m}; "
                    "at V+m = 2500 (500 x 2000) it did not finish within the timeout above."
                )
            rows.append(fast)
            if row_c is not None:
                rows.append(row_c)
            print(format_table(rows), flush=True)
    return {
        "benchmark": "lmm",
        "group": group,
        "machine": machine_info(),
        "rows": rows,
        "targets": {
            "agreement_normalized": 1e-3,
            "agreement_nuclear": 1e-4,
            "violation": 1e-6,
            "speedup_200x1000": 20,
            "big_seconds": 1800,
        },
    }


def format_table(rows: list[dict]) -> str:
    headers = [
        "size V x m",
        "supports",
        "method",
        "solve s",
        "wall s",
        "peak RSS MB",
        "nuclear norm",
        "rel. gap",
        "violation",
        "iters",
        "agreement (norm. / nuc.)",
        "dist. to tight ref.",
        "speed-up",
        "load",
    ]
    body = []
    for r in rows:
        ok = r.get("status") == "ok"
        agree = r.get("agreement")
        sp_ = r.get("speedup")
        body.append(
            [
                r.get("case", ""),
                r.get("kind", ""),
                r.get("method", ""),
                fmt(r.get("seconds"), ".1f"),
                fmt(r.get("wall_seconds"), ".1f") + ("" if ok else f" ({r.get('status')})"),
                fmt(r.get("peak_rss_mb"), ".0f"),
                fmt(r.get("nuclear_norm"), ".8g"),
                fmt(r.get("rel_gap"), ".1e"),
                fmt(r.get("max_violation"), ".1e"),
                fmt(r.get("iterations"), "d"),
                f"{agree['rel_diff_normalized']:.1e} / {agree['rel_nuclear_diff']:.1e}" if agree else "-",
                fmt(r.get("rel_diff_to_tight"), ".1e"),
                ("> " if r.get("speedup_is_lower_bound") else "") + fmt(sp_, ".1f") + ("x" if sp_ else ""),
                fmt(r.get("loadavg_before", [None])[0], ".1f"),
            ]
        )
    return markdown_table(headers, body)


def main(argv: list[str] | None = None) -> None:
    argv = dispatch_worker(argv, worker)
    if argv is None:
        return
    p = argparse.ArgumentParser(prog=MODULE, description=__doc__.splitlines()[0])
    p.add_argument("--group", choices=sorted(GROUPS), default="small")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    payload = run_group(a.group, a.seed)
    path = write_json(f"lmm_{a.group}.json", payload)
    print(format_table(payload["rows"]))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
