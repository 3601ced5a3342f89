"""Milliseconds per training step: the project's loop (``train_ntp``) against a bare PyTorch loop.

Every network chapter's model (a06's transformer and LSTM on Synthetic and Simplified TinyStories, a07's
transformer, b05's transformer, b06's CNN) is built with the chapter's ``ntputils`` constructor at the
chapter's cpu-profile size (and a06/a07/b06 at the paper profile's values) and trained on random data of
the chapter's shapes (contexts, vocabularies, batch, images; the real data sets are not loaded: the values
do not change the cost of a step). Two loops train it with the same batch, loss, optimizer and learning
rate:

* **ours** -- :func:`ntputils.training.loop.train_ntp` (``train_classifier`` for the CNN), as the chapter
  calls it, no checkpoints, no progress bar, logging/snapshots every ``LOG_EVERY``-th step after the
  warm-up (the other steps are the loop's hot path; the logged steps give the cost of one log, from which
  the per-step cost at the chapter's own cadence is computed);
* **bare** -- forward, the same soft-label CE, ``backward``, ``optimizer.step``, ``zero_grad``.

A forward pre-hook on the model stamps process CPU time and wall time at every training forward, so one
step is the span from one training forward to the next, whatever the loop does in between (lr schedule,
batch indexing, logging). Warm-up steps are dropped; medians are reported. Each (model, threads, loop)
runs in a fresh process (``python -m benchmarks.train_step worker ...``), ours and bare back to back in
alternating order, at 1 and 2 torch threads. CPU time is the process's (both threads at 2 threads).

    python -m benchmarks.train_step [--specs a06-tf-sts b06-cnn] [--threads 1 2] [--budget 10]

Writes ``benchmarks/results/train_step.json``; the Performance page renders it (``benchmarks.report``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import dispatch_worker, machine_info, markdown_table, run_worker, write_json

GOAL = 1.1  # ours / bare CPU ms per step, at most
LOG_EVERY = 5  # ours: log + snapshot every 5th measured step
WARMUP = 5
MAX_STEPS = 3000


@dataclass(frozen=True)
class Spec:
    """One chapter model: how the chapter builds and trains it, and the shapes of its data."""

    chapter: str
    size: str  # "cpu" or "paper" profile
    kind: str  # transformer | lstm | cnn
    model: dict
    m: int  # contexts (images for the CNN)
    V: int  # next tokens (classes)
    lengths: dict = field(default_factory=dict)  # context length -> number of contexts
    context_vocab: int = 0
    support: int = 3  # next tokens per context in the random soft labels
    batch_size: int | None = None
    optimizer: str = "adamw"
    lr: float = 1e-3
    weight_decay: float = 0.0
    schedule: str = "constant"
    milestones: tuple = ()
    gamma: float = 1.0
    chapter_steps: int = 1000
    chapter_logs: int | str = 30  # log_steps of the chapter: a count (log-spaced) or "all"
    snapshot_contexts: int | None = None  # the chapter snapshots this many contexts (None: all)
    image: tuple = ()  # CNN input shape (channels, height, width)
    class_sizes: tuple = ()
    note: str = ""
    min_steps: int = 10
    warmup: int = WARMUP
    threads: tuple = (1, 2)  # thread counts to measure (a07's paper model: 1 only, to time-box it)


A06 = dict(chapter="a06", lr=2e-3, chapter_steps=1000, chapter_logs=30)
A06_TF = dict(d=128, n_layers=4, n_heads=6, pos_encoding="none")
A06_LSTM = dict(d=128, n_layers=2)
SYN = dict(m=16, V=30, context_vocab=37, lengths={5: 16})  # paper_a_synthetic(): m, V, context ids, length 5
STS = dict(m=371, V=106, context_vocab=110, lengths={5: 371})  # paper_a_tinystories()
A07_DATA = dict(V=64, context_vocab=64, batch_size=512, schedule="cosine", chapter_logs=12,
                snapshot_contexts=1100)
SPECS: dict[str, Spec] = {
    "a06-tf-synthetic": Spec(kind="transformer", size="cpu", model=A06_TF, **SYN, **A06),
    "a06-tf-sts": Spec(kind="transformer", size="cpu", model=A06_TF, **STS, **{**A06, "chapter_steps": 200}),
    "a06-tf-sts-paper": Spec(
        chapter="a06", size="paper", kind="transformer", model=A06_TF, **STS, lr=1e-4, weight_decay=1e-6,
        schedule="multistep", milestones=(5000, 10000, 15000, 20000, 25000), gamma=0.4, chapter_steps=30000,
        chapter_logs=60, note="the paper profile keeps the cpu profile's sizes; it changes steps, lr, "
        "weight decay and schedule"),
    "a06-lstm-synthetic": Spec(kind="lstm", size="cpu", model=A06_LSTM, **SYN, **{**A06, "lr": 3e-3}),
    "a06-lstm-sts": Spec(kind="lstm", size="cpu", model=A06_LSTM, **STS,
                         **{**A06, "lr": 3e-3, "chapter_steps": 300}),
    "a07-tf": Spec(chapter="a07", size="cpu", kind="transformer", m=4586, lengths={6: 4586},
                   model=dict(d=64, n_layers=2, n_heads=4, multiple_of=32, pos_encoding="none", max_len=6),
                   lr=3e-3, chapter_steps=1500, **A07_DATA),
    "a07-tf-paper": Spec(chapter="a07", size="paper", kind="transformer", m=32658, lengths={6: 32658},
                         model=dict(d=512, n_layers=12, n_heads=6, multiple_of=32, pos_encoding="none",
                                    max_len=6),
                         lr=5e-4, weight_decay=1e-6, chapter_steps=42000, **{**A07_DATA, "chapter_logs": 40},
                         min_steps=3, warmup=1, threads=(1,),
                         note="3 steps after 1 warm-up, 1 thread only: one step takes seconds"),
    "b05-tf": Spec(chapter="b05", size="cpu", kind="transformer", m=17, V=16, context_vocab=49,
                   lengths={6: 5, 7: 7, 8: 2, 9: 3}, model=dict(d=128, n_layers=2, n_heads=4), lr=1e-4,
                   weight_decay=1e-6, chapter_steps=200, chapter_logs="all",
                   note="the paper profile keeps the sizes (400 steps, 5 seeds)"),
    "b06-cnn": Spec(chapter="b06", size="cpu", kind="cnn", m=220, V=4,
                    model=dict(channels=(16, 32, 32), grid=4), image=(1, 28, 28),
                    class_sizes=(100, 100, 10, 10), optimizer="sgd", lr=0.05,
                    chapter_steps=150, chapter_logs="all"),
    "b06-cnn-paper": Spec(chapter="b06", size="paper", kind="cnn", m=220, V=4,
                          model=dict(channels=(32, 64, 64), grid=4), image=(1, 28, 28),
                          class_sizes=(100, 100, 10, 10), optimizer="sgd", lr=0.05, chapter_steps=400,
                          chapter_logs="all"),
    # for the unit test only (not in the default run)
    "tiny": Spec(chapter="test", size="tiny", kind="transformer", m=8, V=5, context_vocab=6, lengths={3: 8},
                 model=dict(d=8, n_layers=1, n_heads=2), chapter_steps=10, chapter_logs="all", min_steps=4,
                 warmup=2),
}
DEFAULT_SPECS = [k for k in SPECS if k != "tiny"]


# ---------------------------------------------------------------------------------------------
# the worker: one model, one loop, one thread count, in its own process
# ---------------------------------------------------------------------------------------------
def make_data(spec: Spec):
    """Random inputs and targets of the chapter's shapes: token contexts (left-padded with the model's
    pad id) and soft labels on ``support`` random next tokens, or images and class labels."""
    import torch

    gen = torch.Generator().manual_seed(0)
    if spec.kind == "cnn":
        x = torch.randn((spec.m, *spec.image), generator=gen)
        y = torch.cat([torch.full((n,), c, dtype=torch.long) for c, n in enumerate(spec.class_sizes)])
        return x, y
    pad = spec.context_vocab  # TokenModel.pad_id = context_vocab_size
    T = max(spec.lengths)
    rows = []
    for length, count in sorted(spec.lengths.items()):
        ids = torch.randint(0, spec.context_vocab, (count, length), generator=gen)
        rows.append(torch.cat([torch.full((count, T - length), pad, dtype=torch.long), ids], dim=1))
    x = torch.cat(rows)
    targets = torch.zeros(spec.m, spec.V, dtype=torch.float64)
    for j in range(spec.m):
        z = torch.randperm(spec.V, generator=gen)[:spec.support]
        targets[j, z] = torch.rand(len(z), generator=gen, dtype=torch.float64) + 0.1
    return x, targets / targets.sum(1, keepdim=True)


def build(spec: Spec):
    from ntputils.training.models import build_model

    if spec.kind == "cnn":
        return build_model("cnn", seed=0, n_classes=spec.V, **spec.model)
    return build_model(spec.kind, seed=0, vocab_size=spec.V, context_vocab_size=spec.context_vocab,
                       **spec.model)


def chapter_log_count(spec: Spec) -> int:
    """Evaluations (log steps, step 0 included) the chapter makes over its ``chapter_steps``."""
    from ntputils.training.history import log_spaced_steps

    if spec.chapter_logs == "all":
        return spec.chapter_steps + 1
    return len(log_spaced_steps(spec.chapter_steps, int(spec.chapter_logs)))


def bare_loop(model, x, q, spec: Spec, steps: int) -> None:
    """Forward, the soft-label CE of ``train_ntp`` (mean objective), backward, step, zero_grad -- nothing
    else. Mini-batches (a07) walk a fresh random permutation per epoch, like ``train_ntp``."""
    import torch

    opt = make_optimizer(model, spec)
    m, B = x.shape[0], spec.batch_size
    perm = None
    model.train()
    for step in range(steps):
        if B is not None and B < m:
            per_epoch = math.ceil(m / B)
            epoch, pos = divmod(step, per_epoch)
            if pos == 0:
                perm = torch.randperm(m)
            idx = perm[pos * B:(pos + 1) * B]
            xb, qb = x[idx], q[idx]
        else:
            xb, qb = x, q
        bare_step(model, opt, xb, qb, scale=m / xb.shape[0])


def make_optimizer(model, spec: Spec, foreach: bool | None = None):
    """The chapter's optimizer (AdamW or SGD) over ``model``'s parameters; ``foreach``: torch's default
    (``None``), or the multi-tensor update forced on (CUDA's default) or off."""
    import torch

    cls = torch.optim.AdamW if spec.optimizer == "adamw" else torch.optim.SGD
    return cls(model.parameters(), lr=spec.lr, weight_decay=spec.weight_decay, foreach=foreach)


def bare_step(model, opt, xb, qb, scale: float = 1.0) -> None:
    """One bare training step: forward, the soft-label CE of ``train_ntp`` (x ``scale``: the mean objective
    over mini-batches), backward, step, zero_grad."""
    import torch

    loss = -(qb * torch.log_softmax(model(xb), dim=1)).sum()
    (loss * scale if scale != 1.0 else loss).backward()  # full batch: no multiply
    opt.step()
    opt.zero_grad(set_to_none=True)


def ours_loop(model, x, targets, spec: Spec, steps: int, threads: int, log_steps: list[int]) -> None:
    """The chapter's call of the project's loop (``train_classifier`` for the CNN), no checkpoints."""
    from ntputils.training.loop import train_classifier, train_ntp

    common = dict(steps=steps, lr=spec.lr, weight_decay=spec.weight_decay, optimizer=spec.optimizer,
                  schedule=spec.schedule, device="cpu", seed=0, log_steps=log_steps, progress=False,
                  num_threads=threads)
    if spec.kind == "cnn":
        train_classifier(model, x, targets, **common)
        return
    snap = None if spec.snapshot_contexts is None else list(range(min(spec.snapshot_contexts, spec.m)))
    train_ntp(model, (x, targets), milestones=spec.milestones, gamma=spec.gamma, batch_size=spec.batch_size,
              snapshot_contexts=snap, **common)


def _summary(values: list[float]) -> dict:
    if not values:
        return {"median": None, "p25": None, "p75": None, "n": 0}
    qs = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
    return {"median": statistics.median(values), "p25": qs[0], "p75": qs[2], "n": len(values)}


def measure(name: str, loop: str, threads: int, budget: float, steps: int | None = None) -> dict:
    """Time ``loop`` ("ours" | "bare") on spec ``name`` at ``threads`` torch threads: per-step CPU and
    wall milliseconds (median, quartiles) after the warm-up, the set-up before the first step and, for
    ours, the cost of one logged step."""
    import copy

    import torch

    spec = SPECS[name]
    torch.set_num_threads(threads)
    load_start = os.getloadavg()
    x, targets = make_data(spec)
    q = (F_one_hot(targets, spec.V) if spec.kind == "cnn" else targets).float()
    model = build(spec)
    params = sum(p.numel() for p in model.parameters())
    if steps is None:  # calibrate: two bare steps on a copy (the first is a warm-up), then fill the budget
        probe = copy.deepcopy(model)
        bare_loop(probe, x, q, spec, 1)
        w0 = time.perf_counter()
        bare_loop(probe, x, q, spec, 1)
        per_step = time.perf_counter() - w0
        del probe
        steps = max(spec.min_steps, min(MAX_STEPS, int(budget / max(per_step, 1e-6))))
    total = spec.warmup + steps + 1  # the last step only closes the span of the one before it
    stamps: list[tuple[float, float]] = []

    def stamp(module, args):
        if module.training:
            stamps.append((time.process_time(), time.perf_counter()))

    model.register_forward_pre_hook(stamp)
    logged = set(range(spec.warmup + LOG_EVERY, total + 1, LOG_EVERY)) if loop == "ours" else set()
    c0, w0 = time.process_time(), time.perf_counter()
    if loop == "ours":
        ours_loop(model, x, targets, spec, total, threads, sorted(logged))
    elif loop == "bare":
        bare_loop(model, x, q, spec, total)
    else:
        raise ValueError(f"unknown loop {loop!r}")
    c1, w1 = time.process_time(), time.perf_counter()
    if len(stamps) != total:
        raise RuntimeError(f"expected {total} training forwards, saw {len(stamps)}")
    hot_cpu, hot_wall, log_cpu, log_wall = [], [], [], []
    for step in range(spec.warmup + 1, total):  # step s (1-based) spans stamps[s-1] -> stamps[s]
        cpu = (stamps[step][0] - stamps[step - 1][0]) * 1e3
        wall = (stamps[step][1] - stamps[step - 1][1]) * 1e3
        (log_cpu if step in logged else hot_cpu).append(cpu)
        (log_wall if step in logged else hot_wall).append(wall)
    out = {
        "spec": name, "chapter": spec.chapter, "size": spec.size, "kind": spec.kind, "loop": loop,
        "threads": threads, "torch_threads": torch.get_num_threads(), "parameters": params,
        "warmup": spec.warmup, "steps": steps, "cpu_ms": _summary(hot_cpu), "wall_ms": _summary(hot_wall),
        "setup_cpu_s": stamps[0][0] - c0, "setup_wall_s": stamps[0][1] - w0,
        "total_cpu_s": c1 - c0, "total_wall_s": w1 - w0,
        "loadavg_start": load_start, "loadavg_end": os.getloadavg(),
    }
    if logged:
        out["logged_cpu_ms"] = _summary(log_cpu)
        out["logged_wall_ms"] = _summary(log_wall)
    return out


def F_one_hot(labels, V: int):
    import torch.nn.functional as F

    return F.one_hot(labels, V).double()


def profile(name: str, loop: str, threads: int, steps: int, top: int = 40) -> dict:
    """cProfile ``steps`` hot steps of ``loop`` (no logging), from the first training forward after the
    warm-up to the last one (set-up excluded): the functions with the most own CPU time, in ms per step,
    and the per-step total."""
    import cProfile
    import pstats

    import torch

    spec = SPECS[name]
    torch.set_num_threads(threads)
    x, targets = make_data(spec)
    q = (F_one_hot(targets, spec.V) if spec.kind == "cnn" else targets).float()
    model = build(spec)
    prof = cProfile.Profile(time.process_time)
    seen = [0]

    def switch(module, args):
        if module.training:
            seen[0] += 1
            if seen[0] == spec.warmup + 1:
                prof.enable()
            elif seen[0] == spec.warmup + steps + 1:
                prof.disable()

    model.register_forward_pre_hook(switch)
    total = spec.warmup + steps + 1
    if loop == "ours":
        ours_loop(model, x, targets, spec, total, threads, [])
    else:
        bare_loop(model, x, q, spec, total)
    stats = pstats.Stats(prof)
    entries = []
    for (file, line, func), (_, calls, tottime, cumtime, _) in stats.stats.items():
        where = func if file == "~" else f"{Path(file).name}:{line}({func})"
        entries.append({"function": where, "calls_per_step": calls / steps,
                        "own_ms_per_step": tottime / steps * 1e3, "cum_ms_per_step": cumtime / steps * 1e3})
    entries.sort(key=lambda e: -e["own_ms_per_step"])
    return {"spec": name, "loop": loop, "threads": threads, "steps": steps,
            "total_ms_per_step": stats.total_tt / steps * 1e3, "top": entries[:top]}


def deterministic_ab(name: str, steps: int, reps: int = 3) -> dict:
    """The bare loop with and without ``train_ntp``'s deterministic mode
    (``ntputils.training.loop.deterministic``), alternating, ``reps`` times, 1 thread: median CPU ms per
    step of each repetition."""
    import torch

    from ntputils.training.loop import deterministic

    spec = SPECS[name]
    torch.set_num_threads(1)
    x, targets = make_data(spec)
    q = (F_one_hot(targets, spec.V) if spec.kind == "cnn" else targets).float()
    out: dict = {"spec": name, "steps": steps, "plain": [], "deterministic": []}
    for _ in range(reps):
        for det in (False, True):
            model, stamps = build(spec), []
            model.register_forward_pre_hook(lambda mod, args, st=stamps: st.append(time.process_time()))
            with deterministic(det):
                bare_loop(model, x, q, spec, spec.warmup + steps + 1)
            later = stamps[spec.warmup + 1:]
            spans = [(b - a) * 1e3 for a, b in zip(stamps[spec.warmup:], later, strict=False)]
            out["deterministic" if det else "plain"].append(statistics.median(spans))
    return out


def worker(args: list[str]) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", required=True, choices=sorted(SPECS))
    ap.add_argument("--loop", required=True, choices=["ours", "bare"])
    ap.add_argument("--profile", action="store_true", help="cProfile --steps hot steps instead of timing")
    ap.add_argument("--deterministic-ab", action="store_true",
                    help="bare loop with and without the deterministic mode instead of timing")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--steps", type=int, default=None)
    a = ap.parse_args(args)
    if a.deterministic_ab:
        print(json.dumps(deterministic_ab(a.spec, a.steps or 20)), flush=True)
        return
    if a.profile:
        print(json.dumps(profile(a.spec, a.loop, a.threads, a.steps or 20)), flush=True)
        return
    print(json.dumps(measure(a.spec, a.loop, a.threads, a.budget, a.steps)), flush=True)


# ---------------------------------------------------------------------------------------------
# the driver and the page's table
# ---------------------------------------------------------------------------------------------
def combine(name: str, threads: int, ours: dict, bare: dict) -> dict:
    """One row of the JSON: both loops' medians, the ratio ours / bare and ours at the chapter's cadence."""
    spec = SPECS[name]
    row = {"spec": name, "chapter": spec.chapter, "size": spec.size, "kind": spec.kind, "threads": threads,
           "note": spec.note, "ours": ours, "bare": bare,
           "status": "ok" if ours.get("status") == bare.get("status") == "ok" else "failed"}
    if row["status"] != "ok":
        return row
    row["parameters"] = ours["parameters"]
    for unit in ("cpu", "wall"):
        o, b = ours[f"{unit}_ms"]["median"], bare[f"{unit}_ms"]["median"]
        row[f"ours_{unit}_ms"], row[f"bare_{unit}_ms"] = o, b
        row[f"ratio_{unit}"] = o / b if b else None
        logged = ours.get(f"logged_{unit}_ms", {}).get("median")
        if logged is not None:  # hot step + the extra cost of a log, at the chapter's share of logged steps
            share = chapter_log_count(spec) / spec.chapter_steps
            row[f"log_{unit}_ms"] = max(logged - o, 0.0)
            row[f"ours_at_cadence_{unit}_ms"] = o + share * row[f"log_{unit}_ms"]
    row["chapter_logs"] = chapter_log_count(spec)
    row["chapter_steps"] = spec.chapter_steps
    row["meets_goal"] = row["ratio_cpu"] is not None and row["ratio_cpu"] <= GOAL
    row["loadavg"] = [ours["loadavg_before"][0], bare["loadavg_before"][0]]
    return row


def format_table(rows: list[dict]) -> str:
    """One row per (model, threads): the CPU ms of both loops and their ratio against the goal first, then
    the wall ms, the cost of one log+snapshot and ours at the chapter's cadence (the steps measured and the
    load are in the JSON file)."""
    def ms(x):
        return "-" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:.3g}")

    headers = ["model (profile)", "params", "threads", "CPU ms: ours / bare", "ours / bare", "goal",
               "wall ms: ours / bare", "one log + snapshot, CPU ms", "ours at the chapter's cadence, CPU ms"]
    out = []
    for r in rows:
        name = f"`{r['spec']}` ({r['size']})"
        if r.get("status") != "ok":
            out.append([name, "-", str(r["threads"]), "failed", *["-"] * 5])
            continue
        out.append([
            name, f"{r['parameters']:,}", str(r["threads"]),
            f"{ms(r['ours_cpu_ms'])} / {ms(r['bare_cpu_ms'])}",
            f"{r['ratio_cpu']:.2f}", "met" if r["meets_goal"] else "**not met**",
            f"{ms(r['ours_wall_ms'])} / {ms(r['bare_wall_ms'])}", ms(r.get("log_cpu_ms")),
            ms(r.get("ours_at_cadence_cpu_ms")),
        ])
    return markdown_table(headers, out)


def add_profiles(out: str, steps: int = 30) -> None:
    """Profile ours and bare (fresh processes, 1 thread) for every spec that misses the goal at 1 thread."""
    from benchmarks.common import RESULTS_DIR

    path = RESULTS_DIR / out
    payload = json.loads(path.read_text())
    missed = [r["spec"] for r in payload["rows"]
              if r.get("status") == "ok" and r["threads"] == 1 and not r["meets_goal"]]
    profiles = {}
    for name in missed:
        args = ["--spec", name, "--profile", "--steps", str(steps)]
        profiles[name] = {loop: run_worker("benchmarks.train_step", [*args, "--loop", loop], timeout=600)
                          for loop in ("ours", "bare")}
        print(name, {k: v.get("total_ms_per_step") for k, v in profiles[name].items()}, flush=True)
        ab = run_worker("benchmarks.train_step", ["--spec", name, "--loop", "bare", "--deterministic-ab",
                                                  "--steps", str(steps)], timeout=600)
        profiles[name]["deterministic_ab"] = ab
        print(name, ab.get("plain"), ab.get("deterministic"), flush=True)
    payload.pop("created", None)
    write_json(out, {**payload, "profiles": profiles})


def function_name(entry: str) -> str:
    """A cProfile entry as a reader names it: ``<method 'run_backward' of 'torch._C._EngineBase' objects>``
    -> ``_EngineBase.run_backward``, ``<built-in method torch.lstm>`` -> ``torch.lstm``,
    ``adam.py:347(_single_tensor_adam)`` -> ``_single_tensor_adam (adam.py)``."""
    if m := re.fullmatch(r"<method '([^']+)' of '([^']+)' objects>", entry):
        return f"{m.group(2).rsplit('.', 1)[-1]}.{m.group(1)}"
    if m := re.fullmatch(r"<built-in method ([^>]+)>", entry):
        name = m.group(1).replace("torch._C._nn.", "torch.nn.functional.")
        return name.replace("torch._ops.", "torch.ops.")
    if m := re.fullmatch(r"(.+?):\d+\((.+)\)", entry):
        return f"{m.group(2)} ({m.group(1)})"
    return entry


def profile_lines(payload: dict, top: int = 6) -> list[str]:
    """Where the time of a model that misses the goal goes: per model a table of ours' top functions (own
    CPU ms a step) beside bare's, and the functions where ours spends the most over bare."""
    out = []
    for name, loops in payload.get("profiles", {}).items():
        if any(loops[k].get("status") != "ok" for k in ("ours", "bare")):
            continue
        o, b = loops["ours"], loops["bare"]
        bare_of = {e["function"]: e["own_ms_per_step"] for e in b["top"]}
        excess = sorted(o["top"], key=lambda e: bare_of.get(e["function"], 0.0) - e["own_ms_per_step"])
        shown = list(dict.fromkeys([e["function"] for e in o["top"][:top]]
                                   + [e["function"] for e in excess[:3]
                                      if e["own_ms_per_step"] - bare_of.get(e["function"], 0.0) >= 0.005]))
        own = {e["function"]: e["own_ms_per_step"] for e in o["top"]}
        rows = [[f"`{function_name(f)}`", f"{own[f]:.2f}", f"{bare_of.get(f, 0.0):.2f}",
                 f"{own[f] - bare_of.get(f, 0.0):+.2f}"] for f in shown]
        intro = (f"`{name}`: cProfile of {o['steps']} hot steps, 1 thread; profiled total "
                 f"{o['total_ms_per_step']:.2f} (ours) vs {b['total_ms_per_step']:.2f} (bare) CPU ms a step."
                 + _ab_line(loops.get("deterministic_ab")))
        headers = ["function", "ours, ms a step", "bare, ms a step", "ours - bare"]
        out += [intro, "", markdown_table(headers, rows), ""]
    return out


def _ab_line(ab: dict | None) -> str:
    if not ab or ab.get("status") != "ok":
        return ""
    plain, det = statistics.median(ab["plain"]), statistics.median(ab["deterministic"])
    runs = ", ".join(f"{p:.1f}/{d:.1f}" for p, d in zip(ab["plain"], ab["deterministic"], strict=True))
    return (f" The bare loop inside `train_ntp`'s deterministic mode (`torch.use_deterministic_algorithms`), "
            f"alternating with the plain one in one process, 1 thread: {det:.1f} vs {plain:.1f} CPU ms per "
            f"step ({det / plain:.2f}x; repetitions plain/deterministic: {runs}).")


def main(argv: list[str] | None = None) -> None:
    argv = dispatch_worker(argv, worker)
    if argv is None:
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--specs", nargs="+", default=DEFAULT_SPECS, choices=sorted(SPECS))
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--budget", type=float, default=5.0, help="wall seconds of measured steps per loop")
    ap.add_argument("--out", default="train_step.json")
    ap.add_argument("--profile-missed", action="store_true",
                    help="profile (cProfile, 1 thread) both loops of every model that misses the goal at 1 "
                         "thread in the existing JSON and add the profiles to it")
    a = ap.parse_args(argv)
    if a.profile_missed:
        add_profiles(a.out)
        return
    machine = machine_info()
    rows = []
    for i, name in enumerate(a.specs):
        for j, threads in enumerate(t for t in a.threads if t in SPECS[name].threads):
            order = ("ours", "bare") if (i + j) % 2 == 0 else ("bare", "ours")
            res = {}
            for loop in order:
                res[loop] = run_worker("benchmarks.train_step",
                                       ["--spec", name, "--loop", loop, "--threads", str(threads),
                                        "--budget", str(a.budget)], timeout=a.budget * 6 + 180)
            row = combine(name, threads, res["ours"], res["bare"])
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k not in ("ours", "bare")}), flush=True)
    machine["loadavg_end"] = os.getloadavg()
    path = write_json(a.out, {"machine": machine, "goal": GOAL, "log_every": LOG_EVERY, "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
