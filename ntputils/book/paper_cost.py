"""What a chapter's paper profile costs, and the guard that keeps it off a CPU by accident.

The GPU wall estimate of a paper point is counted, not guessed: FLOPs and kernel launches of one training
step (``python -m benchmarks.step_counts``) against an H100/H200's rates; the CPU cost comes from the same
count or from the point time the chapter's committed ``<prefix>-paper`` table recorded. ``make
device-bundle`` prints the estimates (:mod:`ntputils.gpu.bundle`), the Performance page shows them, and
:func:`cpu_paper_problem` refuses a network chapter's paper profile on a machine without CUDA (build and
sweep alike) unless ``--allow-cpu``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ntputils.committed import duration, read_committed, remake_cost
from ntputils.paths import REPO_ROOT


@dataclass(frozen=True)
class PaperCost:
    """What one training of a paper point costs: FLOPs and kernel launches per optimizer step (eager, and
    with the forward and backward compiled into CUDA graphs: ``None`` where not estimated), steps, and the
    measured seconds of one step on this project's CPU (one thread; ``None``: not measured)."""

    flop_per_step: float
    launches_per_step: int
    compiled_launches_per_step: int | None
    steps: int
    cpu_step_s: tuple[float, float] | None
    source: str


#: where ``python -m benchmarks.step_counts`` records each network model's FLOPs and launches a step
STEP_COUNTS = REPO_ROOT / "benchmarks" / "results" / "step_counts.json"
#: a07: the FLOPs of the 12 x 512 model at batch 512 and the launches of one eager step, as
#: ``benchmarks.step_counts`` counts them (a test holds them to its file); compiled: two graph replays, ~30
#: foreach AdamW kernels, the loss, the batch gather, two host syncs (an estimate); book/performance.md:
#: 5.3-7.5 s a step on one thread of the 2-core machine
PAPER_COSTS = {"a07": PaperCost(6.96e11, 1125, 100, 42_000, (5.3, 7.5), "12 layers, d=512, batch 512")}
#: MEASURED on the H200 on 2026-11-28: a07's eager TF32 step took more than this (42,000 steps not done
#: after 739 s of training in two commands); a step that is launch-bound gives the seconds a launch
A07_EAGER_STEP_S = 739.0 / 42_000
#: GPU rates used by the estimate: dense peak x an efficiency range for matrices of a few thousand rows
#: (H100 and H200 share the arithmetic). The seconds a launch are measured, not assumed: a07's step over its
#: counted launches (at least 15.6 us each, against the 5-8 us assumed before that run); the upper end is
#: the lower bound x 1.6.
GPU = {"fp32_flops": (67e12 * 0.5, 67e12 * 0.7), "tf32_flops": (495e12 * 0.3, 495e12 * 0.5),
       "launch_s": (A07_EAGER_STEP_S / PAPER_COSTS["a07"].launches_per_step,
                    1.6 * A07_EAGER_STEP_S / PAPER_COSTS["a07"].launches_per_step),
       "eval_and_setup_s": (30.0, 60.0), "compile_s": (60.0, 150.0)}
#: the settings the estimate prints, in order: (label, precision, compiled)
SETTINGS = (("fp32", "fp32", False), ("tf32", "tf32", False), ("tf32 + CUDA graphs", "tf32", True))
#: paper points estimated from ``benchmarks.step_counts``: chapter -> (point label -> the models it trains
#: one after another, steps each). a06: one point per dataset, its transformer, LSTM and NTP-UFM column,
#: the paper's 30,000 steps each
COUNTED_POINTS = {"a06": ({"dataset=Synthetic": ("a06-tf-synthetic", "a06-lstm-synthetic", "ufm-synthetic"),
                           "dataset=STS": ("a06-tf-sts-paper", "a06-lstm-sts", "ufm-sts")}, 30_000)}


def step_counts(path: Path = STEP_COUNTS) -> dict[str, dict[str, Any]]:
    """Model name -> its recorded FLOPs and launches a step (``{}`` when the file is missing or garbled)."""
    try:
        return dict(json.loads(path.read_text())["counts"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def point_costs(prefix: str) -> dict[str, tuple[PaperCost, ...]]:
    """Point label -> the trainings of chapter ``prefix``'s paper point(s) (``{}``: no count at hand)."""
    if prefix in PAPER_COSTS:
        return {"": (PAPER_COSTS[prefix],)}
    points, steps = COUNTED_POINTS.get(prefix, ({}, 0))
    counts = step_counts()
    return {label: tuple(PaperCost(counts[m]["flop_per_step"], counts[m]["launches_per_step"], None, steps,
                                   None, m) for m in models)
            for label, models in points.items() if all(m in counts for m in models)}


def estimated_settings(parts: tuple[PaperCost, ...]) -> list[tuple[str, str, bool]]:
    """The :data:`SETTINGS` a point's trainings can be estimated in (compiled: only with every training's
    compiled launch count)."""
    return [s for s in SETTINGS if not s[2] or all(p.compiled_launches_per_step is not None for p in parts)]


def wall_estimate(cost: PaperCost | tuple[PaperCost, ...], precision: str = "tf32",
                  compiled: bool = False) -> dict[str, Any]:
    """A point's wall on one H100/H200 as a (low, high) range in seconds: per step of each training the larger
    of the compute (FLOPs / rate) and the CPU's launch time (launches x seconds a launch: PyTorch launches
    asynchronously, so the two overlap), times its steps, summed over the point's trainings, plus
    evaluation and set-up (and compilation). ``compiled`` needs every training's compiled launch count."""
    parts = cost if isinstance(cost, tuple) else (cost,)
    rate = GPU["tf32_flops" if precision == "tf32" else "fp32_flops"]
    compute, launch, wall = [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]
    for part in parts:
        launches = part.compiled_launches_per_step if compiled else part.launches_per_step
        if launches is None:
            raise ValueError(f"{part.source}: no compiled launch count to estimate from")
        for i, j in ((0, 1), (1, 0)):  # low: the fast rate; high: the slow one
            c, n = part.flop_per_step / rate[j], launches * GPU["launch_s"][i]
            compute[i], launch[i] = compute[i] + c, launch[i] + n
            wall[i] += part.steps * max(c, n)
    extra = tuple(GPU["eval_and_setup_s"][i] + (GPU["compile_s"][i] if compiled else 0.0) for i in (0, 1))
    cpu = [p.cpu_step_s for p in parts]
    return {"precision": precision, "compiled": compiled,
            "compute_ms": tuple(round(1e3 * c, 1) for c in compute),
            "launch_ms": tuple(round(1e3 * c, 1) for c in launch),
            "wall_s": (round(wall[0] + extra[0]), round(wall[1] + extra[1])),
            "cpu_h": (None if None in cpu else
                      tuple(round(sum(p.steps * c[i] for p, c in zip(parts, cpu, strict=True)) / 3600, 1)
                            for i in (0, 1)))}


def estimate_lines(prefix: str) -> list[str]:
    """The printed wall estimate of chapter ``prefix``'s paper point(s) (one line per setting)."""
    points = point_costs(prefix)
    if not points:
        return [f"{prefix}: no FLOP and launch count recorded; on this project's CPU: "
                f"{cpu_estimate_text(prefix)}"]
    out = []
    for label, parts in points.items():
        what = " + ".join(f"{p.source} ({p.steps:,} steps, {p.flop_per_step:.3g} FLOP and "
                          f"~{p.launches_per_step:,} kernel launches a step eager"
                          + (f", ~{p.compiled_launches_per_step} compiled" if p.compiled_launches_per_step
                             else "") + ")" for p in parts)
        out.append(f"{prefix} paper point{f' {label}' if label else ''}: {what}:")
        for name, precision, compiled in estimated_settings(parts):
            e = wall_estimate(parts, precision, compiled)
            step = "a step" if len(parts) == 1 else f"a step of each of its {len(parts)} trainings, summed"
            out.append(f"  {name}: compute {e['compute_ms'][0]}-{e['compute_ms'][1]} ms, launches "
                       f"{e['launch_ms'][0]}-{e['launch_ms'][1]} ms {step} -> "
                       f"{e['wall_s'][0]}-{e['wall_s'][1]} s on one H100/H200")
    out.append(f"  on this project's CPU: {cpu_estimate_text(prefix)}")
    return out


def cpu_estimate_text(prefix: str, root: Path | None = None) -> str:
    """What chapter ``prefix``'s paper profile costs on this project's CPU, in words: from its FLOP count
    (:data:`PAPER_COSTS`), else from the point time its committed ``<prefix>-paper`` table recorded,
    trainings it reloaded included (:func:`~ntputils.committed.remake_cost`)."""
    if prefix in PAPER_COSTS and PAPER_COSTS[prefix].cpu_step_s:
        lo, hi = wall_estimate(PAPER_COSTS[prefix])["cpu_h"]
        return f"about {lo:g}-{hi:g} h ({PAPER_COSTS[prefix].steps:,} steps on one thread)"
    name = f"{prefix}-paper"
    try:
        table, prov = read_committed(name, root)
    except (FileNotFoundError, ValueError):  # none committed, or unreadable (UnreadableTable)
        return f"unknown (no readable committed table {name} to time it by)"
    cost = remake_cost(table)
    if cost is None:
        return f"unknown (the committed table {name} records no seconds)"
    return (f"about {duration(cost['seconds'])} (the point time {name} recorded on "
            f"{prov.get('machine', 'an unnamed machine')}, trainings included)")


#: the chapters that train networks: their paper profile is a GPU job
NETWORK_CHAPTERS = ("a06", "a07", "b05", "b06")


def cpu_paper_problem(points: list[tuple[str, dict[str, Any]]], allow_cpu: bool) -> str | None:
    """Why a run of ``points`` (chapter prefix, resolved parameters) must not start: a network chapter at
    the paper profile, on a device that is not CUDA, on a machine where torch sees no CUDA device (``None``
    when it may, or with ``allow_cpu``)."""
    hit = sorted({short for short, resolved in points if short in NETWORK_CHAPTERS
                  and resolved.get("profile") == "paper"
                  and not str(resolved.get("device")).startswith("cuda")})
    if allow_cpu or not hit:
        return None
    import torch

    if torch.cuda.is_available():
        return None
    costs = "; ".join(f"{short}: {cpu_estimate_text(short)}" for short in hit)
    return (f"the paper profile of {', '.join(hit)} trains the papers' networks, and torch "
            f"{torch.__version__} sees no CUDA device here; on this CPU that is {costs}. Pass --allow-cpu to "
            "start it anyway, or run it on the GPU machine: make device-bundle prints the command")
