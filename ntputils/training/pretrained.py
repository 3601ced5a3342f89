"""Pretrained language models: GPT-2 through Hugging Face ``transformers``, or a real offline fallback.

Paper B (Sec. 5.1, App. F.2, Figs. 7, 15-17) reads the *decoder* ``W`` of GPT-2 (50257 x 768; tied
with the input embedding) and the last-layer representations ``H`` (d x m, after the final layer
norm, i.e. the input of the decoder) of 500k contexts = the prefixes of lengths 1..10 of 50k random
11-token sequences. This module provides

* :func:`load_gpt2` -- ``GPT2LMHeadModel.from_pretrained`` from a model name, a local folder or the
  Hugging Face cache (``NTP_GPT2_PATH`` overrides the name; ``HF_HUB_OFFLINE=1`` forbids downloads);
* :func:`decoder_weight`, :func:`last_layer_context_embeddings`, :func:`prefix_context_embeddings`
  -- ``W`` and ``H`` of a GPT-2 *or* of our :class:`~ntputils.training.models.NTPTransformer`;
* :func:`sample_windows`, :func:`prefix_contexts` -- the 11-token sequences and their prefixes;
* :func:`pretrained_or_fallback` -- GPT-2 when it can be loaded, otherwise a small transformer LM
  that we train on WikiText-2 (cached, and committed: :func:`committed_fallback_path`), exposed the same
  way. The fallback reads its text with
  **GPT-2's own tokenizer** (the shared files, :mod:`ntputils.data.corpora.gpt2_tokenizer`) and keeps
  the ``bpe_vocab - 1`` most frequent GPT-2 tokens as its vocabulary, every other token mapped to one
  ``<other>`` id. It is a real language model of real text, but it is *not* GPT-2: chapters must
  print the description that comes back.

Token strings are readable (``#`` = word start, ``⏎`` = newline, hex bytes for an incomplete UTF-8
piece); a loaded GPT-2 with 50,257 tokens is labelled with the shared GPT-2 tokenizer.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm  # the text bar: tqdm.auto warns "IProgress not found" in a kernel without ipywidgets

from ntputils import paths
from ntputils.data.corpora.cache import load_verified, save_verified
from ntputils.device import resolve_device
from ntputils.hashing import digest
from ntputils.training.models import NTPTransformer, TransformerConfig, seeded

GPT2_ENV = "NTP_GPT2_PATH"
OTHER_TOKEN = "<other>"  # the fallback LM's one id for every GPT-2 token outside its vocabulary
GPT2_VOCAB = 50257


class PretrainedUnavailableError(OSError):
    """GPT-2 weights could not be found (no local copy, no cache, no network)."""


def gpt2_source(name_or_path: str | os.PathLike | None = None) -> str:
    """The GPT-2 to load: the argument, else ``$NTP_GPT2_PATH``, else ``"gpt2"`` (124M).
    """
    return str(name_or_path) if name_or_path is not None else os.environ.get(GPT2_ENV, "gpt2")


def load_gpt2(name_or_path: str | os.PathLike | None = None, device: str = "auto"):  # noqa: ANN201
    """``transformers.GPT2LMHeadModel`` in eval mode on ``device``.

    A local folder is read with ``local_files_only``; a hub name uses the Hugging Face cache (and the
    network unless ``HF_HUB_OFFLINE=1``). Raises :class:`PretrainedUnavailableError` when neither works.

    GPT-2, as in Paper B, Sec. 5.1 and App. F.2.
    """
    try:
        from transformers import GPT2LMHeadModel
    except ImportError as err:  # pragma: no cover - transformers is a project dependency
        raise PretrainedUnavailableError("the 'transformers' package is not installed") from err
    src = gpt2_source(name_or_path)
    local = Path(src).expanduser().exists()
    try:
        model = GPT2LMHeadModel.from_pretrained(src, local_files_only=local)
    except (OSError, ValueError) as err:
        raise PretrainedUnavailableError(
            f"GPT-2 {src!r} is not available ({type(err).__name__}: {str(err).splitlines()[0]}); set "
            f"{GPT2_ENV} to a local folder saved with save_pretrained, or fill the Hugging Face cache"
        ) from err
    return model.eval().to(resolve_device(device))


def load_gpt2_tokens(name_or_path: str | os.PathLike | None = None) -> list[str] | None:
    """Readable token strings of GPT-2's tokenizer (``#`` marks a word start), or ``None`` if absent.

    Token strings for the word clouds of Paper B, Figs. 7, 15-17.
    """
    try:
        from transformers import AutoTokenizer

        src = gpt2_source(name_or_path)
        tok = AutoTokenizer.from_pretrained(src, local_files_only=Path(src).expanduser().exists())
    except (OSError, ValueError, ImportError):
        return None
    from ntputils.data.corpora.tokenize import token_strings

    return token_strings(tok.backend_tokenizer)


def _folder_tokenizer(name_or_path: str | os.PathLike | None = None):  # noqa: ANN202
    """The ``tokenizers.Tokenizer`` saved with a GPT-2 (``None`` if absent)."""
    try:
        from transformers import AutoTokenizer

        src = gpt2_source(name_or_path)
        local = Path(src).expanduser().exists()
        return AutoTokenizer.from_pretrained(src, local_files_only=local).backend_tokenizer
    except (OSError, ValueError, ImportError):
        return None


def decoder_weight(model: torch.nn.Module) -> np.ndarray:
    """The decoder / word-embedding matrix ``W`` (V x d, float32), rows = words.

    Works for a Hugging Face causal LM (``get_output_embeddings``; tied with ``wte`` in GPT-2) and
    for our :class:`~ntputils.training.models.common.NTPModel` (``output_weight``).

    W of Paper B, Sec. 5.1 (GPT-2's decoder).
    """
    if hasattr(model, "output_weight"):
        weight = model.output_weight()
    elif hasattr(model, "get_output_embeddings") and model.get_output_embeddings() is not None:
        weight = model.get_output_embeddings().weight
    else:
        raise ValueError(f"{type(model).__name__} has no decoder (output embedding) to read")
    return weight.detach().float().cpu().numpy()


def _final_states(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Decoder inputs at every position ``[B, T, d]`` (after the final norm)."""
    if isinstance(model, NTPTransformer):
        return model.hidden_states(ids)
    if not hasattr(model, "get_output_embeddings"):
        raise ValueError(f"cannot read hidden states of {type(model).__name__}")
    # any Hugging Face causal LM: the last hidden state is the lm_head input (GPT-2 and Llama apply their
    # final norm before returning it)
    return model(input_ids=ids, output_hidden_states=True).hidden_states[-1]


def _device_of(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def prefix_context_embeddings(model: torch.nn.Module, windows: np.ndarray | torch.Tensor,
                              batch_size: int = 256, progress: bool = True) -> np.ndarray:
    """``H`` (d x n(L-1), float32) of all prefixes of lengths 1..L-1 of ``n`` windows ``[n, L]``.

    Column ``i (L-1) + (t-1)`` is the last-layer state after the prefix ``windows[i, :t]`` -- by
    causality the state at position ``t-1`` of one forward pass over ``windows[i, :L-1]``, so the
    n(L-1) contexts cost n forward passes (GPT-2 positions start at 0 for every window).

    H of Paper B, Sec. 5.1 (last-layer representations of the prefixes).
    """
    ids = torch.as_tensor(np.asarray(windows), dtype=torch.long)
    if ids.ndim != 2 or ids.shape[1] < 2:
        raise ValueError(f"windows must be [n, L] with L >= 2, got shape {tuple(ids.shape)}")
    device, out = _device_of(model), []
    with torch.no_grad():
        for start in tqdm(range(0, len(ids), batch_size), disable=None if progress else True, desc="windows"):
            states = _final_states(model, ids[start:start + batch_size, :-1].to(device))
            out.append(states.float().cpu().reshape(-1, states.shape[-1]))
    return torch.cat(out).T.numpy()


def last_layer_context_embeddings(model: torch.nn.Module, contexts: Sequence[Sequence[int]] | torch.Tensor,
                                  batch_size: int = 256, progress: bool = True) -> np.ndarray:
    """``H`` (d x m, float32): the decoder input after the last token of each context.

    Contexts may have different lengths; they are batched by length (no padding, so absolute
    positions start at 0 as in pre-training). Columns follow the order of ``contexts``.

    H of Paper B, Sec. 5.1 (last-layer representations before the decoder).
    """
    seqs = contexts.tolist() if isinstance(contexts, torch.Tensor) else contexts
    rows = [list(map(int, c)) for c in seqs]
    if not rows or min(len(r) for r in rows) == 0:
        raise ValueError("contexts must be a non-empty list of non-empty token sequences")
    lengths = np.array([len(r) for r in rows])
    device, H = _device_of(model), None
    with torch.no_grad():
        for length in tqdm(np.unique(lengths), disable=None if progress else True, desc="contexts by length"):
            members = np.flatnonzero(lengths == length)
            for start in range(0, len(members), batch_size):
                chunk = members[start:start + batch_size]
                ids = torch.tensor([rows[j] for j in chunk], dtype=torch.long, device=device)
                last = _final_states(model, ids)[:, -1].float().cpu()
                if H is None:
                    H = torch.empty(last.shape[1], len(rows))
                H[:, torch.as_tensor(chunk)] = last.T
    return H.numpy()  # type: ignore[union-attr]


def sample_windows(token_stream: np.ndarray | Sequence[np.ndarray], n_sequences: int, length: int = 11,
                   seed: int = 0) -> np.ndarray:
    """``n_sequences`` windows ``[n, length]`` of consecutive tokens, uniform over all valid starts.

    ``token_stream`` is one token array or a list of documents; windows never cross a document
    boundary. Drawn without replacement when there are enough starts (paper B: 50k x 11 tokens of
    OpenWebText; the paper's sampling is UNKNOWN -- this is the PROPOSED "random offsets in random
    documents", uniform over positions).
    """
    if length < 1 or n_sequences < 1:
        raise ValueError(f"length and n_sequences must be >= 1, got {length}, {n_sequences}")
    if len(token_stream) == 0:
        raise ValueError("empty corpus: no tokens to sample windows from")
    single = np.ndim(token_stream[0]) == 0
    docs = [np.asarray(token_stream)] if single else [np.asarray(d) for d in token_stream]
    starts = np.array([max(0, len(d) - length + 1) for d in docs])
    total = int(starts.sum())
    if total == 0:
        raise ValueError(f"no document has {length} tokens (empty corpus for windows)")
    rng = np.random.default_rng(seed)
    flat = np.sort(rng.choice(total, size=n_sequences, replace=n_sequences > total))
    bounds = np.cumsum(starts)
    doc = np.searchsorted(bounds, flat, side="right")
    offset = flat - (bounds[doc] - starts[doc])
    order = rng.permutation(n_sequences)
    doc, offset = doc[order], offset[order]
    return np.stack([docs[i][o:o + length] for i, o in zip(doc, offset, strict=True)])


def prefix_contexts(windows: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Contexts = prefixes of lengths 1..L-1 of each window, next tokens = the token after each prefix.

    Ordered as in :func:`prefix_context_embeddings` (window-major). Repeated contexts are kept; use
    :func:`ntputils.data.from_pairs` to merge them into distinct contexts with counts.

    The simplified OpenWebText contexts of Paper B, Sec. 5.1 (prefixes of 11-token sequences).
    """
    w = np.asarray(windows)
    if w.ndim != 2 or w.shape[1] < 2:
        raise ValueError(f"windows must be [n, L] with L >= 2, got shape {w.shape}")
    contexts = [tuple(int(t) for t in row[:k]) for row in w for k in range(1, w.shape[1])]
    return contexts, w[:, 1:].reshape(-1).copy()


# ----------------------------------------------------------------------------------------------
# offline fallback: a small transformer LM trained on WikiText-2
# ----------------------------------------------------------------------------------------------


@dataclass
class FallbackConfig:
    """The fallback LM: byte-level BPE on WikiText-2 train + a pre-RMSNorm transformer with RoPE.

    ``tokenizer="gpt2"``: GPT-2's tokenizer, vocabulary = the ``bpe_vocab - 1`` most frequent GPT-2
    tokens of the training text + ``<other>``; ``"bpe"``: a byte-level BPE of ``bpe_vocab`` tokens
    trained on the text. The defaults train in about 2 minutes of one CPU core (~0.1 s per step of
    32 x 32 tokens); the model is cached, so later calls only load.

    Stand-in for GPT-2 of Paper B, Sec. 5.1 when it cannot be loaded.
    """

    bpe_vocab: int = 2048
    tokenizer: str = "gpt2"
    d: int = 128
    n_layers: int = 2
    n_heads: int = 4
    context: int = 32
    batch_size: int = 32
    steps: int = 1000
    lr: float = 3e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    seed: int = 0

    def key(self, texts_fingerprint: str) -> str:
        """Cache key (12 hex digits, :func:`ntputils.hashing.digest`) of this configuration and the corpus."""
        return digest(asdict(self), texts_fingerprint, length=12)


@dataclass
class PretrainedLM:
    """A pretrained LM with its decoder ``W`` (V x d), readable token strings and what it is.

    Paper B, Sec. 5.1 and App. F.2.
    """

    model: torch.nn.Module
    tokens: list[str]
    description: str
    source: str  # "gpt2" or "fallback"
    extra: dict = field(default_factory=dict)

    @property
    def W(self) -> np.ndarray:
        return decoder_weight(self.model)

    def encode(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids of the model for every text (GPT-2 ids mapped to the fallback's vocabulary if any)."""
        from ntputils.data.corpora.tokenize import encode_all

        tok = self.extra.get("tokenizer")
        if tok is None:
            raise ValueError("this PretrainedLM has no tokenizer to encode with")
        ids = encode_all(tok, texts)
        id_map = self.extra.get("id_map")
        return ids if id_map is None else [id_map[x] for x in ids]


def lm_loss(model: NTPTransformer, windows: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over every position of ``windows [B, T+1]`` (autoregressive LM).

    The NTP objective of Paper B, Eq. (1) over every prefix.
    """
    states = model.hidden_states(windows[:, :-1])
    logits = model.output(states)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1))


def _random_windows(stream: torch.Tensor, batch: int, length: int, gen: torch.Generator) -> torch.Tensor:
    starts = torch.randint(0, len(stream) - length + 1, (batch,), generator=gen)
    return stream[starts[:, None] + torch.arange(length)]


def fit_fallback(model: NTPTransformer, stream: torch.Tensor, valid: torch.Tensor, cfg: FallbackConfig,
                 progress: bool = True) -> float:
    """Train ``model`` on random ``context+1``-token windows of the token ``stream`` and return its validation
    CE (nats/token, 8 batches of 64 windows of ``valid``): the mean next-token CE on every position (Paper B,
    Eq. (1)), AdamW (betas 0.9, 0.95) with linear warm-up and cosine decay, ``cfg.steps`` steps."""
    dev = stream.device
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95))
    model.train()
    for step in tqdm(range(cfg.steps), disable=None if progress else True, desc="fallback LM"):
        warm = min(1.0, (step + 1) / max(1, cfg.warmup_steps))
        for group in opt.param_groups:
            group["lr"] = cfg.lr * warm * 0.5 * (1 + math.cos(math.pi * step / max(1, cfg.steps)))
        loss = lm_loss(model, _random_windows(stream, cfg.batch_size, cfg.context + 1, gen).to(dev))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        vgen = torch.Generator().manual_seed(12345)
        batches = [_random_windows(valid, 64, cfg.context + 1, vgen) for _ in range(8)]
        return float(np.mean([lm_loss(model, b).item() for b in batches]))


def fallback_code_key() -> str:
    """Key (12 hex digits) of the code that trains the fallback LM, read from the package's files: the
    normalized source (no comments or docstrings, :class:`ntputils.tracing.TraceSources`) of
    :func:`fit_fallback`, :func:`lm_loss` and the window sampler, and the transformer's whole module. Part
    of the weights' file name, so weights that other training code made (cached or committed) are never
    loaded."""
    from ntputils.tracing import TraceSources, normalized_code

    sources = TraceSources()
    model = sources.module("training/models/transformer.py")
    return digest(*(sources.function_code(f"training/pretrained.py:{name}")
                    for name in ("fit_fallback", "lm_loss", "_random_windows")),
                  "<missing>" if model is None else normalized_code(model), length=12)


def committed_fallback_path(file_name: str) -> Path:
    """Where the book keeps its trained fallback LM: ``results/models/fallback-lm/<file_name>`` (written by
    ``python -m ntputils.export_models --fallback``; loaded, checksum verified, when the cache has none)."""
    return paths.REPO_ROOT / "results" / "models" / "fallback-lm" / file_name


def save_fallback_weights(path: Path, model: torch.nn.Module, valid_ce: float) -> None:
    """Write the fallback LM's ``state_dict`` and validation CE to ``path`` with their checksum, atomically
    (:func:`ntputils.data.corpora.cache.save_verified`): the file :func:`train_fallback_lm` loads."""
    save_verified(path, {"valid_ce": np.asarray(valid_ce),
                         **{k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}})


def train_fallback_lm(config: FallbackConfig | None = None, texts: Sequence[str] | None = None,
                      valid_texts: Sequence[str] | None = None, device: str = "auto",
                      progress: bool = True, use_cache: bool = True) -> PretrainedLM:
    """Train (or load) the fallback LM on WikiText-2 (or ``texts``) with :func:`fit_fallback`.

    Objective: mean next-token CE on every position of random ``context+1``-token windows of the
    BPE-encoded corpus; AdamW with linear warm-up and cosine decay. The validation CE (nats/token)
    is measured on WikiText-2 valid (or ``valid_texts``) and reported in the description.

    The weights are keyed by the configuration, the text and the training code
    (:func:`fallback_code_key`). With ``use_cache`` they are loaded from ``cache_dir("pretrained")``,
    else from the book's committed copy (:func:`committed_fallback_path`) when it has the same key, else
    trained and cached; the description says which (``extra["weights"]``: ``"trained"``, ``"cache"`` or
    ``"committed"``). Loaded files are checksum-verified (a damaged one is trained again, with a warning).

    Stand-in for GPT-2 of Paper B, Sec. 5.1 when it cannot be loaded.
    """
    from ntputils.data.corpora.gpt2_tokenizer import gpt2_token_strings, load_gpt2_tokenizer
    from ntputils.data.corpora.paper_b_corpora import detokenize_wikitext, split_at_unknown
    from ntputils.data.corpora.readers import read_wikitext
    from ntputils.data.corpora.tokenize import encode_all, token_strings, train_bpe

    cfg = config or FallbackConfig()
    if cfg.tokenizer not in ("gpt2", "bpe"):
        raise ValueError(f"unknown fallback tokenizer {cfg.tokenizer!r}; valid: 'gpt2', 'bpe'")
    if texts is None:
        name, texts = "WikiText-2", read_wikitext("train")
        valid_texts = read_wikitext("valid") if valid_texts is None else valid_texts
        if cfg.tokenizer == "gpt2":  # ordinary text for GPT-2's tokenizer, no <unk> inside a sequence
            texts = [x for t in texts for x in split_at_unknown(detokenize_wikitext(t))]
            valid_texts = [x for t in valid_texts for x in split_at_unknown(detokenize_wikitext(t))]
    else:
        name, texts = "custom texts", list(texts)
        valid_texts = texts[-max(1, len(texts) // 20):] if valid_texts is None else valid_texts
    id_map = None
    if cfg.tokenizer == "gpt2":
        tok = load_gpt2_tokenizer()
        all_ids = np.concatenate(encode_all(tok, texts))
        freq = np.bincount(all_ids, minlength=tok.get_vocab_size())
        keep = np.lexsort((np.arange(freq.size), -freq))[:cfg.bpe_vocab - 1]
        keep = keep[freq[keep] > 0]
        id_map = np.full(tok.get_vocab_size(), keep.size, dtype=np.int64)  # everything else -> <other>
        id_map[keep] = np.arange(keep.size)
        gpt2_strings = gpt2_token_strings(tok)
        strings = [gpt2_strings[i] for i in keep] + [OTHER_TOKEN]
        vocab = len(strings)
    else:
        tok = train_bpe(texts, vocab_size=cfg.bpe_vocab, name="fallback-lm", unk="<unk>")
        strings = token_strings(tok)
        vocab = tok.get_vocab_size()

    def encode(batch: Sequence[str]) -> list[np.ndarray]:
        ids = encode_all(tok, batch)
        return ids if id_map is None else [id_map[x] for x in ids]

    texts_key = digest("\x00".join(texts))
    file_name = f"fallback-lm-{cfg.key(digest(texts_key, fallback_code_key()))}.npz"
    path = paths.cache_dir("pretrained") / file_name
    dev = torch.device(resolve_device(device))
    model_cfg = TransformerConfig(vocab_size=vocab, d=cfg.d, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                                  pos_encoding="rope", max_len=cfg.context)
    model = seeded(lambda: NTPTransformer(model_cfg), cfg.seed).to(dev)
    weights, cached = "trained", None
    if use_cache:  # checksummed (a truncated or altered file is trained again, with a warning)
        for source, where in (("cache", path), ("committed", committed_fallback_path(file_name))):
            if (cached := load_verified(where, required=("valid_ce",))) is not None:
                weights = source
                break
    if cached is not None:
        valid_ce = float(cached.pop("valid_ce"))
        model.load_state_dict({k: torch.from_numpy(v) for k, v in cached.items()})
    else:
        stream = torch.as_tensor(np.concatenate(encode(texts)), device=dev)
        valid = torch.as_tensor(np.concatenate(encode(valid_texts)), device=dev)
        if len(stream) <= cfg.context + 1 or len(valid) <= cfg.context + 1:
            raise ValueError(f"corpus too short for {cfg.context + 1}-token windows")
        valid_ce = fit_fallback(model, stream, valid, cfg, progress=progress)
        if use_cache:
            save_fallback_weights(path, model, valid_ce)
    model.eval()
    vocab_text = (f"GPT-2's tokenizer restricted to its {vocab - 1} most frequent tokens + {OTHER_TOKEN}"
                  if cfg.tokenizer == "gpt2" else f"a byte-level BPE of {vocab} tokens trained on the text")
    description = (
        f"fallback (not GPT-2): {cfg.n_layers}-layer d={cfg.d} transformer LM (pre-RMSNorm, SwiGLU, RoPE) "
        f"trained {cfg.steps} steps x {cfg.batch_size} windows of {cfg.context} tokens on {name} with "
        f"{vocab_text}; validation CE {valid_ce:.3f} nats/token; "
        + {"trained": "trained now", "cache": f"weights from the cache ({path.name})",
           "committed": f"the book's trained weights (results/models/fallback-lm/{file_name}, made by the "
                        "same code with `python -m ntputils.export_models --fallback`)"}[weights]
    )
    return PretrainedLM(model, strings, description, "fallback",
                        {"valid_ce": valid_ce, "tokenizer": tok, "id_map": id_map, "config": asdict(cfg),
                         "weights": weights, "file_name": file_name})


def load_pretrained_lm(name_or_path: str | os.PathLike | None = None, *, fallback: bool = True,
                       fallback_config: FallbackConfig | None = None,
                       fallback_texts: Sequence[str] | None = None, device: str = "auto",
                       progress: bool = True) -> PretrainedLM:
    """GPT-2 (see :func:`load_gpt2`) if available, else (``fallback=True``) :func:`train_fallback_lm`.

    Paper B, Sec. 5.1 and App. F.2.
    """
    try:
        model = load_gpt2(name_or_path, device=device)
    except PretrainedUnavailableError as err:
        if not fallback:
            raise
        lm = train_fallback_lm(fallback_config, texts=fallback_texts, device=device, progress=progress)
        lm.description = f"{lm.description} [GPT-2 unavailable: {str(err).split(';')[0]}]"
        return lm
    src = gpt2_source(name_or_path)
    tokenizer = None
    if model.config.vocab_size == GPT2_VOCAB:  # GPT-2's vocabulary: label it with the shared GPT-2 tokenizer
        from ntputils.data.corpora.gpt2_tokenizer import gpt2_token_strings, load_gpt2_tokenizer

        try:
            tokenizer = load_gpt2_tokenizer()
            tokens = gpt2_token_strings(tokenizer)
        except (OSError, ValueError):
            tokenizer = None
    if tokenizer is None:
        tokenizer = _folder_tokenizer(name_or_path)
        tokens = load_gpt2_tokens(name_or_path) or [str(i) for i in range(model.config.vocab_size)]
    cfg = model.config
    description = (f"GPT-2 {src!r}: {cfg.n_layer} layers, d={cfg.n_embd}, V={cfg.vocab_size}, "
                   f"{sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters")
    return PretrainedLM(model, tokens, description, "gpt2", {"tokenizer": tokenizer, "id_map": None})


def pretrained_or_fallback(name_or_path: str | os.PathLike | None = None,
                           **kwargs) -> tuple[np.ndarray, list[str], str]:
    """``(W, token strings, description)`` of GPT-2, or of the WikiText-2 fallback LM if GPT-2 is missing.

    ``kwargs`` go to :func:`load_pretrained_lm` (``fallback``, ``fallback_config``, ``device`` ...).

    Paper B, Sec. 5.1 and App. F.2 (Figs. 7, 15-17).
    """
    lm = load_pretrained_lm(name_or_path, **kwargs)
    return lm.W, lm.tokens, lm.description
