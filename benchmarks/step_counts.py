"""FLOPs and kernel launches of one training step of each network chapter's model: the counts behind the
GPU wall estimates of the paper profiles (:func:`ntputils.book.paper_cost.wall_estimate`).

For each model of :data:`benchmarks.train_step.SPECS` (the chapter's own ``ntputils`` constructor at its
sizes, random data of its shapes) and a06's NTP-UFM column, one step of the bare loop
(:func:`benchmarks.train_step.bare_loop`: forward, the soft-label CE, backward, the optimizer step) runs on
the CPU after one warm-up step, under

* ``torch.utils.flop_counter.FlopCounterMode``: the step's FLOPs (matrix products and convolutions; it
  counts none inside ``aten::lstm``, so an LSTM's cells are added in closed form, :func:`lstm_cell_flops`);
* a dispatch mode that counts the ATen operations that are not views: on a GPU each of them launches about
  one kernel, and a view launches none. The optimizer runs its multi-tensor (``foreach``) update, as
  PyTorch does by default on CUDA, so a step's launch count does not grow with the number of tensors.

The count is an estimate of a CUDA step's launches (an operation may launch two kernels, or a copy none).
a07's paper model, counted the same way, gives the figure the a07 estimate uses, so the launch time
measured on the GPU machine for a07 (a lower bound, the Performance page) carries over to the other models.

    python -m benchmarks.step_counts [--specs a06-tf-sts-paper ...]

Writes ``benchmarks/results/step_counts.json``; ``make device-bundle`` prints the estimates made from it.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

from benchmarks.common import machine_info, write_json
from benchmarks.train_step import SPECS, F_one_hot, Spec, bare_step, build, make_data, make_optimizer

#: the models a paper profile trains, counted by default: a06 (TF and LSTM on both datasets, the NTP-UFM
#: column), a07's paper transformer, b05's transformer (its paper profile keeps the sizes), b06's paper CNN
DEFAULT = ("a06-tf-synthetic", "a06-tf-sts-paper", "a06-lstm-synthetic", "a06-lstm-sts", "ufm-synthetic",
           "ufm-sts", "a07-tf-paper", "b05-tf", "b06-cnn-paper")
#: a06's NTP-UFM column (``ntputils.training.ufm.train``: W (V x d) and H (d x m) in float64, AdamW)
UFM = {"ufm-synthetic": {"m": 16, "V": 30, "d": 128}, "ufm-sts": {"m": 371, "V": 106, "d": 128}}


class LaunchCounter:
    """A ``TorchDispatchMode`` that counts the ATen operations dispatched that are not views."""

    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if not func.is_view:
                    counter.launches += 1
                counter.ops += 1
                return func(*args, **(kwargs or {}))

        self.mode, self.launches, self.ops = Mode(), 0, 0


def ufm_step(name: str):
    """A step function of a06's NTP-UFM column on random soft labels of ``name``'s shapes."""
    import torch

    shape = UFM[name]
    gen = torch.Generator().manual_seed(0)
    W = torch.nn.Parameter(0.1 * torch.randn(shape["V"], shape["d"], generator=gen, dtype=torch.float64))
    H = torch.nn.Parameter(0.1 * torch.randn(shape["d"], shape["m"], generator=gen, dtype=torch.float64))
    q = torch.softmax(torch.randn(shape["m"], shape["V"], generator=gen, dtype=torch.float64), dim=1)
    opt = torch.optim.AdamW([W, H], lr=1e-4, weight_decay=1e-6, foreach=True)

    def step() -> None:
        loss = -(q * torch.log_softmax((W @ H).T, dim=1)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step, W.numel() + H.numel()


def lstm_cell_flops(spec: Spec) -> float:
    r"""FLOPs of the LSTM cells in one training step: per layer and token the four gates' products with the
    input and the hidden state, $2\cdot4(d_{in}+d)d$ forward, twice that backward (inputs of width $d$:
    ``NTPLSTM`` embeds to $d$); FlopCounterMode sees only the model's other products."""
    d, layers = spec.model["d"], spec.model["n_layers"]
    tokens = spec.m * max(spec.lengths)  # left-padded to the longest context
    return 3 * 2 * 4 * (d + d) * d * layers * tokens


def spec_step(spec: Spec):
    """A step function of :func:`benchmarks.train_step.bare_step` for ``spec`` (its first batch), with the
    optimizer's multi-tensor update, as on CUDA."""
    x, targets = make_data(spec)
    q = (F_one_hot(targets, spec.V) if spec.kind == "cnn" else targets).float()
    model = build(spec)
    model.train()
    opt = make_optimizer(model, spec, foreach=True)
    B = spec.batch_size if spec.batch_size and spec.batch_size < x.shape[0] else x.shape[0]
    xb, qb = x[:B], q[:B]
    return (lambda: bare_step(model, opt, xb, qb)), sum(p.numel() for p in model.parameters())


def count(name: str) -> dict[str, Any]:
    """FLOPs, launches and ATen operations of one training step of model ``name`` (after a warm-up)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    step, params = ufm_step(name) if name in UFM else spec_step(SPECS[name])
    step()  # warm-up: the optimizer's state is created at its first step
    counter = LaunchCounter()
    flops = FlopCounterMode(display=False)
    t0 = time.perf_counter()
    with flops, counter.mode:
        step()
    total = float(flops.get_total_flops())
    if name not in UFM and SPECS[name].kind == "lstm":
        total += lstm_cell_flops(SPECS[name])
    return {"flop_per_step": total, "launches_per_step": counter.launches,
            "aten_ops_per_step": counter.ops, "parameters": params,
            "counted_in_s": round(time.perf_counter() - t0, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.step_counts", description=__doc__.split("\n")[0])
    ap.add_argument("--specs", nargs="+", default=list(DEFAULT), choices=sorted([*SPECS, *UFM]))
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    out = {}
    for name in args.specs:
        out[name] = count(name)
        c = out[name]
        print(f"{name:20s} {c['flop_per_step']:.3g} FLOP, {c['launches_per_step']:,} launches "
              f"({c['aten_ops_per_step']:,} ATen ops) a step, {c['parameters']:,} parameters")
    path = write_json("step_counts.json", {
        "machine": machine_info(), "torch": torch.__version__, "counts": out,
        "note": "one step after one warm-up; optimizer foreach, as on CUDA"})
    print(f"wrote {path}")
    return 0 if all(math.isfinite(c["flop_per_step"]) for c in out.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
