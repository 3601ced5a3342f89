"""Chapter d01's library (any corpus, any model folder): exact counting, the sparse proxy, model folders of
this book and of Hugging Face, the concept read-out, bad inputs, and ``ntpbook geometry``."""

import json
import lzma
import os
import re
import subprocess
import sys
from collections import Counter
from html import unescape
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from ntputils import cli
from ntputils.analysis.metrics import corr
from ntputils.analysis.model_geometry import (
    agreement_with_chance,
    concept_coordinates_of_logits,
    frequent_next_tokens,
    proxy_context_matrix,
    proxy_word_matrix,
    sign_agreement,
)
from ntputils.data.corpora.user_corpus import (
    CorpusError,
    corpus_contexts,
    load_tokenizer,
    read_documents,
    resolve_path,
)
from ntputils.geometry.spectral import centered_topk_svd
from ntputils.training.model_folder import (
    ModelFolderError,
    check_contexts,
    context_states,
    decoder,
    load_model_folder,
    save_model_folder,
    untrained_twin,
)
from ntputils.training.models import build_model

REPO = Path(__file__).resolve().parents[1]
A07_FOLDER = REPO / "results" / "models" / "a07-tinystories10"
transformers = pytest.importorskip("transformers")
from tiny_gpt2 import save_tiny_gpt2  # noqa: E402 - after the skip: it needs transformers


# ---------------------------------------------------------------------------------------------
# the corpus
# ---------------------------------------------------------------------------------------------
def test_documents_by_unit_from_files_and_folders(tmp_path):
    (tmp_path / "a.txt").write_text("One  story.\nStill one.\n<|endoftext|>\nTwo.\n")
    (tmp_path / "b.txt.xz").write_bytes(lzma.compress(b"para one\nline two\n\npara two\n"))
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.txt").write_text("never read")
    assert read_documents(tmp_path / "a.txt") == ["One story. Still one.", "Two."]  # auto: stories
    assert read_documents(tmp_path / "b.txt.xz") == ["para one line two", "para two"]  # auto: paragraphs
    assert read_documents(tmp_path / "b.txt.xz", unit="line") == ["para one", "line two", "para two"]
    assert read_documents(tmp_path, unit="file") == ["One story. Still one. <|endoftext|> Two.",
                                                     "para one line two para two"]
    assert read_documents(tmp_path, max_documents=3) == ["One story. Still one.", "Two.", "para one line two"]
    (tmp_path / "wiki.md").write_text(" = Title = \n \n First  line .\n \n Second\n")  # WikiText: " " lines
    assert read_documents(tmp_path / "wiki.md") == ["= Title =", "First line .", "Second"]


def test_bad_corpora_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="corpus: .*nowhere.txt does not exist"):
        read_documents(tmp_path / "nowhere.txt")
    (tmp_path / "empty.txt").write_text(" \n\n")
    with pytest.raises(CorpusError, match="empty corpus: .*empty.txt"):
        read_documents(tmp_path / "empty.txt")
    (tmp_path / "folder").mkdir()
    with pytest.raises(CorpusError, match="holds no text file"):
        read_documents(tmp_path / "folder")
    (tmp_path / "bad.txt.xz").write_bytes(b"not xz")
    with pytest.raises(CorpusError, match="bad.txt.xz is not UTF-8 text in xz"):
        read_documents(tmp_path / "bad.txt.xz")
    with pytest.raises(CorpusError, match="unit must be one of"):
        read_documents(tmp_path / "empty.txt", unit="sentence")


def test_data_prefix_is_the_data_folder(monkeypatch, tmp_path):
    (tmp_path / "x").mkdir()
    monkeypatch.setenv("NTP_DATA_DIR", str(tmp_path))
    assert resolve_path("data:x") == tmp_path / "x"


def brute_counts(seqs, lengths):
    """(context, next token) pairs counted with a Counter: the definition."""
    pairs = Counter()
    for s in seqs:
        for T in lengths:
            for i in range(len(s) - T):
                pairs[(tuple(s[i:i + T]), s[i + T])] += 1
    return pairs


@pytest.mark.parametrize("selection", ["first", "frequent"])
def test_contexts_are_counted_exactly(selection):
    rng = np.random.default_rng(0)
    seqs = [rng.integers(0, 5, size=n) for n in (40, 3, 25, 60)]  # one document shorter than a window
    cc = corpus_contexts(seqs, 7, [2, 3], selection=selection)
    want = brute_counts([s.tolist() for s in seqs], [2, 3])
    got = Counter()
    counts = cc.data.counts.tocoo()
    for z, j, n in zip(counts.row, counts.col, counts.data, strict=True):
        got[(cc.data.contexts[j], int(z))] += int(n)
    assert got == want
    assert cc.data.V == 7 and cc.windows == sum(want.values()) == cc.kept_windows
    assert cc.distinct == cc.data.m == len({c for c, _ in want})
    per_context = np.asarray(cc.data.counts.sum(axis=0)).ravel()
    if selection == "frequent":  # most frequent first
        assert np.all(np.diff(per_context) <= 0)
    kept = corpus_contexts(seqs, 7, [2, 3], n_contexts=5, selection=selection)
    assert kept.data.m == 5 and kept.data.contexts == cc.data.contexts[:5]
    assert kept.kept_windows == int(per_context[:5].sum())


def test_contexts_refuse_what_cannot_be_counted():
    with pytest.raises(CorpusError, match="no document is longer than the context length"):
        corpus_contexts([np.array([1, 2, 3])], 5, 3)
    with pytest.raises(CorpusError, match="not above the largest token id 9"):
        corpus_contexts([np.array([1, 9, 3, 4])], 5, 1)
    with pytest.raises(CorpusError, match="empty corpus"):
        corpus_contexts([np.array([], dtype=int)], 5, 1)
    with pytest.raises(CorpusError, match="distinct positive"):
        corpus_contexts([np.arange(5)], 5, [2, 2])


# ---------------------------------------------------------------------------------------------
# the data's geometry, sparse
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(60, 25), (12, 40)])  # V > m: the Gram factor; V <= m: S~ itself
def test_proxy_context_matrix_has_the_dense_proxys_correlations(shape):
    rng = np.random.default_rng(1)
    S = (rng.random(shape) < 0.15).astype(float)
    S[rng.integers(0, shape[0], shape[1]), np.arange(shape[1])] = 1  # every context has a next token
    dense = S - S.mean(axis=0, keepdims=True)
    X = proxy_context_matrix(sp.csc_array(S))
    assert X.shape[0] <= min(shape) and X.shape[1] == shape[1]
    np.testing.assert_allclose(X.T @ X, dense.T @ dense, atol=1e-9)
    np.testing.assert_allclose(corr(X), corr(dense), atol=1e-9)
    rows = np.array([3, 0, 7])
    np.testing.assert_allclose(proxy_word_matrix(sp.csc_array(S), rows), dense[rows].T, atol=1e-12)


def test_concepts_read_from_logits_that_are_the_proxy_agree_fully():
    rng = np.random.default_rng(2)
    S = (rng.random((30, 80)) < 0.2).astype(float)
    S[rng.integers(0, 30, 80), np.arange(80)] = 1
    S_tilde = S - S.mean(axis=0, keepdims=True)
    U, s, Vt = centered_topk_svd(sp.csc_array(S), 4)
    # a model whose logits are S~ (up to a constant per context, which centering removes): W H = S~ + 1 c^T
    W = np.c_[U * s, np.ones(30)]
    H = np.r_[Vt, rng.normal(size=(1, 80))]
    H = np.linalg.lstsq(W, S_tilde + 1.0, rcond=None)[0]
    C = concept_coordinates_of_logits(W, H, Vt)
    np.testing.assert_allclose(C, U * s, atol=1e-8)  # S~ v_k = sigma_k u_k (paper B eq. 2)
    assert sign_agreement(C, U) == 1.0
    assert agreement_with_chance(C, U, draws=10).chance < 0.8  # permuted words do not agree
    assert sign_agreement(-C, U) == 0.0 and sign_agreement(np.zeros_like(C), U) == 0.0
    occ = frequent_next_tokens(type("D", (), {"counts": sp.csc_array(S)})(), 5)
    assert occ.size == 5 and np.all(np.diff(occ) > 0)


# ---------------------------------------------------------------------------------------------
# model folders
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def book_folder(tmp_path_factory):
    model = build_model("transformer", seed=3, vocab_size=11, context_vocab_size=11, d=16, n_layers=1,
                        n_heads=2, max_len=4)
    folder = save_model_folder(model, tmp_path_factory.mktemp("book") / "m", meta={"step": 7})
    return model, folder


def test_a_book_folder_reads_back_the_same_model(book_folder):
    model, folder = book_folder
    fm = load_model_folder(folder, device="cpu")
    assert fm.kind == "ntp_transformer" and fm.window == 4 and fm.vocab_size == 11 and fm.meta == {"step": 7}
    contexts = [(1, 2, 3), (4, 5), (6, 7, 8, 9), (1, 2, 3)]
    H = context_states(fm, contexts, progress=False)
    with torch.no_grad():
        want = torch.stack([model.context_embeddings(torch.tensor([c]))[0] for c in contexts], dim=1)
    np.testing.assert_allclose(H, want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(decoder(fm), model.output.weight.detach().numpy())
    twin, again = untrained_twin(fm, seed=0), untrained_twin(fm, seed=0)
    assert not np.allclose(decoder(twin), decoder(fm))
    np.testing.assert_array_equal(decoder(twin), decoder(again))  # same seed, same control
    with pytest.raises(ModelFolderError, match="longer than the model's window of 4"):
        check_contexts(fm, [(1, 2, 3, 4, 5)])
    with pytest.raises(ModelFolderError, match="tokenizer does not match the model"):
        check_contexts(fm, [(1, 11)])


def test_a_changed_or_missing_model_folder_is_refused(book_folder, tmp_path):
    _, folder = book_folder
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in folder.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    raw = bytearray((copy / "model.safetensors").read_bytes())
    raw[-1] ^= 1
    (copy / "model.safetensors").write_bytes(bytes(raw))
    with pytest.raises(ModelFolderError, match="sha256 differs"):
        load_model_folder(copy)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_model_folder(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        load_model_folder(tmp_path / "empty")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}))
    with pytest.raises(ModelFolderError, match="is not a Hugging Face causal LM"):
        load_model_folder(tmp_path / "other")


@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory):
    """A 2-layer, d=32 GPT-2 with a 200-token byte-level BPE saved with save_pretrained, and a corpus."""
    texts = ["the cat sat on the mat and the dog sat on the log", "a girl named lily played in the park",
             "once upon a time there was a boat on the sea", "the sun was warm and the birds sang"] * 5
    root = tmp_path_factory.mktemp("hf")
    save_tiny_gpt2(root / "tiny-gpt2", texts, vocab_size=200, n_positions=8)
    corpus = root / "corpus.txt"
    corpus.write_text("\n\n".join(texts))
    return root / "tiny-gpt2", corpus


def test_a_hugging_face_folder_gives_h_w_and_its_untrained_twin(tiny_hf):
    folder, corpus = tiny_hf
    fm = load_model_folder(folder, device="cpu")
    tok = load_tokenizer(folder)
    assert fm.kind == "huggingface" and fm.window == 8 and tok.kind == "tokenizers"
    assert tok.vocab_size == fm.vocab_size and tok.bos is None
    cc = corpus_contexts(tok.encode(read_documents(corpus)), fm.vocab_size, [2, 3], strings=tok.strings)
    H = context_states(fm, cc.data.contexts, batch_size=7, progress=False)
    assert H.shape == (32, cc.data.m) and decoder(fm).shape == (fm.vocab_size, 32)
    with torch.no_grad():  # the last position's final-layer state (after ln_f), the lm_head's input
        ids = torch.tensor([cc.data.contexts[0]])
        want = fm.model.transformer(input_ids=ids).last_hidden_state[0, -1].numpy()
    np.testing.assert_allclose(H[:, 0], want, rtol=1e-5, atol=1e-6)
    twin = untrained_twin(fm, seed=1)
    assert twin.kind == "huggingface" and not np.allclose(decoder(twin), decoder(fm))
    with pytest.raises(ModelFolderError, match="longer than the model's window of 8"):
        context_states(fm, [tuple(range(9))])


def test_tokenizers_by_what_the_folder_holds(tmp_path):
    gpt2 = load_tokenizer("data:gpt2-tokenizer")  # the shared GPT-2 files, checksums verified
    assert gpt2.kind == "gpt2-bpe" and gpt2.vocab_size == 50257
    assert gpt2.encode(["Hello world"])[0].tolist() == [15496, 995]
    with pytest.raises(FileNotFoundError, match="holds none of tokenizer.json"):
        load_tokenizer(tmp_path)
    (tmp_path / "broken.model").write_bytes(b"not a model")
    with pytest.raises(CorpusError, match="is not a SentencePiece model"):
        load_tokenizer(tmp_path / "broken.model")


# ---------------------------------------------------------------------------------------------
# this book's a07 model folders
# ---------------------------------------------------------------------------------------------
def test_the_committed_a07_folders_are_one_run_and_read_back():
    steps = sorted(A07_FOLDER.glob("step-*"))
    assert [p.name for p in steps] == ["step-00000", "step-00050", "step-00200", "step-01500"]
    first = load_model_folder(steps[0], device="cpu")
    metas = [json.loads((p / "config.json").read_text())["meta"] for p in steps]
    assert [m["step"] for m in metas] == [0, 50, 200, 1500] and all(m["steps"] == 1500 for m in metas)
    twin = untrained_twin(first, seed=metas[0]["seed"])  # step 0 is the run's initialization
    np.testing.assert_array_equal(decoder(twin), decoder(first))
    tok = load_tokenizer(steps[-1])
    assert tok.kind == "sentencepiece" and tok.vocab_size == 64 and (tok.bos, tok.eos) == (1, 2)


def test_a07_geometry_through_the_folder_matches_the_a07_page():
    """sim(H, S~) on the first 1,000 contexts from the exported run equals a07's seed-0 value within the
    chapter's tolerance (0.02) when the committed a07-seeds table is current."""
    from ntputils.analysis.metrics import sim
    from ntputils.committed import shown_committed
    from ntputils.data.corpora import tinystories_bpe64

    pub = shown_committed("a07-seeds", REPO)
    if pub is None or pub["stale"]:
        pytest.skip("results/sweeps/a07-seeds is stale or missing")
    table = pub["table"]
    want = table[(table.seed == 0) & (table.metric == "a07_H_proxy_first")].value.iloc[0]
    fm = load_model_folder(A07_FOLDER / "step-01500", device="cpu")
    tok = load_tokenizer(A07_FOLDER / "step-01500")
    docs = read_documents("data:tinystories/tinystories_v1_train_head.txt.xz", max_documents=10)
    cc = corpus_contexts(tok.encode(docs), fm.vocab_size, 6, strings=tok.strings)
    ref = tinystories_bpe64(n_stories=10).data
    assert (abs(ref.counts - cc.data.counts)).sum() == 0 and cc.data.contexts == ref.contexts  # a07's data
    first = np.arange(1000)
    H = context_states(fm, [cc.data.contexts[j] for j in first], progress=False)
    got = sim(H, proxy_context_matrix(cc.data.S[:, first]))
    assert abs(got - want) <= 0.02, (got, want)


# ---------------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------------
def test_geometry_names_bad_arguments_before_any_run(tmp_path, capsys):
    model = str(A07_FOLDER / "step-01500")
    assert cli.main(["geometry", "--model", str(tmp_path / "nowhere"), "--corpus", "data:tinystories"]) == 2
    assert f"--model {tmp_path / 'nowhere'} does not exist" in capsys.readouterr().out
    assert cli.main(["geometry", "--model", model, "--corpus", str(tmp_path / "none.txt")]) == 2
    assert f"--corpus {tmp_path / 'none.txt'} does not exist" in capsys.readouterr().out
    args = ["geometry", "--model", model, "--corpus", "data:tinystories"]
    assert cli.main([*args, "-p", "unit='sentence'"]) == 2
    assert "unit='sentence' is not one of the chapter's values" in capsys.readouterr().out
    assert cli.main([*args, "-p", "no_such=1"]) == 2
    assert "no_such" in capsys.readouterr().out


OUTCOME = re.compile(r">\s*(reproduced|deviates|cannot fail|not run)\s*</td>")


@pytest.mark.slow
def test_geometry_on_an_untrained_model_reads_deviates(tiny_hf, tmp_path):
    """The untrained control: a randomly initialized GPT-2 must not pass the claims that training produced
    the data's geometry; the command writes the page."""
    folder, corpus = tiny_hf
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "ntputils.book", "geometry", "--model", str(folder),
                           "--corpus", str(corpus), "--context-length", "2", "--context-length", "3",
                           "--out", str(out), "-p", "n_concepts=3", "-p", "grid_concepts=2",
                           "-p", "max_mm_entries=0", "--device", "cpu"],
                          env=env, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    nb = json.loads((out / "tiny-gpt2.ipynb").read_text())
    tables = "".join("".join(o.get("data", {}).get("text/html", "")) for c in nb["cells"]
                     for o in c.get("outputs", []))
    outcomes = Counter(OUTCOME.findall(tables))
    assert outcomes["deviates"] >= 6 and outcomes["reproduced"] == 0, outcomes
    html = (out / "tiny-gpt2.html").read_text()
    assert "the theory is not computed" in html  # V x m above max_mm_entries: the proxy stands in
    # the model's two figures (A Figs. 1/3, B's orthants), and not a07's step sweep: another model's
    assert len(re.findall(r'<img src="data:image/png;base64,', html)) == 2
    assert "the committed sweep d01-steps of a07's folders is not drawn" in unescape(html)
