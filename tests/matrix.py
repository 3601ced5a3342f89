"""Run the fast test suite under the machine conditions that break fragile numerical tests.

``make test-matrix`` (not part of ``make test``) runs ``pytest -m "not slow and not slurm"`` once per
condition below, each in a fresh process with its own environment, and prints one line per condition with
its pass/fail counts and time; it exits 1 if any condition has a failure or an error.

Conditions: thread counts of OpenMP and OpenBLAS (sums computed in another order), three test
orders (pytest-randomly with fixed seeds, so a failure can be replayed with the same seed), the
solver tests repeated three times in one process (state leaking between runs), and other OpenBLAS
kernels (``OPENBLAS_CORETYPE``: other SIMD paths, i.e. the rounding of another CPU).

Usage: ``python tests/matrix.py [--only NAME ...] [--report PATH]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = [sys.executable, "-m", "pytest", "-q", "-m", "not slow and not slurm", "-p", "no:cacheprovider"]
FIXED_ORDER = ["-p", "no:randomly"]
SOLVER_TESTS = [
    "tests/test_lmm_fast.py", "tests/test_geometry.py", "tests/test_spectral.py", "tests/test_ufm.py",
    "tests/test_paper_a_theory.py", "tests/test_dynamics.py",
]
#: name -> (extra environment, extra pytest arguments). Environment values of None unset the name.
CONDITIONS: dict[str, tuple[dict[str, str | None], list[str]]] = {
    "default (file order)": ({}, FIXED_ORDER),
    "OMP_NUM_THREADS=1": ({"OMP_NUM_THREADS": "1"}, FIXED_ORDER),
    "OMP_NUM_THREADS=2": ({"OMP_NUM_THREADS": "2"}, FIXED_ORDER),
    "OPENBLAS_NUM_THREADS=1": ({"OPENBLAS_NUM_THREADS": "1"}, FIXED_ORDER),
    "random order, seed 1": ({}, ["-p", "randomly", "--randomly-seed=1"]),
    "random order, seed 2": ({}, ["-p", "randomly", "--randomly-seed=2"]),
    "random order, seed 3": ({}, ["-p", "randomly", "--randomly-seed=3"]),
    "solver tests x3 (pytest-repeat)": ({}, [*FIXED_ORDER, "--count", "3", *SOLVER_TESTS]),
    "OPENBLAS_CORETYPE unset": ({"OPENBLAS_CORETYPE": None}, FIXED_ORDER),
    "OPENBLAS_CORETYPE=Haswell": ({"OPENBLAS_CORETYPE": "Haswell"}, FIXED_ORDER),
    "OPENBLAS_CORETYPE=Zen": ({"OPENBLAS_CORETYPE": "Zen"}, FIXED_ORDER),
    "OPENBLAS_CORETYPE=Prescott": ({"OPENBLAS_CORETYPE": "Prescott"}, FIXED_ORDER),
}


def _counts(junit: Path) -> dict[str, int]:
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    keys = ("tests", "failures", "errors", "skipped")
    total, failures, errors, skipped = (int(suite.get(k, 0)) for k in keys)
    return {"passed": total - failures - errors - skipped, "failed": failures, "errors": errors,
            "skipped": skipped}


def run(name: str, env_extra: dict[str, str | None], args: list[str], out: Path) -> dict:
    env = dict(os.environ)
    for k, v in env_extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    junit = out / (name.replace(" ", "_").replace("=", "-").replace(",", "").replace("(", "").replace(")", "")
                   + ".xml")
    log = junit.with_suffix(".log")
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        rc = subprocess.call([*BASE, *args, f"--junitxml={junit}"], cwd=ROOT, env=env, stdout=fh,
                             stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - t0
    counts = _counts(junit) if junit.exists() else {"passed": 0, "failed": 0, "errors": 1, "skipped": 0}
    return {"name": name, "rc": rc, "seconds": seconds, "log": str(log.relative_to(ROOT)), **counts}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="run only the conditions whose name contains one of these")
    ap.add_argument("--report", default=".cache/test-matrix/report.md", help="markdown table written here")
    opts = ap.parse_args(argv)
    out = ROOT / ".cache" / "test-matrix"
    out.mkdir(parents=True, exist_ok=True)
    chosen = {k: v for k, v in CONDITIONS.items() if not opts.only or any(s in k for s in opts.only)}
    if not chosen:
        ap.error(f"no condition matches {opts.only}; conditions: {list(CONDITIONS)}")
    rows = []
    for name, (env_extra, args) in chosen.items():
        print(f"== {name}", flush=True)
        row = run(name, env_extra, args, out)
        rows.append(row)
        verdict = "ok" if row["rc"] == 0 else "FAILED"
        print(f"   {verdict}: {row['passed']} passed, {row['failed']} failed, {row['errors']} errors, "
              f"{row['skipped']} skipped in {row['seconds']:.0f} s  (log: {row['log']})", flush=True)
    lines = ["| condition | passed | failed | errors | skipped | seconds |", "|---|---|---|---|---|---|"]
    cols = ("name", "passed", "failed", "errors", "skipped")
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + f" | {r['seconds']:.0f} |" for r in rows]
    report = ROOT / opts.report
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    bad = [r["name"] for r in rows if r["rc"] != 0]
    if bad:
        print(f"test matrix FAILED under: {', '.join(bad)}", file=sys.stderr)
        return 1
    print(f"test matrix passed: {len(rows)} conditions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
