"""Tests of ntputils.training.loop: objective, convergence, determinism, checkpoint/resume, snapshots,
classifier."""

import errno
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ntputils import tracing
from ntputils.data import from_counts
from ntputils.data.corpora.cache import CacheWarning
from ntputils.training import loop
from ntputils.training.loop import (
    CHECKPOINT_NAME,
    TrainingCodeChanged,
    lr_factor,
    train_classifier,
    train_ntp,
    training_code,
    training_set,
)
from ntputils.training.models import build_model, imbalanced_digits, left_pad

V, CTX_VOCAB, M = 8, 6, 20



@pytest.fixture(scope="module")
def data():
    """20 distinct 4-token contexts with random supports and counts 1..3 (a tiny NTPData)."""
    rng = np.random.default_rng(0)
    counts = (rng.random((V, M)) < 0.3) * rng.integers(1, 4, (V, M))
    counts[rng.integers(0, V, M), np.arange(M)] += 1
    contexts = set()
    while len(contexts) < M:
        contexts.add(tuple(int(t) for t in rng.integers(0, CTX_VOCAB, 4)))
    return from_counts(counts, sorted(contexts))


TRANSFORMER = dict(kind="transformer", vocab_size=V, context_vocab_size=CTX_VOCAB, d=16, n_layers=2,
                   n_heads=2)


def model(kind="transformer", seed=0):
    if kind == "lstm":
        return build_model("lstm", vocab_size=V, context_vocab_size=CTX_VOCAB, d=16, seed=seed)
    return build_model(**TRANSFORMER, seed=seed)


FAST = dict(lr=1e-2, schedule="constant", progress=False)


def params(m):
    return [p.detach().clone() for p in m.parameters()]


def assert_same_history(a, b):
    assert a.steps == b.steps and a.snap_steps == b.snap_steps
    assert a.scalars == b.scalars
    for x, y in zip(a.W + a.H, b.W + b.H, strict=True):
        np.testing.assert_array_equal(x, y)


def test_logged_ce_is_the_authors_sample_summed_ce_over_n(data):
    net = model()
    hist = train_ntp(net, data, steps=0, progress=False)
    # expand the counts into the n (context, next token) samples of the authors' code
    z, j = data.counts.nonzero()
    reps = data.counts[z, j]
    tokens = left_pad(data.contexts, net.pad_id)[np.repeat(j, reps)]
    targets = torch.as_tensor(np.repeat(z, reps)).long()
    with torch.no_grad():
        summed = F.cross_entropy(net(tokens).double(), targets, reduction="sum").item()
    assert hist.scalars["ce"][0] == pytest.approx(summed / data.n, rel=1e-6)
    assert hist.meta["entropy"] == pytest.approx(data.entropy)


@pytest.mark.parametrize("kind", ["transformer", "lstm"])
def test_training_drives_ce_to_the_entropy(data, kind):
    hist = train_ntp(model(kind), data, steps=250, log_steps=10, **FAST)
    gap = np.array(hist.scalars["ce_minus_H"])
    assert gap.min() > -1e-6  # CE >= H always
    assert gap[-1] < 0.05 * gap[0]
    assert hist.scalars["norm_W"][-1] > hist.scalars["norm_W"][0]  # norms grow toward the entropy


def test_snapshots_have_history_shapes(data):
    net = model()
    hist = train_ntp(net, data, steps=20, log_steps=[0, 5, 20], snapshot_steps=[0, 20], **FAST)
    assert hist.steps == [0, 5, 20] and hist.snap_steps == [0, 20]
    assert set(hist.scalars) == {"loss", "ce", "ce_minus_H", "norm_W", "norm_H", "norm_L", "lr"}
    W, H, L = hist.W[-1], hist.H[-1], hist.L[-1]
    assert W.shape == (V, 16) and H.shape == (16, M) and L.shape == (V, M)
    with torch.no_grad():
        h = net.context_embeddings(left_pad(data.contexts, net.pad_id)).double().numpy()
        logits = net(left_pad(data.contexts, net.pad_id)).double().numpy()
    np.testing.assert_allclose(H, h.T, atol=1e-6)
    np.testing.assert_allclose(L, logits.T, atol=1e-5)  # L = W H are the model's logits
    assert hist.scalars["norm_L"][-1] == pytest.approx(np.linalg.norm(L), rel=1e-5)


def test_snapshot_contexts_subset_in_given_order(data):
    hist = train_ntp(model(), data, steps=3, log_steps=[3], snapshot_contexts=[7, 2, 11], **FAST)
    full = train_ntp(model(), data, steps=3, log_steps=[3], **FAST)
    np.testing.assert_array_equal(hist.H[-1], full.H[-1][:, [7, 2, 11]])
    assert hist.meta["snapshot_contexts"] == [7, 2, 11]
    with pytest.raises(ValueError, match="distinct"):
        train_ntp(model(), data, steps=1, snapshot_contexts=[1, 1], **FAST)


def test_same_seed_gives_identical_weights(data):
    a, b = model(seed=3), model(seed=3)
    ha = train_ntp(a, data, steps=30, batch_size=8, seed=1, **FAST)
    hb = train_ntp(b, data, steps=30, batch_size=8, seed=1, **FAST)
    for pa, pb in zip(params(a), params(b), strict=True):
        assert torch.equal(pa, pb)
    assert_same_history(ha, hb)
    c = model(seed=3)
    train_ntp(c, data, steps=30, batch_size=8, seed=2, **FAST)  # another batch order
    assert not torch.equal(params(a)[-1], params(c)[-1])


@pytest.mark.parametrize("batch_size", [None, 6])
def test_resume_after_interruption_matches_uninterrupted_run(data, tmp_path, batch_size):
    kw = dict(steps=40, batch_size=batch_size, log_steps=12, schedule="multistep", milestones=(10, 25),
              gamma=0.5, lr=1e-2, progress=False)
    straight = model()
    h_straight = train_ntp(straight, data, **kw)
    first = model()
    h_part = train_ntp(first, data, checkpoint_dir=tmp_path, checkpoint_every=10, stop_after=17, **kw)
    assert h_part.meta["stopped_at"] == 17 and h_part.steps[-1] <= 17
    resumed = model()  # a fresh process would rebuild the model from its seed
    h_resumed = train_ntp(resumed, data, checkpoint_dir=tmp_path, checkpoint_every=10, **kw)
    assert h_resumed.meta["resumed_from"] == 17
    for pa, pb in zip(params(straight), params(resumed), strict=True):
        assert torch.equal(pa, pb)
    assert_same_history(h_straight, h_resumed)
    # a finished run comes back from its final checkpoint without training
    again = model()
    h_again = train_ntp(again, data, checkpoint_dir=tmp_path, checkpoint_every=10, **kw)
    assert h_again.meta["resumed_from"] == 40
    assert_same_history(h_straight, h_again)
    assert torch.equal(params(again)[-1], params(straight)[-1])


KILLED_RUN = Path(__file__).parent / "fixtures" / "train_until_killed.py"


def _kill_when_paused(job: dict, tmp_path: Path) -> None:
    """Run ``train_until_killed.py`` on ``job`` in a process of its own, wait until it is paused at its
    point, and SIGKILL it."""
    job_file, ready = tmp_path / "job.pkl", tmp_path / "paused"
    job_file.write_bytes(pickle.dumps({**job, "ready": str(ready)}))
    path = [str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
    proc = subprocess.Popen([sys.executable, str(KILLED_RUN), str(job_file)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 300  # importing torch on a loaded 2-core machine is the slow part
        while not ready.exists():
            assert proc.poll() is None, f"the training process ended before its pause:\n{proc.stdout.read()}"
            assert time.monotonic() < deadline, "the training process did not reach its pause in 300 s"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(("pause", "batch_size", "draw"),
                         [("step", None, 1), ("step", 6, 2), ("save", None, 3)])
def test_a_killed_training_process_resumes_to_a_bit_identical_end(data, tmp_path, pause, batch_size, draw):
    """A training process is killed with SIGKILL at a random step (seeded, so a failure reproduces): in the
    middle of a step between two checkpoints, or in the middle of writing a checkpoint (the new one on
    disk as a temporary file, the previous one not yet replaced). Rerunning the same call resumes from
    the last complete checkpoint and ends with the weights and history of an uninterrupted run, bit for
    bit (one torch thread in both processes)."""
    steps, every = 40, 7
    kw = dict(steps=steps, batch_size=batch_size, log_steps=12, schedule="multistep", milestones=(10, 25),
              gamma=0.5, lr=1e-2, num_threads=1, progress=False)
    checkpoints = [s for s in range(1, steps + 1) if s % every == 0 or s == steps]
    rng = np.random.default_rng(draw)
    at = int(rng.choice(checkpoints)) if pause == "save" else int(rng.integers(1, steps + 1))
    last_complete = max([0] + [s for s in checkpoints if s < at])
    run_dir = tmp_path / "run"
    _kill_when_paused({"data": data, "model": {**TRANSFORMER, "seed": 0}, "pause": pause, "at": at,
                       "train": {**kw, "checkpoint_dir": str(run_dir), "checkpoint_every": every}}, tmp_path)
    ckpt = run_dir / CHECKPOINT_NAME
    if last_complete:
        assert loop.read_checkpoint(ckpt)["step"] == last_complete, f"killed at step {at}"
    else:
        assert not ckpt.exists()
    if pause == "save":  # the interrupted write left its temporary file behind, never a torn checkpoint
        (tmp,) = run_dir.glob(f".{CHECKPOINT_NAME}.*.tmp.npz")
        assert loop.read_checkpoint(tmp)["step"] == at

    straight = model()
    h_straight = train_ntp(straight, data, **kw)
    resumed = model()
    h_resumed = train_ntp(resumed, data, checkpoint_dir=run_dir, checkpoint_every=every, **kw)
    assert h_resumed.meta["resumed_from"] == last_complete, f"killed at step {at}"
    for pa, pb in zip(params(straight), params(resumed), strict=True):
        assert torch.equal(pa, pb), f"killed at step {at}"
    assert_same_history(h_straight, h_resumed)


def test_checkpoint_of_another_run_is_refused(data, tmp_path):
    train_ntp(model(), data, steps=4, checkpoint_dir=tmp_path, **FAST)
    with pytest.raises(ValueError, match="another run"):
        train_ntp(model(), data, steps=4, checkpoint_dir=tmp_path, **{**FAST, "lr": 0.5})
    with pytest.raises(ValueError, match="another run"):
        train_ntp(model(seed=9), data, steps=4, checkpoint_dir=tmp_path, **FAST)
    train_ntp(model(), data, steps=4, checkpoint_dir=tmp_path, resume=False, **{**FAST, "lr": 0.5})


def test_checkpoint_of_other_training_code_is_refused(data, tmp_path, monkeypatch):
    train_ntp(model(), data, steps=4, checkpoint_dir=tmp_path, **FAST)
    state = loop.read_checkpoint(tmp_path / CHECKPOINT_NAME)
    stored = json.loads(state["history"]["meta"])["training_code"]
    assert stored == training_code() and "training/loop.py:lr_factor" in stored
    assert any(k.startswith("training/models/transformer.py:") for k in stored)
    edited = {**stored, "training/loop.py:lr_factor": "0" * 64}
    monkeypatch.setattr(loop, "training_code", lambda: edited)
    with pytest.raises(TrainingCodeChanged, match="lr_factor"):
        train_ntp(model(), data, steps=4, checkpoint_dir=tmp_path, **FAST)
    monkeypatch.undo()
    meta = json.loads(state["history"]["meta"])
    del meta["training_code"]  # a checkpoint written before checkpoints recorded their code
    state["history"]["meta"] = json.dumps(meta)
    loop._save_checkpoint(tmp_path / CHECKPOINT_NAME, state)
    with pytest.raises(TrainingCodeChanged, match="does not record"):
        train_ntp(model(), data, steps=4, checkpoint_dir=tmp_path, **FAST)
    train_ntp(model(), data, steps=4, checkpoint_dir=tmp_path, resume=False, **FAST)  # trains again


def test_a_damaged_or_altered_checkpoint_is_trained_again_with_a_warning(data, tmp_path):
    """A truncated file, one that is no zip, or a valid one whose weights were altered (the checksum saved
    with them kept) is never reloaded as the finished run: a CacheWarning names it and the run trains
    again from the start, to the uninterrupted run's weights and history, and replaces it."""
    kw = dict(steps=6, checkpoint_dir=tmp_path, num_threads=1, **FAST)
    straight = model()
    h_straight = train_ntp(straight, data, **kw)
    path = tmp_path / CHECKPOINT_NAME
    intact = path.read_bytes()

    def altered() -> None:  # a valid file whose arrays no longer match the checksum saved with them
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
        weight = next(k for k, v in arrays.items() if v.dtype.kind == "f" and v.ndim == 2)
        with open(path, "wb") as fh:
            np.savez(fh, **{**arrays, weight: arrays[weight] + 1.0})

    damages = {"truncated": lambda: path.write_bytes(intact[: len(intact) // 2]),
               "not a zip": lambda: path.write_bytes(b"not a checkpoint\n" * 64), "altered": altered}
    for what, damage in damages.items():
        path.write_bytes(intact)
        damage()
        again = model()
        with pytest.warns(CacheWarning, match=re.escape(str(path))):
            hist = train_ntp(again, data, **kw)
        assert hist.meta["resumed_from"] == 0, what
        assert_same_history(h_straight, hist)
        for pa, pb in zip(params(straight), params(again), strict=True):
            assert torch.equal(pa, pb), what
        assert loop.read_checkpoint(path)["step"] == 6, what  # replaced by an intact one


def test_a_checkpoint_that_does_not_fit_never_half_loads_the_model(data, tmp_path):
    """A checkpoint with its checksum intact but one weight missing (torch's load_state_dict would copy the
    other weights before it raises), or no optimizer or history (a raw KeyError before): a warning names it,
    the model keeps its own weights and the run trains from them."""
    kw = dict(steps=6, checkpoint_dir=tmp_path, num_threads=1, **FAST)
    straight = model()
    h_straight = train_ntp(straight, data, **kw)
    path = tmp_path / CHECKPOINT_NAME
    state = loop.read_checkpoint(path)
    last = sorted(state["model"])[-1]
    zeroed = {k: torch.zeros_like(v) for k, v in state["model"].items() if k != last}
    damages = {"a weight missing": {**state, "model": zeroed},
               "no optimizer": {k: v for k, v in state.items() if k != "optimizer"},
               "no history": {k: v for k, v in state.items() if k != "history"}}
    for what, damaged in damages.items():
        loop._save_checkpoint(path, damaged)
        again = model()
        with pytest.warns(CacheWarning, match=f"checkpoint {re.escape(str(path))} does not fit the run"):
            hist = train_ntp(again, data, **kw)
        assert hist.meta["resumed_from"] == 0, what
        assert_same_history(h_straight, hist)


def test_the_thread_count_is_part_of_the_run(data, tmp_path):
    """Mini-batch results differ with the torch thread count, so a checkpoint written under one count is
    not reloaded under another."""
    kw = dict(steps=3, batch_size=6, checkpoint_dir=tmp_path, **FAST)
    train_ntp(model(), data, num_threads=1, **kw)
    with pytest.raises(ValueError, match=f"checkpoint {re.escape(str(tmp_path / CHECKPOINT_NAME))} belongs "
                                         "to another run"):
        train_ntp(model(), data, num_threads=2, **kw)
    again = train_ntp(model(), data, num_threads=1, **kw)
    assert again.meta["resumed_from"] == 3 and again.meta["num_threads"] == 1


def test_a_full_disk_names_the_checkpoint_and_keeps_the_previous_one(data, tmp_path, monkeypatch):
    """A checkpoint written on a full disk: an OSError (ENOSPC) that names the file and says no space is
    left; the previous checkpoint stays intact and resumes once there is space (the write is simulated:
    it puts a few bytes down, then fails as a full disk does)."""
    kw = dict(steps=6, checkpoint_every=3, checkpoint_dir=tmp_path, num_threads=1, **FAST)
    train_ntp(model(), data, stop_after=3, **kw)
    path = tmp_path / CHECKPOINT_NAME
    before = path.read_bytes()

    def full_disk(file, *args, **kwargs):
        Path(file).write_bytes(b"PK\x03\x04")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(np, "savez_compressed", full_disk)
    monkeypatch.setattr(np, "savez", full_disk)
    monkeypatch.setattr(torch, "save", full_disk)
    with pytest.raises(OSError) as err:
        train_ntp(model(), data, **kw)
    assert err.value.errno == errno.ENOSPC
    assert "no space left" in str(err.value) and str(path) in str(err.value)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [CHECKPOINT_NAME]
    monkeypatch.undo()
    assert train_ntp(model(), data, **kw).meta["resumed_from"] == 3


def test_reloaded_run_counts_the_training_code_as_run(data, tmp_path):
    train_ntp(model(), data, steps=4, checkpoint_dir=tmp_path, **FAST)
    tracing.start(force=True)
    try:
        hist = train_ntp(model(), data, steps=4, checkpoint_dir=tmp_path, **FAST)
    finally:
        trace = tracing.finish()
    assert hist.meta["resumed_from"] == 4 and "training_code" not in hist.meta
    # lr_factor never ran in the reload; the trace holds it all the same, so a table built on it can go stale
    assert set(training_code()) <= set(trace["functions"])


def test_device_auto_resolves_to_cpu_without_cuda(data):
    hist = train_ntp(model(), data, steps=1, device="auto", **FAST)
    assert hist.meta["device"] == ("cuda" if torch.cuda.is_available() else "cpu")


def test_float64_and_summed_loss(data):
    net = model()
    hist = train_ntp(net, data, steps=5, dtype="float64", reduction="sum", **FAST)
    assert net.output_weight().dtype == torch.float64
    assert hist.scalars["ce"][-1] < hist.scalars["ce"][0]


def test_multistep_factor_matches_torch_multisteplr():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1.0)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[3, 7], gamma=0.4)
    for update in range(10):
        factor = lr_factor(update, schedule="multistep", steps=10, milestones=(3, 7), gamma=0.4)
        assert factor == pytest.approx(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lr_factor(0, schedule="cosine", steps=10) == 1.0
    assert lr_factor(10, schedule="cosine", steps=10) == pytest.approx(0.0)
    assert lr_factor(1, schedule="constant", steps=10, warmup_steps=4) == 0.5
    with pytest.raises(ValueError, match="unknown schedule"):
        lr_factor(0, schedule="step", steps=1)


def test_bad_inputs_raise_value_error(data):
    with pytest.raises(ValueError, match="shape mismatch"):
        train_ntp(build_model("transformer", vocab_size=V + 1, context_vocab_size=CTX_VOCAB, d=8, n_heads=2),
                  data, steps=1, progress=False)
    with pytest.raises(ValueError, match="rows summing to 1"):
        training_set(model(), (torch.zeros(3, 2, dtype=torch.long), torch.ones(3, V)))
    with pytest.raises(ValueError, match="unknown optimizer"):
        train_ntp(model(), data, steps=1, optimizer="lbfgs")
    with pytest.raises(ValueError, match="needs the sample count"):
        train_ntp(model(), (torch.zeros(3, 2, dtype=torch.long), torch.tensor([0, 1, 2])), steps=1,
                  reduction="sum")


def test_classifier_records_confusion_matrices():
    images, labels = imbalanced_digits(classes=(0, 1, 2), per_class=(30, 30, 6), seed=0)
    cnn = build_model("cnn", n_classes=3, channels=(8, 16, 16), seed=0)
    hist = train_classifier(cnn, images, labels, steps=40, lr=0.05, optimizer="adamw",
                            log_steps=[0, 10, 40], progress=False)
    conf = np.array(hist.meta["confusion"])
    assert hist.meta["confusion_steps"] == [0, 10, 40] and conf.shape == (3, 3, 3)
    assert (conf.sum(axis=2) == [30, 30, 6]).all()  # rows = true classes
    assert hist.scalars["accuracy"][-1] > 0.9 and hist.scalars["accuracy"][-1] > hist.scalars["accuracy"][0]
    assert hist.H[-1].shape == (16, 66) and hist.W[-1].shape == (3, 16)
    assert hist.meta["entropy"] == 0.0
