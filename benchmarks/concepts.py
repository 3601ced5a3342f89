"""Benchmark: top-k SVD of S~ = (I - 11^T/V) S without densifying (``python -m benchmarks.concepts``).

Each method runs in its own subprocess (peak RSS per method, hard timeout). The baseline is what
one would write without the operator trick: densify ``S~`` and call LAPACK (``numpy.linalg.svd``);
it is run where the dense matrix fits, and the speed-up of the sparse methods is measured against
it in the same run. Accuracy: the largest relative residual ``max(||S~ v - s u||, ||S~^T u - s v||)
/ s_1`` over the k triplets, and, where the dense SVD exists, the largest deviation of singular
values (relative to ``s_1``) and of the sign-fixed singular vectors. Sign stability: the sparse
solve is repeated with another random start (seed 1) and the sign-fixed vectors compared.
Results: ``benchmarks/results/concepts_<group>.json``.

Usage::

    python -m benchmarks.concepts --group small
    nohup python -m benchmarks.concepts --group big > benchmarks/results/concepts_big.log 2>&1 &
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

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

MODULE = "benchmarks.concepts"

# (V, m, k, methods); the first method listed is the baseline when it is "dense"
GROUPS = {
    "tiny": [(300, 3000, 16, ["dense", "arpack", "randomized"])],
    "small": [(2000, 20_000, 64, ["dense", "arpack", "randomized"])],
    "big": [(50_000, 500_000, 64, ["arpack"])],
}


def make_support(V: int, m: int, seed: int = 0):
    """Zipf-like supports (:func:`ntputils.data.zipf_supports`): ~10 nonzeros per column at V = 50k."""
    from ntputils.data import zipf_supports

    return zipf_supports(V, m, max_support=50, exponent=1.1, seed=seed)


def worker(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog=f"{MODULE} worker")
    p.add_argument("--method", required=True)
    p.add_argument("--V", type=int, required=True)
    p.add_argument("--m", type=int, required=True)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--save", default=None)
    p.add_argument("--sign-check", action="store_true")
    a = p.parse_args(argv)
    from ntputils.geometry.spectral import centered_operator, centered_topk_svd, svd_residuals

    t0 = time.perf_counter()
    S = make_support(a.V, a.m)
    gen_seconds = time.perf_counter() - t0
    U, s, Vt, info = centered_topk_svd(S, a.k, method=a.method, seed=0, return_info=True)
    out = {
        "method": a.method,
        "V": a.V,
        "m": a.m,
        "k": a.k,
        "nnz": int(S.nnz),
        "nnz_per_column": S.nnz / a.m,
        "seconds": info["seconds"],
        "iterations": info["iterations"],
        "max_residual": info["max_residual"],
        "support_seconds": gen_seconds,
        "sigma_top": s[:5].tolist(),
        "sigma_k": float(s[-1]),
    }
    out["peak_rss_mb"] = peak_rss_mb()  # before the optional second solve and residual work
    if a.sign_check:
        U1, s1, Vt1 = centered_topk_svd(S, a.k, method=a.method, seed=1)
        out["sign_check_max_abs_diff_U"] = float(np.max(np.abs(U1 - U)))
        out["sign_check_max_abs_diff_Vt"] = float(np.max(np.abs(Vt1 - Vt)))
        out["sign_check_max_rel_diff_sigma"] = float(np.max(np.abs(s1 - s)) / s[0])
        out["residual_seed1"] = float(np.max(svd_residuals(centered_operator(S), U1, s1, Vt1)))
    if a.save:
        np.savez(a.save, U=U, s=s, Vt=Vt)
    print(json.dumps(out, default=float), flush=True)


def run_group(group: str) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for V, m, k, methods in GROUPS[group]:
            base = None
            for method in methods:
                npz = Path(tmp) / f"{method}_{V}_{m}.npz"
                args = ["--method", method, "--V", str(V), "--m", str(m), "--k", str(k)]
                if V * m <= 5e7:
                    args += ["--save", str(npz)]
                if method != "dense":
                    args += ["--sign-check"]
                print(f"[{time.strftime('%H:%M:%S')}] {V}x{m} k={k}: {method} ...", flush=True)
                r = run_worker(MODULE, args, timeout=3600, mem_limit_gb=16)
                r.update(case=f"{V} x {m}", k=k, method=method)
                if method == "dense" and r["status"] == "ok":
                    base = (r, npz)
                elif base is not None and r["status"] == "ok":
                    r["speedup"] = base[0]["wall_seconds"] / r["wall_seconds"]
                    r["speedup_compute"] = base[0]["seconds"] / r["seconds"]
                    ref, cur = np.load(base[1]), np.load(npz)
                    r["vs_dense"] = {
                        "sigma": float(np.max(np.abs(cur["s"] - ref["s"])) / ref["s"][0]),
                        "U": float(np.max(np.abs(cur["U"] - ref["U"]))),
                        "Vt": float(np.max(np.abs(cur["Vt"] - ref["Vt"]))),
                    }
                if "dense" not in methods:
                    r["baseline_note"] = (
                        f"dense baseline not run: S~ would be a dense {V} x {m} float64 matrix "
                        f"({V * m * 8 / 1e9:.0f} GB)"
                    )
                rows.append(r)
                print(format_table(rows), flush=True)
    return {
        "benchmark": "concepts",
        "group": group,
        "machine": machine_info(),
        "rows": rows,
        "targets": {"seconds_50000x500000": 300, "memory_gb": 4, "dense_agreement": 1e-8},
    }


def format_table(rows: list[dict]) -> str:
    headers = [
        "size V x m",
        "nnz/col",
        "k",
        "method",
        "wall s",
        "SVD s",
        "peak RSS MB",
        "max residual",
        "vs dense (sigma / U / Vt)",
        "sign-stable (max diff)",
        "speed-up SVD (wall)",
        "load",
    ]
    body = []
    for r in rows:
        ok = r.get("status") == "ok"
        vd = r.get("vs_dense")
        sc = r.get("sign_check_max_abs_diff_U")
        body.append(
            [
                r.get("case", ""),
                fmt(r.get("nnz_per_column"), ".1f"),
                fmt(r.get("k"), "d"),
                r.get("method", ""),
                fmt(r.get("wall_seconds"), ".1f") + ("" if ok else f" ({r.get('status')})"),
                fmt(r.get("seconds"), ".1f"),
                fmt(r.get("peak_rss_mb"), ".0f"),
                fmt(r.get("max_residual"), ".1e"),
                f"{vd['sigma']:.1e} / {vd['U']:.1e} / {vd['Vt']:.1e}" if vd else "-",
                fmt(max(sc, r.get("sign_check_max_abs_diff_Vt", 0.0)), ".1e") if sc is not None else "-",
                f"{r['speedup_compute']:.0f}x ({r['speedup']:.0f}x)" if r.get("speedup") else "-",
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
    a = p.parse_args(argv)
    payload = run_group(a.group)
    path = write_json(f"concepts_{a.group}.json", payload)
    print(format_table(payload["rows"]))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
