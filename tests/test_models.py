"""Tests of ntputils.training.models: interface, causality, padding, seeding, sizes, CNN data."""

import pytest
import torch

from ntputils.training.models import (
    LSTMConfig,
    NTPModel,
    TransformerConfig,
    build_model,
    imbalanced_digits,
    left_pad,
    load_mnist,
)


def tiny_transformer(pos_encoding="none", n_layers=2, seed=0, **kw):
    return build_model("transformer", vocab_size=11, context_vocab_size=9, d=16, n_layers=n_layers, n_heads=2,
                       pos_encoding=pos_encoding, max_len=8, seed=seed, **kw)


def tiny_models():
    yield tiny_transformer("none")
    yield tiny_transformer("rope")
    yield tiny_transformer("learned")
    yield build_model("lstm", vocab_size=11, context_vocab_size=9, d=16, seed=0)


@pytest.mark.parametrize("model", list(tiny_models()), ids=["tf-none", "tf-rope", "tf-learned", "lstm"])
def test_interface_shapes_and_logits_are_W_h(model: NTPModel):
    tokens = torch.randint(0, 9, (7, 5), generator=torch.Generator().manual_seed(0))
    h = model.context_embeddings(tokens)
    W = model.output_weight()
    logits = model(tokens)
    assert h.shape == (7, 16) and W.shape == (11, 16) and logits.shape == (7, 11)
    torch.testing.assert_close(logits, h @ W.T)  # no output bias: L = W H exactly


def test_cnn_interface():
    model = build_model("cnn", n_classes=4, channels=(8, 16, 16), seed=0)
    images = torch.rand(5, 1, 8, 8, generator=torch.Generator().manual_seed(0))
    assert model.context_embeddings(images).shape == (5, 16)
    assert model.output_weight().shape == (4, 16)
    torch.testing.assert_close(model(images), model.context_embeddings(images) @ model.output_weight().T)
    with pytest.raises(ValueError, match="images must be"):
        model(torch.rand(5, 8, 8))


@pytest.mark.parametrize("pos", ["none", "rope", "learned"])
def test_causal_mask_future_tokens_do_not_change_earlier_positions(pos):
    model = tiny_transformer(pos)
    tokens = torch.tensor([[1, 2, 3, 4, 5, 6]])
    changed = tokens.clone()
    changed[0, 3] = 8
    a, b = model.hidden_states(tokens), model.hidden_states(changed)
    torch.testing.assert_close(a[:, :3], b[:, :3], rtol=0, atol=0)
    assert (a[:, 3:] - b[:, 3:]).abs().amax(dim=-1).min() > 1e-6  # the change reaches every later position


@pytest.mark.parametrize("pos", ["none", "rope", "learned"])
def test_prefix_embedding_equals_hidden_state_at_that_position(pos):
    model = tiny_transformer(pos)
    tokens = torch.tensor([[4, 1, 7, 7, 2, 0]])
    states = model.hidden_states(tokens)
    for t in range(1, 7):
        torch.testing.assert_close(model.context_embeddings(tokens[:, :t]), states[:, t - 1])


def test_without_positions_only_causality_sees_order():
    """1 layer, no positional encoding: the last position attends to a *set* -> invariant to permuting the
    earlier tokens; with 2 layers the earlier positions' causal states make it order-sensitive."""
    tokens = torch.tensor([[1, 2, 3, 4, 5]])
    permuted = torch.tensor([[3, 1, 4, 2, 5]])
    one = tiny_transformer("none", n_layers=1)
    torch.testing.assert_close(one.context_embeddings(tokens), one.context_embeddings(permuted))
    two = tiny_transformer("none", n_layers=2)
    assert (two.context_embeddings(tokens) - two.context_embeddings(permuted)).abs().max() > 1e-5


@pytest.mark.parametrize("kind,pos", [("transformer", "none"), ("transformer", "rope"), ("lstm", None)])
def test_left_padding_gives_the_unpadded_embedding(kind, pos):
    model = tiny_transformer(pos) if kind == "transformer" else build_model("lstm", vocab_size=11,
                                                                             context_vocab_size=9, d=16)
    contexts = [(1, 2, 3), (4, 5, 6, 7, 8), (2,)]
    padded = left_pad(contexts, model.pad_id)
    assert padded.shape == (3, 5) and padded[0, 0] == model.pad_id == 9
    h = model.context_embeddings(padded)
    for i, c in enumerate(contexts):
        torch.testing.assert_close(h[i], model.context_embeddings(torch.tensor([c]))[0], atol=1e-6, rtol=1e-5)


def test_left_pad_fixed_length_unchanged_and_errors():
    assert torch.equal(left_pad([(1, 2), (3, 4)], 99), torch.tensor([[1, 2], [3, 4]]))
    with pytest.raises(ValueError, match="empty list"):
        left_pad([], 0)
    with pytest.raises(ValueError, match="length 0"):
        left_pad([(1,), ()], 0)


def test_build_model_is_seeded_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a, b, c = tiny_transformer(seed=5), tiny_transformer(seed=5), tiny_transformer(seed=6)
    assert torch.equal(torch.rand(3), expected)
    for (name, pa), pb in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(pa, pb), name
    assert not torch.equal(a.output_weight(), c.output_weight())


def test_init_scales():
    model = build_model("transformer", vocab_size=300, d=128, n_layers=8, n_heads=4, seed=0)
    assert model.output_weight().std().item() == pytest.approx(0.02, rel=0.05)
    assert model.blocks[0].attn.proj.weight.std().item() == pytest.approx(0.02 / 4, rel=0.05)
    assert model.blocks[0].ffn.up.weight.std().item() == pytest.approx(0.02 / 4, rel=0.05)


def test_sizes_follow_the_authors_rules():
    fig1 = TransformerConfig(vocab_size=104)  # 4 layers, d=128, 6 heads
    assert (fig1.head_dim, fig1.hidden, fig1.n_layers, fig1.pos_encoding) == (20, 512, 4, "none")
    fig3 = TransformerConfig(vocab_size=64, d=512, n_layers=12, n_heads=6, multiple_of=32)
    assert (fig3.head_dim, fig3.hidden) == (84, 1376)
    assert TransformerConfig(vocab_size=5, ffn_hidden=7).hidden == 7
    assert LSTMConfig(vocab_size=5).n_layers == 2


def test_bad_configs_raise_value_error():
    with pytest.raises(ValueError, match="pos_encoding"):
        TransformerConfig(vocab_size=5, pos_encoding="alibi")
    with pytest.raises(ValueError, match="too small"):
        TransformerConfig(vocab_size=5, d=4, n_heads=4)
    with pytest.raises(ValueError, match="unknown model kind"):
        build_model("mlp", vocab_size=5)
    with pytest.raises(ValueError, match="exceeds max_len"):
        tiny_transformer()(torch.zeros(1, 9, dtype=torch.long))


def test_imbalanced_digits_offline():
    x, y = imbalanced_digits(seed=0)
    assert x.shape == (220, 1, 8, 8) and 0 <= float(x.min()) and float(x.max()) <= 1
    assert torch.bincount(y).tolist() == [100, 100, 10, 10]
    x2, _ = imbalanced_digits(seed=0)
    assert torch.equal(x, x2)
    with pytest.raises(ValueError, match="asked for"):
        imbalanced_digits(classes=(0, 1), per_class=(1000, 1))


def test_mnist_loader_names_the_missing_file(tmp_path):
    from ntputils.data.mnist import MNISTFileError

    with pytest.raises(MNISTFileError, match="train-images-idx3-ubyte.gz"):
        load_mnist(str(tmp_path))
