"""The runner's speed-ups and progress lines for the GPU machine (:mod:`ntputils.gpu.speed`), checked
on the CPU: the compiled forward is the same function, a compiler failure falls back to eager, the TF32 hook
adds no graph break, and the progress file reports the true step of a resumed training."""

from __future__ import annotations

import json

import pytest
import torch

from ntputils.gpu.speed import (
    compile_forward,
    compile_on_first_training_call,
    compile_probe,
    speed_up,
    tf32_while_training,
    watch_training,
)
from ntputils.training.loop import train_ntp
from ntputils.training.models.transformer import NTPTransformer, TransformerConfig


class Counting:
    """A torch.compile backend that runs each captured graph as is and counts the graphs."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm, example_inputs):  # noqa: ANN001 - the backend signature
        self.graphs += 1
        return gm.forward


def failing(gm, example_inputs):  # noqa: ANN001 - the backend signature
    raise RuntimeError("no compiler on this machine")


def tiny() -> tuple[type, NTPTransformer, torch.Tensor]:
    class Model(NTPTransformer):
        """A subclass per test: compiling its forward leaves the transformer's alone."""

    torch.manual_seed(0)
    model = Model(TransformerConfig(vocab_size=8, d=16, n_layers=2, n_heads=2, max_len=4))
    return Model, model, torch.randint(0, 8, (5, 4))


def test_compiled_forward_gives_the_eager_logits_and_restores():
    cls, model, x = tiny()
    eager = model(x).detach()
    backend = Counting()
    restore = compile_forward(cls, None, backend)
    try:
        with torch.no_grad():
            model(x)
        model.eval()
        model(x)
        assert backend.graphs == 0  # analysis calls (no grad, eval mode) stay eager
        model.train()
        torch.testing.assert_close(model(x).detach(), eager)
        assert backend.graphs >= 1
    finally:
        restore()
    assert "forward" not in cls.__dict__  # the subclass inherits the eager forward again


def test_tf32_hook_adds_no_graph_break(monkeypatch):
    matmul, conv = torch.backends.cuda.matmul, torch.backends.cudnn.conv
    before = matmul.fp32_precision, conv.fp32_precision
    counts = []
    for with_hook in (False, True):
        cls, model, x = tiny()
        monkeypatch.setattr(torch.cuda, "is_available", lambda on=with_hook: on)
        handle = tf32_while_training()
        monkeypatch.undo()  # the compiler must see this machine as it is
        backend = Counting()
        restore = compile_forward(cls, None, backend)
        try:
            model(x).sum().backward()
            counts.append(backend.graphs)
        finally:
            restore()
            if handle is not None:
                handle.remove()
            matmul.fp32_precision, conv.fp32_precision = before
    assert counts[1] == counts[0]


def test_a_compiler_failure_falls_back_to_eager_and_says_so():
    cls, model, x = tiny()
    eager = model(x).detach()
    said: list[str] = []
    restore = compile_forward(cls, None, failing, say=said.append)
    try:
        torch.testing.assert_close(model(x).detach(), eager)
        torch.testing.assert_close(model(x).detach(), eager)  # eager from now on, said once
        assert len(said) == 1 and "torch.compile failed" in said[0] and "no compiler" in said[0]
        with pytest.raises(ValueError, match="tokens must be"):
            model(torch.zeros(3, dtype=torch.long))  # a real error of the model is not swallowed
    finally:
        restore()


def test_compile_probe_reports_success_and_failure():
    backend = Counting()
    assert compile_probe(None, device="cpu", backend=backend) is None and backend.graphs >= 1
    error = compile_probe(None, device="cpu", backend=failing)
    assert error is not None and "no compiler" in error


def test_the_named_class_is_compiled_at_its_first_training_call_only():
    cls, model, x = tiny()
    eager = model(x).detach()
    backend, said = Counting(), []
    handle = compile_on_first_training_call(("Other", cls.__name__), None, backend, say=said.append)
    try:
        model.eval()
        model(x)
        assert "forward" not in cls.__dict__  # eval mode: nothing compiled
        model.train()
        torch.testing.assert_close(model(x).detach(), eager)  # this call still eager
        assert backend.graphs == 0 and "forward" in cls.__dict__
        torch.testing.assert_close(model(x).detach(), eager)  # compiled from here on
        assert backend.graphs >= 1
        assert said == [f"[device_speed] {cls.__name__}.forward compiled (default mode)"]
        assert "forward" not in NTPTransformer.__dict__  # the base class keeps its eager forward
    finally:
        handle.remove()
        del cls.forward


def test_speed_up_applies_nothing_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert speed_up("tf32", "reduce-overhead", say=lambda text: None) == {"tf32": False, "compiled": None}


def test_progress_reports_the_true_step_of_a_resumed_training(tmp_path):
    torch.manual_seed(0)
    tokens = torch.randint(0, 6, (40, 3))
    labels = torch.randint(0, 6, (40,))

    def train(stop_after: int | None, progress) -> None:  # noqa: ANN001
        torch.manual_seed(1)  # the same initial weights: the resumed run is the same run
        model = NTPTransformer(TransformerConfig(vocab_size=6, d=8, n_layers=1, n_heads=2, max_len=3))
        handle = watch_training(12, progress, every_s=0.0, say=lines.append)
        try:
            train_ntp(model, (tokens, labels), steps=12, lr=1e-2, batch_size=8, seed=0, progress=False,
                      checkpoint_dir=tmp_path / "run", checkpoint_every=5, stop_after=stop_after, resume=True)
        finally:
            handle.remove()

    lines: list[str] = []
    train(5, None)
    assert lines[0].startswith("[train] step 1 of 12:") and lines[-1].startswith("[train] step 5 of 12:")
    lines.clear()
    progress = tmp_path / "progress.json"
    train(None, progress)
    assert lines[0].startswith("[train] step 6 of 12:") and "over the last 1;" in lines[0]
    final = json.loads(progress.read_text())
    assert final["step"] == 12 and final["steps"] == 12 and final["seconds_left"] == 0
