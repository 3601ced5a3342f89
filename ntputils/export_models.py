"""This book's trained transformers as model folders: a07's ``cpu``-profile run saved at several steps.

``python -m ntputils.export_models [OUT]`` (default ``results/models/a07-tinystories10``) trains
chapter a07's ``cpu``-profile transformer (its parameters cell, read from the chapter: the TinyStories
stories, BPE-64 tokenizer, 2 layers, d = 64, AdamW steps, seed 0, one thread) once, stopping after each
step of :data:`STEPS` and resuming (a resumed run is bit-identical on a CPU), and writes one model folder
per step (:func:`ntputils.training.model_folder.save_model_folder`) with the tokenizer and what made it.
Step 0 is the untrained model. Chapter d01 reads these folders by default; a sweep over them is the
geometry of one run against its training step (Paper A, Fig. 6's question asked of a real-text model).

``python -m ntputils.export_models --fallback`` trains chapter b07's fallback LM (the stand-in for GPT-2,
:func:`ntputils.training.pretrained.train_fallback_lm`, default configuration, one thread) and writes its
weights to ``results/models/fallback-lm/`` under the name that keys them by configuration, text and training
code, removing the copies of other keys; b07 then loads them instead of training for two minutes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ntputils.chapter import profile_values
from ntputils.data.corpora import tinystories_bpe64
from ntputils.data.corpora.readers import TINYSTORIES_DIR, TINYSTORIES_TRAIN_HEAD
from ntputils.paths import REPO_ROOT
from ntputils.training.loop import train_ntp
from ntputils.training.model_folder import save_model_folder
from ntputils.training.models import build_model

CHAPTER = "a07_tinystories_transformer"
STEPS = (0, 50, 200, 1500)  # the last is the chapter's `steps` (checked)
DEFAULT_OUT = REPO_ROOT / "results" / "models" / "a07-tinystories10"


def step_folder(out: Path, step: int) -> Path:
    """The folder of the model after ``step`` optimizer steps."""
    return out / f"step-{step:05d}"


def export_a07(out: Path = DEFAULT_OUT, steps: tuple[int, ...] = STEPS, progress: bool = True) -> list[Path]:
    """Train a07's cpu-profile run and write its model folders at ``steps`` (see the module docstring)."""
    p = profile_values(CHAPTER, "cpu")
    if steps[-1] != p["steps"]:
        raise ValueError(f"the last step {steps[-1]} must be the chapter's steps={p['steps']}")
    stories = tinystories_bpe64(n_stories=p["n_stories"], vocab_size=p["vocab_size"],
                                context_length=p["context_length"])
    data = stories.data
    model_config = dict(vocab_size=data.V, context_vocab_size=data.V, d=p["d"], n_layers=p["n_layers"],
                        n_heads=p["n_heads"], multiple_of=p["multiple_of"], pos_encoding="none",
                        max_len=p["context_length"])
    train_config = dict(steps=p["steps"], lr=p["lr"], weight_decay=p["weight_decay"], schedule=p["schedule"],
                        batch_size=p["batch_size"], log_steps=p["log_steps"])
    meta = {"made_by": "python -m ntputils.export_models", "chapter": CHAPTER, "profile": "cpu",
            "seed": p["seed"], "steps": p["steps"], "num_threads": 1,
            "corpus": f"data:{TINYSTORIES_DIR}/{TINYSTORIES_TRAIN_HEAD}.txt.xz",
            "max_documents": p["n_stories"], "context_length": p["context_length"],
            "entropy": float(data.entropy)}
    tokenizer = stories.tokenizer.serialized_model_proto()
    written = []
    with tempfile.TemporaryDirectory(prefix="a07-export-") as ckpt:
        for step in steps:
            model = build_model("transformer", seed=p["seed"], **model_config)
            ce_gap = None
            if step:
                hist = train_ntp(model, data, seed=p["seed"], device="cpu", checkpoint_dir=ckpt,
                                 num_threads=1,
                                 progress=progress, stop_after=None if step == p["steps"] else step,
                                 **train_config)
                ce_gap = float(hist.scalars["ce_minus_H"][-1])
            folder = save_model_folder(model, step_folder(out, step), tokenizer=tokenizer,
                                       meta={**meta, "step": step, "ce_minus_H_last_log": ce_gap})
            written.append(folder)
            print(f"wrote {folder} (step {step})", flush=True)
    return written


def export_fallback(progress: bool = True) -> Path:
    """Train the fallback LM once (no cache read, one torch thread) and commit its weights' file to
    :func:`~ntputils.training.pretrained.committed_fallback_path`; the files of other keys there go."""
    import torch

    from ntputils.training.pretrained import committed_fallback_path, save_fallback_weights, train_fallback_lm

    torch.set_num_threads(1)
    lm = train_fallback_lm(device="cpu", progress=progress, use_cache=False)
    target = committed_fallback_path(lm.extra["file_name"])
    target.parent.mkdir(parents=True, exist_ok=True)
    save_fallback_weights(target, lm.model, lm.extra["valid_ce"])
    for old in target.parent.glob("fallback-lm-*.npz"):
        if old != target:
            old.unlink()
    print(f"wrote {target} ({target.stat().st_size / 1e6:.1f} MB): {lm.description}", flush=True)
    return target


if __name__ == "__main__":
    if sys.argv[1:] == ["--fallback"]:
        export_fallback()
    else:
        export_a07(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
