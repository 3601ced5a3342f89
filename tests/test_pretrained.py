"""Tests of ntputils.training.pretrained on a tiny GPT-2 saved to disk (the real loading path) and the
fallback LM."""

import re

import numpy as np
import pytest
import torch

from ntputils.training.models import build_model
from ntputils.training.pretrained import (
    FallbackConfig,
    PretrainedUnavailableError,
    decoder_weight,
    last_layer_context_embeddings,
    load_gpt2,
    load_pretrained_lm,
    prefix_context_embeddings,
    prefix_contexts,
    pretrained_or_fallback,
    sample_windows,
)

transformers = pytest.importorskip("transformers")
from tiny_gpt2 import save_tiny_gpt2  # noqa: E402 - after the skip: it needs transformers

TEXTS = [
    "the cat sat on the mat and the dog sat on the log",
    "a little girl named lily liked to play in the park with her dog",
    "once upon a time there was a tiny boat on a big blue sea",
    "the sun was warm and the birds sang in the tall green trees",
] * 5



@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    """A 2-layer, d=32 GPT-2 with a 300-token byte-level BPE, written with save_pretrained."""
    folder = tmp_path_factory.mktemp("tiny-gpt2")
    return folder, save_tiny_gpt2(folder, TEXTS, vocab_size=300, n_positions=32)


def test_load_gpt2_from_a_local_folder_and_env(tiny_gpt2, monkeypatch):
    folder, vocab = tiny_gpt2
    model = load_gpt2(folder, device="cpu")
    W = decoder_weight(model)
    assert W.shape == (vocab, 32) and W.dtype == np.float32
    np.testing.assert_array_equal(W, model.transformer.wte.weight.detach().numpy())  # tied decoder
    monkeypatch.setenv("NTP_GPT2_PATH", str(folder))
    np.testing.assert_array_equal(decoder_weight(load_gpt2(device="cpu")), W)


def test_missing_gpt2_raises_a_clear_error(tmp_path):
    with pytest.raises(PretrainedUnavailableError, match="NTP_GPT2_PATH"):
        load_gpt2(tmp_path)  # an existing folder without weights: no network is tried


def test_context_embeddings_reproduce_gpt2_logits(tiny_gpt2):
    folder, vocab = tiny_gpt2
    model = load_gpt2(folder, device="cpu")
    contexts = [(5, 9, 30), (7,), (100, 2, 3, 4, 5, 6), (11, 12, 13)]
    H = last_layer_context_embeddings(model, contexts, batch_size=2, progress=False)
    assert H.shape == (32, 4)
    L = decoder_weight(model) @ H  # V x m logits of the NTP view
    with torch.no_grad():
        for j, c in enumerate(contexts):
            logits = model(torch.tensor([c])).logits[0, -1].numpy()
            np.testing.assert_allclose(L[:, j], logits, atol=1e-4)


def test_prefix_embeddings_equal_embeddings_of_the_prefixes(tiny_gpt2):
    folder, vocab = tiny_gpt2
    model = load_gpt2(folder, device="cpu")
    windows = sample_windows(np.arange(200) % vocab, n_sequences=5, length=11, seed=0)
    contexts, next_tokens = prefix_contexts(windows)
    assert len(contexts) == 50 and [len(c) for c in contexts[:10]] == list(range(1, 11))
    np.testing.assert_array_equal(next_tokens[:10], windows[0, 1:])
    H_fast = prefix_context_embeddings(model, windows, batch_size=2, progress=False)
    H_slow = last_layer_context_embeddings(model, contexts, progress=False)
    np.testing.assert_allclose(H_fast, H_slow, atol=1e-5)


def test_prefix_embeddings_of_our_transformer():
    model = build_model("transformer", vocab_size=20, d=16, n_layers=2, n_heads=2, seed=0).eval()
    windows = sample_windows(np.arange(100) % 20, n_sequences=3, length=5, seed=1)
    contexts, _ = prefix_contexts(windows)
    np.testing.assert_allclose(prefix_context_embeddings(model, windows, progress=False),
                               last_layer_context_embeddings(model, contexts, progress=False), atol=1e-5)


def test_sample_windows_stay_inside_documents():
    docs = [np.arange(0, 15), np.arange(100, 104), np.arange(200, 230)]  # the middle one is too short
    w = sample_windows(docs, n_sequences=20, length=6, seed=3)
    assert w.shape == (20, 6)
    assert (np.diff(w, axis=1) == 1).all()  # consecutive tokens of one document
    assert not ((w >= 100) & (w < 104)).any()
    np.testing.assert_array_equal(w, sample_windows(docs, n_sequences=20, length=6, seed=3))
    assert len({tuple(r) for r in w}) == 20  # without replacement when possible
    with pytest.raises(ValueError, match="no document"):
        sample_windows([np.arange(3)], n_sequences=2, length=6)
    with pytest.raises(ValueError, match="empty corpus"):
        sample_windows([], n_sequences=2)


def test_fallback_is_a_trained_lm_and_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("NTP_CACHE_DIR", str(tmp_path / "cache"))
    cfg = FallbackConfig(bpe_vocab=300, d=16, n_layers=1, n_heads=2, context=8, batch_size=8, steps=60,
                         lr=1e-2, warmup_steps=5)
    W, tokens, description = pretrained_or_fallback(tmp_path, fallback_config=cfg, fallback_texts=TEXTS,
                                                    device="cpu", progress=False)
    assert description.startswith("fallback (not GPT-2)") and "GPT-2 unavailable" in description
    assert W.shape == (len(tokens), 16)
    assert any(t.startswith("#") for t in tokens)  # word-start marker of the corpora convention
    lm = load_pretrained_lm(tmp_path, fallback_config=cfg, fallback_texts=TEXTS, device="cpu", progress=False)
    np.testing.assert_array_equal(lm.W, W)  # second call: loaded from the cache, not retrained
    assert lm.extra["valid_ce"] < np.log(len(tokens))  # better than uniform: it learned the text
    with pytest.raises(PretrainedUnavailableError):
        load_pretrained_lm(tmp_path, fallback=False)


def test_gpt2_description_and_tokens(tiny_gpt2):
    folder, vocab = tiny_gpt2
    W, tokens, description = pretrained_or_fallback(folder, device="cpu")
    assert description.startswith("GPT-2") and W.shape == (vocab, 32) and len(tokens) == vocab
    assert "#cat" in tokens or "#the" in tokens


def test_gpt2_lm_encodes_with_its_tokenizer(tiny_gpt2):
    folder, vocab = tiny_gpt2
    lm = load_pretrained_lm(folder, device="cpu", progress=False)
    ids = lm.encode(["the cat sat on the mat"])[0]
    assert ids.dtype == np.int64 and ids.max() < vocab
    assert "".join(lm.tokens[i] for i in ids).replace("#", " ").strip() == "the cat sat on the mat"


def load_tiny_fallback(folder):
    """A 1-layer d=16 fallback LM of TEXTS (30 steps), GPT-2 missing from ``folder``: trained or loaded."""
    cfg = FallbackConfig(bpe_vocab=300, d=16, n_layers=1, n_heads=2, context=8, batch_size=8, steps=30,
                         lr=1e-2, warmup_steps=5)
    return load_pretrained_lm(folder, fallback_config=cfg, fallback_texts=TEXTS, device="cpu", progress=False)


def test_a_damaged_fallback_cache_is_trained_again_not_loaded(tmp_path, monkeypatch):
    import ntputils.training.pretrained as pretrained
    from ntputils.data.corpora.cache import CHECKSUM, CacheWarning

    monkeypatch.setenv("NTP_CACHE_DIR", str(tmp_path / "cache"))

    def load():
        return load_tiny_fallback(tmp_path)

    first = load()
    (path,) = (tmp_path / "cache" / "pretrained").glob("fallback-lm-*.npz")
    losses = []
    real = pretrained.lm_loss
    monkeypatch.setattr(pretrained, "lm_loss", lambda *a: losses.append(1) or real(*a))
    np.testing.assert_array_equal(load().W, first.W)
    assert losses == []  # intact: loaded, not trained
    data = path.read_bytes()
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    weight = next(k for k in arrays if k != CHECKSUM and arrays[k].dtype.kind == "f" and arrays[k].ndim == 2)

    def altered():  # a valid file whose tensor no longer matches the checksum saved with it
        np.savez(path.with_suffix(""), **{**arrays, weight: arrays[weight] + 1.0})

    unchecked = {k: v for k, v in arrays.items() if k != CHECKSUM}
    damages = {"altered": altered,
               "truncated": lambda: path.write_bytes(data[: len(data) // 2]),
               "without its checksum": lambda: np.savez(path.with_suffix(""), **unchecked)}
    for what, damage in damages.items():
        damage()
        losses.clear()
        with pytest.warns(CacheWarning, match=re.escape(f"cache entry {path}")):
            np.testing.assert_array_equal(load().W, first.W)  # trained again, to the same weights
        assert losses, what


def test_committed_fallback_weights_are_loaded_and_only_for_the_same_code(tmp_path, monkeypatch):
    """With no cached copy, the weights committed under the same key (configuration, text, training code)
    are loaded, checksum verified, and the description says so; under other training code (another
    :func:`fallback_code_key`) the same file is not loaded: the model is trained."""
    import shutil

    import ntputils.training.pretrained as pretrained

    monkeypatch.setenv("NTP_CACHE_DIR", str(tmp_path / "cache"))
    committed = tmp_path / "committed"
    monkeypatch.setattr(pretrained, "committed_fallback_path", lambda name: committed / name)

    def load():
        return load_tiny_fallback(tmp_path)

    trained = load()
    assert trained.extra["weights"] == "trained" and "trained now" in trained.description
    (cached,) = (tmp_path / "cache" / "pretrained").glob("fallback-lm-*.npz")
    assert cached.name == trained.extra["file_name"]
    committed.mkdir()
    shutil.move(cached, committed / cached.name)  # the cache is empty now, the committed copy is there
    losses = []
    real = pretrained.lm_loss
    monkeypatch.setattr(pretrained, "lm_loss", lambda *a: losses.append(1) or real(*a))
    lm = load()
    assert losses == [] and lm.extra["weights"] == "committed"  # loaded, not trained
    assert f"results/models/fallback-lm/{cached.name}" in lm.description
    np.testing.assert_array_equal(lm.W, trained.W)

    monkeypatch.setattr(pretrained, "fallback_code_key", lambda: "other-code")
    other = load()
    assert losses and other.extra["weights"] == "trained" and other.extra["file_name"] != cached.name


def test_the_training_code_key_reads_the_files_not_the_names(monkeypatch):
    """The key of the training code comes from the package's source files, so a function replaced at run
    time (a test's spy) leaves it unchanged; it is 12 hex digits."""
    import ntputils.training.pretrained as pretrained

    key = pretrained.fallback_code_key()
    monkeypatch.setattr(pretrained, "lm_loss", lambda *a: None)
    assert pretrained.fallback_code_key() == key and re.fullmatch(r"[0-9a-f]{12}", key)


@pytest.mark.slow
def test_the_books_fallback_lm_is_committed_for_the_current_code(tmp_path, monkeypatch):
    """Chapter b07's fallback LM (default configuration, WikiText-2) loads from results/models/fallback-lm/
    without training: the committed weights have the key of today's configuration, text and training code.
    If this fails, the training code changed: `python -m ntputils.export_models --fallback` remakes them."""
    import ntputils.training.pretrained as pretrained

    monkeypatch.setenv("NTP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(pretrained, "fit_fallback", lambda *a, **k: pytest.fail(
        "no committed weights for the current code: run `python -m ntputils.export_models --fallback`"))
    lm = pretrained.train_fallback_lm(device="cpu", progress=False)
    assert lm.extra["weights"] == "committed"
    folder = pretrained.committed_fallback_path(lm.extra["file_name"]).parent
    assert [p.name for p in folder.glob("*.npz")] == [lm.extra["file_name"]]  # no file of an older key
