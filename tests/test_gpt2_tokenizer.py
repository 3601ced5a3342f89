"""Tests for ntputils.data.corpora.gpt2_tokenizer: GPT-2's byte-level BPE read offline, readable tokens."""

from __future__ import annotations

import json
import lzma

import pytest

from ntputils import paths
from ntputils.data.corpora.gpt2_tokenizer import (
    TokenizerChecksumError,
    TokenizerFileError,
    byte_decoder,
    gpt2_token_strings,
    is_layout_token,
    load_gpt2_tokenizer,
    readable_token,
    token_bytes,
)

REAL = paths.data_dir() / "gpt2-tokenizer"


def test_byte_map_is_a_bijection_onto_printable_characters():
    table = byte_decoder()
    assert sorted(table.values()) == list(range(256))
    assert all(ch.isprintable() and not ch.isspace() for ch in table)
    assert token_bytes("Ġthe") == b" the" and token_bytes("Ċ") == b"\n"
    with pytest.raises(ValueError, match="not a byte-level"):
        token_bytes(" x")  # a real space is not in GPT-2's alphabet


def test_readable_tokens():
    assert readable_token("Ġday") == "#day"
    assert readable_token("ing") == "ing"
    assert readable_token("Ċ") == "⏎" and readable_token("ĊĊ") == "⏎⏎"
    assert readable_token("Ġ") == "#"
    assert readable_token("ĠcafÃ©") == "#café"  # UTF-8 is decoded, no mojibake
    assert readable_token("âĢ") == "<e2 80>"  # an incomplete UTF-8 sequence is shown as hex bytes
    assert is_layout_token("⏎") and is_layout_token("#") and is_layout_token("#⏎")
    assert not is_layout_token("#day") and not is_layout_token("<e2 80>")


def _tiny_files(folder, merges=("Ġ t", "Ġt h")):
    vocab = {ch: i for i, ch in enumerate(sorted(byte_decoder()))}
    for m in merges:
        vocab["".join(m.split())] = len(vocab)
    vocab = {**vocab, **{f"<pad{i}>": len(vocab) + i for i in range(50257 - len(vocab) - 1)}}
    vocab["<|endoftext|>"] = len(vocab)
    (folder / "encoder.json").write_text(json.dumps(vocab))
    (folder / "vocab.bpe").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")


def test_tiny_tokenizer_fixture_and_errors(tmp_path):
    with pytest.raises(TokenizerFileError, match="encoder.json.xz"):
        load_gpt2_tokenizer(tmp_path)
    _tiny_files(tmp_path)
    with pytest.raises(TokenizerChecksumError, match="sha256"):
        load_gpt2_tokenizer(tmp_path)  # not the documented GPT-2 bytes
    tok = load_gpt2_tokenizer(tmp_path, verify=False)
    enc = tok.encode("a th")
    strings = gpt2_token_strings(tok)
    assert [strings[i] for i in enc.ids] == ["a", "#th"]
    assert tok.decode(enc.ids) == "a th"
    (tmp_path / "vocab.bpe").unlink()
    with pytest.raises(TokenizerFileError, match="vocab.bpe"):
        load_gpt2_tokenizer(tmp_path, verify=False)


def test_xz_encoder_is_read(tmp_path):
    _tiny_files(tmp_path)
    raw = (tmp_path / "encoder.json").read_bytes()
    (tmp_path / "encoder.json").unlink()
    with lzma.open(tmp_path / "encoder.json.xz", "wb") as f:
        f.write(raw)
    assert load_gpt2_tokenizer(tmp_path, verify=False).get_vocab_size() == 50257
    xz = tmp_path / "encoder.json.xz"
    xz.write_bytes(xz.read_bytes()[: xz.stat().st_size // 2])  # a truncated download
    for verify in (True, False):
        with pytest.raises(TokenizerChecksumError, match=r"encoder\.json\.xz: cannot be read \(EOFError"):
            load_gpt2_tokenizer(tmp_path, verify=verify)


@pytest.mark.skipif(not (REAL / "vocab.bpe").exists(), reason="shared GPT-2 tokenizer files not present")
def test_real_gpt2_tokenizer_encodes_as_gpt2():
    tok = load_gpt2_tokenizer()  # checksums verified
    enc = tok.encode("Hello world, the cat sat on the mat.")
    assert enc.ids == [15496, 995, 11, 262, 3797, 3332, 319, 262, 2603, 13]
    assert tok.decode(enc.ids) == "Hello world, the cat sat on the mat."
    assert tok.token_to_id("<|endoftext|>") == 50256 and tok.get_vocab_size() == 50257
    strings = gpt2_token_strings(tok)
    assert strings[262] == "#the" and strings[198] == "⏎" and strings[50256] == "<|endoftext|>"
    assert not any("Ġ" in s or "Ċ" in s for s in strings[:50000])  # no raw byte-level spelling left
