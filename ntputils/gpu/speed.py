"""Speed and progress of a training on the GPU machine, applied by the runner to a device point's child.

Everything here lives in the runner, outside every fingerprint (:func:`ntputils.book.fingerprint.is_runner`):
an edit of ``ntputils.training`` would mark every committed table that trained a network STALE, while their
CPU numbers do not depend on any of it. Three pieces, each switched on by the bundle's plan:

* **TF32 while training** (``precision: "tf32"``): a global forward pre-hook lets cuBLAS and cuDNN use TF32
  while a module runs in training mode (the forward and the backward that follows it) and switches it off
  for a module in eval mode, so the evaluation of the loss, the norms and the embedding snapshots (the
  geometry) stays in float32, the loss in float64 as the training loop computes it.
* **A compiled forward** (``compile: "reduce-overhead"``): ``torch.compile`` of the transformer's forward
  (``NTPModel.forward``, named in :data:`COMPILED_CLASSES`) in the mode named, whose CUDA graphs replace
  the ~1,400 kernel launches of an eager step. Measured on the H200 on 2026-11-28 (issue #46): the eager
  TF32 step of a07's paper model took more than 17.6 ms (42,000 steps were not done after 739 s of
  training over two commands), so the launches, not the arithmetic (2.8-4.7 ms), bound it. A small
  attention block is compiled and trained for two steps first (:func:`compile_probe`); if that fails the run
  stays eager and the log says why. A failure at the real model's first compiled forward also falls back to
  eager.
* **Progress** (always): a global optimizer step hook prints the step reached (the optimizer's own step
  count, so a resumed run reports the true step), the milliseconds a step over the last interval and the
  seconds left at that rate, at steps 1, 10, 100 and 1,000 and then every ``every_s`` seconds, and writes the
  same into ``progress.json`` beside the point's log: what the summary reports for a point the deadline
  stopped.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROGRESS_ENV = "NTPBOOK_PROGRESS"  # the progress.json a device point's child writes
EARLY_STEPS = (1, 10, 100, 1000)  # steps reported at once (compile and warm-up show in their times)
#: the model classes whose forward is compiled (named, not imported: the runner imports no math layer)
COMPILED_CLASSES = ("NTPTransformer",)


def set_tf32(on: bool) -> None:
    """TF32 for float32 matrix products and convolutions on or off: torch's ``fp32_precision`` settings
    (torch >= 2.9; mixing them with the legacy ``allow_tf32`` flags is an error there), else the flags."""
    import torch

    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    if hasattr(matmul, "fp32_precision") and hasattr(cudnn, "conv"):
        matmul.fp32_precision = cudnn.conv.fp32_precision = "tf32" if on else "ieee"
    else:  # pragma: no cover - older torch
        matmul.allow_tf32 = cudnn.allow_tf32 = on


def tf32_while_training() -> Any:
    """On CUDA: the global forward pre-hook above; returns its handle, or ``None`` without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    state = {"on": None}

    def hook(module: torch.nn.Module, args: Any) -> None:
        if module.training is not state["on"]:
            state["on"] = module.training
            set_tf32(module.training)

    return torch.nn.modules.module.register_module_forward_pre_hook(hook)


def compile_forward(cls: type, mode: str | None, backend: str | Callable = "inductor",
                    say: Callable[[str], None] = print, fallback: bool = True) -> Callable[[], None]:
    """Replace ``cls.forward`` by ``torch.compile`` of it for training calls (training mode, gradients on;
    every other call stays eager); with ``fallback`` the first failure of the compiled forward (compilation
    happens at the first call) is said and the eager forward used from then on, else it is raised. Returns
    a function that restores the eager forward."""
    import torch

    eager = cls.__dict__.get("forward")
    base = cls.forward
    compiled = torch.compile(base, mode=mode, backend=backend, dynamic=False)
    chosen = {"fn": compiled}

    def forward(self: Any, x: Any) -> Any:
        # only training steps: an analysis call (eval mode or no grad) runs eagerly, so no output of a CUDA
        # graph replay is held while a later replay overwrites it (chunked read-outs keep several)
        if chosen["fn"] is base or not (self.training and torch.is_grad_enabled()):
            return base(self, x)
        try:
            return compiled(self, x)
        except Exception as err:  # noqa: BLE001 - any compiler failure: the eager forward is the same math
            if not fallback:
                raise
            base(self, x)  # a real error of the model (bad input) is raised by the eager forward too
            say(f"[device_speed] torch.compile failed ({type(err).__name__}: {str(err)[:300]}); the run "
                "goes on eagerly")
            chosen["fn"] = base
            return base(self, x)

    cls.forward = forward

    def restore() -> None:
        if eager is None:
            del cls.forward
        else:
            cls.forward = eager

    return restore


def compile_probe(mode: str | None, device: str = "cuda", backend: str | Callable = "inductor") -> str | None:
    """Compile a small attention block's forward (the operations of the book's transformer: matrix products,
    RMS norm, causal attention, SiLU) and train it two steps on ``device``; ``None`` when that worked, else
    the error (then the point runs eagerly). Built here from torch alone: the runner imports no math layer."""
    import torch
    from torch import nn

    class Probe(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.qkv = nn.Embedding(8, 32), nn.Linear(32, 96, bias=False)
            self.norm, self.out = nn.RMSNorm(32), nn.Linear(32, 8, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.emb(x)
            q, k, v = self.qkv(self.norm(h)).view(*x.shape, 3, 2, 16).unbind(2)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.out(nn.functional.silu(h + a.transpose(1, 2).reshape(*x.shape, 32))[:, -1])

    try:
        restore = compile_forward(Probe, mode, backend, fallback=False)
        try:
            model = Probe().to(device)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            x = torch.randint(0, 8, (16, 4), device=device)
            for _ in range(2):
                loss = model(x).logsumexp(dim=1).mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            if not torch.isfinite(loss):
                return "the probe's loss is not finite"
        finally:
            restore()
    except Exception as err:  # noqa: BLE001 - any failure means: stay eager
        return f"{type(err).__name__}: {str(err)[:300]}"
    return None


def compile_on_first_training_call(class_names: tuple[str, ...], mode: str | None,
                                   backend: str | Callable = "inductor",
                                   say: Callable[[str], None] = print) -> Any:
    """A global forward pre-hook that compiles the forward of a model class named in ``class_names`` (by
    name: the runner imports no math layer) the first time one of its modules runs in training mode. That
    first call still runs eagerly (``Module.__call__`` looked ``forward`` up before its hooks); every later
    call of the class is compiled. Returns the hook's handle."""
    import torch

    done: set[type] = set()

    def hook(module: torch.nn.Module, args: Any) -> None:
        cls = type(module)
        if cls.__name__ in class_names and module.training and cls not in done:  # the name first: cheap
            done.add(cls)
            compile_forward(cls, mode, backend, say=say)
            say(f"[device_speed] {cls.__name__}.forward compiled ({mode or 'default'} mode)")

    return torch.nn.modules.module.register_module_forward_pre_hook(hook)


def speed_up(precision: str, compile_mode: str | None, say: Callable[[str], None] = print) -> dict[str, Any]:
    """What the plan asks, on CUDA only: TF32 while training, the compiled transformer forward (after a
    probe). Returns what was applied (``{"tf32": bool, "compiled": mode or None, "compile_error": ...}``)."""
    import torch

    applied: dict[str, Any] = {"tf32": False, "compiled": None}
    if not torch.cuda.is_available():
        return applied
    if precision == "tf32":
        applied["tf32"] = tf32_while_training() is not None
    if compile_mode:
        mode = None if compile_mode == "default" else compile_mode
        t0 = time.perf_counter()
        error = compile_probe(mode)
        say(f"[device_speed] compile probe ({compile_mode}): "
            f"{'ok' if error is None else 'failed: ' + error} in {time.perf_counter() - t0:.0f} s")
        if error is None:
            compile_on_first_training_call(COMPILED_CLASSES, mode, say=say)
            applied["compiled"] = compile_mode
        else:
            applied["compile_error"] = error
    return applied


def watch_training(total_steps: int | None, progress: Path | None, every_s: float = 30.0,
                   say: Callable[[str], None] = print) -> Any:
    """Register the global optimizer step hook described above; returns its handle."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    last: dict[str, Any] = {"t": time.perf_counter(), "step": None, "wall": time.perf_counter(), "calls": 0}

    def hook(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        last["calls"] += 1
        now = time.perf_counter()
        if last["calls"] not in EARLY_STEPS and now - last["wall"] < every_s:
            return
        step = optimizer_step(optimizer) or last["calls"]
        if last["step"] is None:  # the first report: a resumed run starts at its checkpoint's step
            last["step"] = step - last["calls"]
        done = step - last["step"]
        ms = 1e3 * (now - last["t"]) / done if done > 0 else float("nan")
        left = (total_steps - step) * ms / 1e3 if total_steps and done > 0 else None
        say(f"[train] step {step:,}{f' of {total_steps:,}' if total_steps else ''}: {ms:.1f} ms a step over "
            f"the last {done:,}" + (f"; {left:.0f} s to go at this rate" if left is not None else ""))
        if progress is not None:
            tmp = progress.with_suffix(".tmp")
            tmp.write_text(json.dumps({"step": step, "steps": total_steps, "ms_per_step": round(ms, 3),
                                       "seconds_left": None if left is None else round(left, 1),
                                       "at": time.time()}))
            os.replace(tmp, progress)
        last.update(t=now, step=step, wall=now)

    return register_optimizer_step_post_hook(hook)


def optimizer_step(optimizer: Any) -> int | None:
    """The step count an optimizer keeps for its first parameter (Adam's ``state["step"]``: restored with a
    checkpoint), or ``None`` (SGD without momentum keeps none)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            step = optimizer.state.get(p, {}).get("step")
            if step is not None:
                return int(step)
    return None
