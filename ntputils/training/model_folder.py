"""A model folder: a causal LM on disk, read the same way whether it is a Hugging Face checkpoint or one of
this book's transformers (chapter d01, ``ntpbook geometry``).

Paper A compares a trained model's context embeddings ``H`` (d x m: the last-layer state that the decoder
reads after each context) and word embeddings ``W`` (V x d: the decoder) with the geometry its training
data predicts. Both come from a folder:

* **Hugging Face** (``config.json`` + ``model.safetensors`` / ``pytorch_model.bin``): loaded with
  ``AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)``; ``H`` is the last entry of
  ``hidden_states`` (after the final norm in GPT-2, Llama and their relatives), ``W`` the output embedding.
* **This book** (:func:`save_model_folder`; ``config.json`` with ``"model_type": "ntp_transformer"``, the
  weights in ``model.safetensors`` with their sha256 in the config, the tokenizer beside them):
  an :class:`~ntputils.training.models.NTPTransformer` (no Hugging Face architecture has its "no positional
  encoding"); ``H`` is its context embedding, ``W`` its decoder.

:func:`untrained_twin` builds the same architecture freshly initialized: the untrained control of every
claim about what training produced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ntputils.device import resolve_device
from ntputils.paths import file_sha256
from ntputils.training.models import NTPTransformer, TransformerConfig, build_model
from ntputils.training.pretrained import decoder_weight, last_layer_context_embeddings

NTP_MODEL_TYPE = "ntp_transformer"
WEIGHTS = "model.safetensors"
TOKENIZER_FILE = "tokenizer.model"


class ModelFolderError(ValueError):
    """A model folder that cannot be read as a causal LM, or that does not fit the data given to it."""


@dataclass
class FolderModel:
    """A loaded model folder: the module (eval mode), what it is, its context window and decoder size."""

    model: torch.nn.Module
    kind: str  # "ntp_transformer" or "huggingface"
    path: Path
    window: int | None  # the longest context it reads (None: unbounded)
    vocab_size: int  # rows of W
    config: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def description(self) -> str:
        return (f"{self.kind} {self.path.name}: {self.parameters:,} parameters, V={self.vocab_size}, "
                f"window {self.window or 'unbounded'}")


def save_model_folder(model: NTPTransformer, folder: str | Path, *,
                      tokenizer: bytes | str | Path | None = None,
                      meta: Mapping[str, Any] | None = None) -> Path:
    """Write ``model`` as a model folder: ``config.json`` (architecture, ``meta``, the sha256 of each file),
    ``model.safetensors`` and, when given, the SentencePiece tokenizer (its serialized bytes or a file) as
    ``tokenizer.model``."""
    from safetensors.torch import save_file

    if not isinstance(model, NTPTransformer):
        raise TypeError(f"save_model_folder writes this book's transformer, got {type(model).__name__} (a "
                        "Hugging Face model has save_pretrained)")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / WEIGHTS))
    if tokenizer is not None:
        raw = tokenizer if isinstance(tokenizer, bytes) else Path(tokenizer).read_bytes()
        (out / TOKENIZER_FILE).write_bytes(raw)
    config = {"model_type": NTP_MODEL_TYPE, "ntp_config": asdict(model.config), "meta": dict(meta or {}),
              "sha256": {WEIGHTS: file_sha256(out / WEIGHTS)}}
    if tokenizer is not None:
        config["sha256"][TOKENIZER_FILE] = file_sha256(out / TOKENIZER_FILE)
    (out / "config.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
    return out


def _read_config(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    if not folder.is_dir():
        raise FileNotFoundError(f"model folder {folder} does not exist" if not folder.exists()
                                else f"model: {folder} is a file, not a model folder")
    if not path.exists():
        raise FileNotFoundError(f"model folder {folder} has no config.json (a Hugging Face causal LM saved "
                                "with save_pretrained, or a folder of save_model_folder)")
    try:
        return json.loads(path.read_text())
    except ValueError as err:
        raise ModelFolderError(f"{path} is not JSON ({err})") from None


def _hf_window(config: Any) -> int | None:
    for name in ("n_positions", "max_position_embeddings", "n_ctx", "seq_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def load_model_folder(folder: str | Path, device: str = "auto") -> FolderModel:
    """The model in ``folder`` on ``device`` ("auto": CUDA when present), in eval mode.

    A book folder's weights are checked against the sha256 in its config (a changed file is refused,
    naming it); a Hugging Face folder is read with ``local_files_only`` (never downloaded).
    """
    path = Path(folder).expanduser()
    config = _read_config(path)
    dev = resolve_device(device)
    if config.get("model_type") == NTP_MODEL_TYPE:
        weights = path / WEIGHTS
        if not weights.exists():
            raise FileNotFoundError(f"model folder {path} has no {WEIGHTS}")
        want = config.get("sha256", {}).get(WEIGHTS)
        if want is not None and file_sha256(weights) != want:
            raise ModelFolderError(f"{weights}: sha256 differs from the one in {path / 'config.json'} (the "
                                   "weights were changed or damaged after the folder was written)")
        from safetensors.torch import load_file

        try:
            cfg = TransformerConfig(**config["ntp_config"])
            model = build_model("transformer", seed=0, **asdict(cfg))
            model.load_state_dict(load_file(str(weights)))
        except (KeyError, TypeError, RuntimeError, ValueError) as err:
            raise ModelFolderError(f"model folder {path}: weights and config do not fit "
                                   f"({type(err).__name__}: "
                                   f"{str(err).splitlines()[0]})") from None
        return FolderModel(model.eval().to(dev), NTP_MODEL_TYPE, path, cfg.max_len, cfg.vocab_size,
                           config["ntp_config"], config.get("meta", {}))
    try:
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError, KeyError) as err:
        raise ModelFolderError(f"model folder {path} is not a Hugging Face causal LM ({type(err).__name__}: "
                               f"{str(err).splitlines()[0]})") from None
    out = model.get_output_embeddings()
    if out is None:
        raise ModelFolderError(f"model folder {path}: {type(model).__name__} has no output embedding "
                               "(decoder)")
    return FolderModel(model.eval().to(dev), "huggingface", path, _hf_window(model.config),
                       int(out.weight.shape[0]), model.config.to_dict(), {})


def untrained_twin(fm: FolderModel, seed: int = 0) -> FolderModel:
    """The same architecture freshly initialized under ``seed``: the untrained control of a claim that
    training produced a geometry."""
    if fm.kind == NTP_MODEL_TYPE:
        model = build_model("transformer", seed=seed, **fm.config)
    else:
        from transformers import AutoModelForCausalLM

        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = AutoModelForCausalLM.from_config(fm.model.config)
    return FolderModel(model.eval().to(next(fm.model.parameters()).device), fm.kind, fm.path, fm.window,
                       fm.vocab_size, fm.config, {**fm.meta, "untrained": True, "seed": seed})


def check_contexts(fm: FolderModel, contexts: Sequence[Sequence[int]]) -> None:
    """Refuse contexts the model cannot read: longer than its window, or with ids beyond its vocabulary."""
    if not contexts:
        raise ModelFolderError("no contexts to read")
    longest = max(len(c) for c in contexts)
    if fm.window is not None and longest > fm.window:
        raise ModelFolderError(f"contexts of {longest} tokens are longer than the model's window of "
                               f"{fm.window} tokens ({fm.path}): pass shorter context lengths")
    top = max(max(c) for c in contexts if len(c))
    if fm.kind == NTP_MODEL_TYPE:
        inputs = int(fm.config.get("context_vocab_size") or fm.vocab_size)
    else:
        inputs = int(fm.model.get_input_embeddings().weight.shape[0])
    if top >= inputs:
        raise ModelFolderError(f"token id {top} is beyond the model's {inputs} input embeddings: the "
                               f"tokenizer does not match the model ({fm.path})")


def context_states(fm: FolderModel, contexts: Sequence[Sequence[int]], batch_size: int = 256,
                   progress: bool = True) -> np.ndarray:
    """``H`` (d x m, float32): the state the decoder reads after the last token of each context, batched by
    context length (no padding), with a progress bar."""
    check_contexts(fm, contexts)
    return last_layer_context_embeddings(fm.model, contexts, batch_size=batch_size, progress=progress)


def decoder(fm: FolderModel) -> np.ndarray:
    """``W`` (V x d, float32), the rows of the decoder (tied with the input embedding in GPT-2)."""
    return decoder_weight(fm.model)


__all__ = ["FolderModel", "ModelFolderError", "NTP_MODEL_TYPE", "check_contexts", "context_states", "decoder",
           "load_model_folder", "save_model_folder", "untrained_twin"]
