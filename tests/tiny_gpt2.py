"""A tiny GPT-2 written to disk with ``save_pretrained`` (the real Hugging Face loading path): 2 layers,
d = 32, a byte-level BPE trained on a few sentences. Shared by the tests of the pretrained-model loaders
(test_pretrained) and of model folders (test_your_model)."""

from pathlib import Path


def save_tiny_gpt2(folder: Path, texts: list[str], vocab_size: int, n_positions: int) -> int:
    """Write the tokenizer and a randomly initialized (seed 0) GPT-2 into ``folder``; returns the vocabulary
    size."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(folder)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=2, n_positions=n_positions,
                                     vocab_size=tok.get_vocab_size())
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)
    return tok.get_vocab_size()
