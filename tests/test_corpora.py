"""Tests of ntputils.data.corpora: readers (local, online stub, errors), every dataset's sizes and
invariants."""

from __future__ import annotations

import lzma
from pathlib import Path

import numpy as np
import pytest

from ntputils import paths
from ntputils.data.corpora import (
    ORGANISM_CLASSES,
    ORGANISM_TABLE,
    ChecksumError,
    DataUnavailableError,
    classify,
    organism,
    organism_attribute_classes,
    paper_a_synthetic,
    paper_a_tinystories,
    paper_a_tinystories_details,
    paper_b_text,
    read_template_sentences,
    read_tinystories,
    read_tinystories_lines,
    read_wikitext,
    readers,
    tinystories_bpe64,
    word_classes,
)
from ntputils.data.corpora.ngrams import Corpus
from ntputils.data.corpora.variants import (
    SYNONYMS,
    expand_contexts,
    noun_or_adjective,
    synonym_variants,
    tense_variant,
)

SHARED = paths.data_dir()
needs_shared = pytest.mark.skipif(not (SHARED / "tinystories").is_dir(), reason="shared/data not present")


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "cache"))


def _col_sums(data) -> np.ndarray:  # noqa: ANN001
    return np.asarray(data.P.sum(axis=0)).ravel()


def _write_xz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(path, "wt", encoding="utf-8") as f:
        f.write(text)


@pytest.fixture
def small_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tiny data root: generated TinyStories-like stories and WikiText-like lines."""
    monkeypatch.setenv(readers.VERIFY_ENV, "0")  # user-supplied data: opt out of the sha256 check
    rng = np.random.default_rng(0)
    names, pets = ["Lily", "Tim", "Sue", "Ben"], ["dog", "cat", "bird", "fish"]
    verbs = ["played with", "fed", "found", "liked"]
    stories = []
    for _ in range(240):
        n, p, v = rng.choice(names), rng.choice(pets), rng.choice(verbs)
        stories.append(f"Once upon a time, {n} had a {p}.\n{n} {v} the {p} every day. The {p} was happy.")
    root = tmp_path / "data"
    for k, name in enumerate(readers.TINYSTORIES_FILES):
        chunk = stories[k * 80:(k + 1) * 80]
        _write_xz(root / "tinystories" / f"{name}.txt.xz", "".join(f"{s}\n<|endoftext|>\n" for s in chunk))
    lines = [" = Birds = ", " "]
    for i in range(200):
        lines.append(f" The bird flew {i % 7} km in 19{i % 90 + 10} , and <unk> sang @-@ loudly . ")
    _write_xz(root / "wikitext-2" / "train.txt.xz", "\n".join(lines) + "\n")
    monkeypatch.setenv(paths.DATA_ENV, str(root))
    return root


# ----------------------------------------------------------------------------------------------
# readers
# ----------------------------------------------------------------------------------------------


@needs_shared
def test_read_tinystories_local_sample() -> None:
    stories = read_tinystories()
    assert len(stories) == 5042
    assert stories[0].startswith("One day, a little girl named Lily found a needle")
    assert all("<|endoftext|>" not in s for s in stories[:50])
    assert len(read_tinystories(max_stories=7)) == 7
    lines = read_tinystories_lines(10)
    assert len(lines) == 10 and lines[3] == "<|endoftext|>"


@needs_shared
def test_read_with_checksum_and_wikitext_units() -> None:
    assert len(read_tinystories(files=["tinystories_v1_valid_head"], verify=True)) == 1000
    lines = read_wikitext("valid", verify=True)
    assert len(lines) == 3760 - 1299  # README: lines minus blank lines
    articles = read_wikitext("valid", unit="articles")
    assert len(articles) == sum(1 for ln in lines if readers.is_heading(ln) and not ln.startswith("= ="))
    assert len(read_template_sentences()) == 160


def test_checksum_mismatch_raises(tmp_path: Path) -> None:
    _write_xz(tmp_path / "tinystories_v1_valid_head.txt.xz", "A story.\n<|endoftext|>\n")
    assert read_tinystories(tmp_path, files=["tinystories_v1_valid_head"], verify=False) == ["A story."]
    with pytest.raises(ChecksumError):
        read_tinystories(tmp_path, files=["tinystories_v1_valid_head"], verify=True)
    with pytest.raises(ChecksumError):  # verified by default
        read_tinystories(tmp_path, files=["tinystories_v1_valid_head"])


def test_missing_data_dir_names_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path / "nowhere"))

    def offline(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise ImportError("No module named 'datasets'")

    monkeypatch.setattr(readers, "_hf_load", offline)
    for call in (read_tinystories, lambda: read_wikitext("train"), read_template_sentences,
                 lambda: read_tinystories_lines(5)):
        with pytest.raises(DataUnavailableError, match="NTP_DATA_DIR"):
            call()


def test_online_branch_uses_the_hub_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path / "nowhere"))
    calls = []

    def fake(name, config=None, split="train", streaming=False):  # noqa: ANN001, ANN202
        calls.append((name, config, split, streaming))
        if name == "roneneldan/TinyStories":
            return iter([{"text": f"Story {i}.\n\nSecond paragraph."} for i in range(10)])
        return {"text": [" = Title = \n", " \n", " Some text . \n", " More text . \n"]}

    monkeypatch.setattr(readers, "_hf_load", fake)
    assert read_tinystories(max_stories=3) == [f"Story {i}.\n\nSecond paragraph." for i in range(3)]
    assert read_tinystories_lines(4) == ["Story 0.", "Second paragraph.", "<|endoftext|>", "Story 1."]
    assert read_wikitext("valid") == ["= Title =", "Some text .", "More text ."]
    assert read_wikitext("valid", unit="articles") == ["= Title =\nSome text .\nMore text ."]
    assert ("wikitext", "wikitext-2-v1", "validation", False) in calls
    assert calls[0] == ("roneneldan/TinyStories", None, "train", True)


def test_reader_argument_errors() -> None:
    with pytest.raises(ValueError, match="split"):
        read_wikitext("dev")
    with pytest.raises(ValueError, match="unknown TinyStories file"):
        read_tinystories(files=["nope"])
    with pytest.raises(ValueError, match="max_stories"):
        read_tinystories(max_stories=0)


# ----------------------------------------------------------------------------------------------
# paper A
# ----------------------------------------------------------------------------------------------


@needs_shared
def test_paper_a_synthetic_recipe() -> None:
    data = paper_a_synthetic()
    assert (data.m, data.V, data.n) == (16, 30, 71)
    assert data.context_str(0) == "lily wants to try the"
    assert np.all(data.support_sizes == 3)
    assert set(np.unique(data.counts.data)) <= {1, 2}
    np.testing.assert_allclose(_col_sums(data), 1.0)
    # every context with enough prioritized endings keeps them: both "wants to ... the" share soup/game/movie
    j_try, j_start = 0, [j for j in range(data.m) if data.context_str(j) == "lily wants to start the"][0]
    assert {data.vocab[z] for z in data.counts[:, [j_try]].indices} == {"soup", "game", "movie"}
    assert {data.vocab[z] for z in data.counts[:, [j_start]].indices} == {"soup", "game", "movie"}
    # entropy bound of the recipe (each support: 3 tokens, counts in {1, 2})
    assert data.entropy >= -(2 * 0.25 * np.log(0.25) + 0.5 * np.log(0.5)) - 1e-12
    again = paper_a_synthetic(use_cache=False)
    assert (again.counts != data.counts).nnz == 0


@needs_shared
def test_paper_a_tinystories_variants_share_supports() -> None:
    details = paper_a_tinystories_details()
    data = details.data
    assert 300 <= data.m <= 450 and 80 <= data.V <= 130
    np.testing.assert_allclose(_col_sums(data), 1.0)
    assert set(np.unique(data.counts.data)) <= {1, 2, 3, 4}
    S = data.S.toarray()
    originals = {int(details.origin[j]): j for j in range(data.m) if details.kind[j] == "original"}
    for j in range(data.m):
        np.testing.assert_array_equal(S[:, j], S[:, originals[int(details.origin[j])]])
    kinds = set(details.kind)
    assert {"original", "tense", "synonym", "wordnet"} <= kinds
    # the WordNet step adds variants of the noun "friends" (friend.n senses, e.g. "ally", "acquaintance")
    wn_contexts = {data.context_str(j) for j in range(data.m) if details.kind[j] == "wordnet"}
    assert any(c.startswith("ally ") for c in wn_contexts)
    same = paper_a_tinystories(use_cache=False)
    assert (same.counts != data.counts).nnz == 0
    other = paper_a_tinystories(seed=7, use_cache=False)
    assert (other.S != data.S).nnz == 0 and (other.counts != data.counts).nnz > 0


def test_noun_or_adjective_and_synonym_kinds() -> None:
    assert noun_or_adjective("friends") and noun_or_adjective("happy") and noun_or_adjective("ben")
    assert not any(noun_or_adjective(w) for w in ("there", "once", "she", "the", "one", ",", "loved", "said"))
    assert not noun_or_adjective("play", previous="to") and noun_or_adjective("play", previous="the")
    fake = {"friends": ("pals", "friends", "mates")}.get
    out = synonym_variants(("friends", ".", "they", "like", "to"), wordnet=lambda w: fake(w, ()))
    assert out == [(("pals", ".", "they", "like", "to"), "wordnet"),
                   (("mates", ".", "they", "like", "to"), "wordnet")]
    # hand-table words take the table, not WordNet; the last two positions are never changed
    out = synonym_variants(("a", "little", "girl", "named", "lily"), wordnet=lambda w: ("x",))
    kinds = {k for _, k in out}
    assert kinds == {"synonym"} and all(v[3:] == ("named", "lily") for v, _ in out)
    assert len(out) == len(SYNONYMS["little"]) + len(SYNONYMS["girl"])


def test_variant_rules() -> None:
    assert tense_variant(("lily", ".", "she", "loved", "to")) == ("lily", ".", "she", "loves", "to")
    assert tense_variant(("there", "was", "a", "little", "girl")) == ("there", "is", "a", "little", "girl")
    assert tense_variant(("once", "upon", "a", "time", ",")) is None
    out = expand_contexts([("a", "little", "girl", "named", "lily"), ("a", "small", "girl", "named", "lily")])
    variants = [c for c, _, _ in out]
    assert len(variants) == len(set(variants))
    # the second original keeps its own slot even though it is also a synonym variant of the first
    assert [(c, j) for c, j, k in out if k == "original"] == [(("a", "little", "girl", "named", "lily"), 0),
                                                             (("a", "small", "girl", "named", "lily"), 1)]


def test_tinystories_bpe64_windows_match_counts(small_data: Path) -> None:
    ws = tinystories_bpe64(n_stories=20, tokenizer_stories=60, vocab_size=48)
    data = ws.data
    assert data.V == 48 and ws.windows.shape == (data.n, 6) and ws.targets.shape == (data.n,)
    rebuilt = np.zeros((data.V, data.m), dtype=np.int64)
    np.add.at(rebuilt, (ws.targets, ws.columns), 1)
    np.testing.assert_array_equal(rebuilt, data.counts.toarray())
    for i in range(0, data.n, 97):
        assert tuple(ws.windows[i]) == data.contexts[ws.columns[i]]
    assert ws.windows[0, 0] == ws.tokenizer.piece_to_id("<s>") == 1
    assert any(s.startswith("#") for s in ws.token_strings)
    # sentencepiece keeps the case (the authors' options): "O" of "Once" is a piece of its own
    assert "O" in ws.token_strings or "#O" in ws.token_strings
    # deterministic: a second training (no cache) gives the same pieces
    from ntputils.data.corpora.bpe64 import train_sentencepiece_bpe
    texts = read_tinystories(max_stories=60)
    a = train_sentencepiece_bpe(texts, 48, use_cache=False)
    b = train_sentencepiece_bpe(texts, 48, use_cache=False)
    assert [a.id_to_piece(i) for i in range(48)] == [b.id_to_piece(i) for i in range(48)]
    with pytest.raises(ValueError, match="vocab_size"):
        train_sentencepiece_bpe(texts, 4)


# ----------------------------------------------------------------------------------------------
# paper B
# ----------------------------------------------------------------------------------------------


def _svd_signed(data):  # noqa: ANN001, ANN202
    S = data.S.toarray().astype(float)
    St = S - S.mean(axis=0, keepdims=True)
    U, s, Vt = np.linalg.svd(St, full_matrices=False)
    r = int(np.sum(s > 1e-9 * s[0]))
    U, s, Vt = U[:, :r], s[:r], Vt[:r]
    flip = np.sign(U[np.argmax(np.abs(U), axis=0), np.arange(r)])  # largest-|entry| of u_k positive
    return U * flip, s, Vt * flip[:, None], St


def test_organism_rank_and_concepts() -> None:
    data = organism()
    assert (data.V, data.m) == (16, len(ORGANISM_TABLE))
    assert data.context_str(0) == "The organism that hunts in groups is"
    np.testing.assert_allclose(_col_sums(data), 1.0)
    U, s, Vt, St = _svd_signed(data)
    assert np.linalg.matrix_rank(St) == 6 and len(s) == 6
    np.testing.assert_allclose(St.sum(axis=0), 0.0, atol=1e-12)
    word = {w: U[i] for i, w in enumerate(data.vocab)}
    attr = {a: Vt[:, j] for j, a in enumerate(ORGANISM_TABLE)}
    animals, plants = ORGANISM_CLASSES["Animals"], ORGANISM_CLASSES["Plants"]
    # concept 1: plants vs animals
    assert len({np.sign(word[w][0]) for w in animals}) == 1
    assert {np.sign(word[w][0]) for w in plants} == {-np.sign(word["dog"][0])}
    # concept 2: mammals vs the other animals; contexts also split "grows roots" from "pollen"
    c2 = np.sign(word["cat"][1])
    assert all(np.sign(word[w][1]) == c2 for w in ORGANISM_CLASSES["Mammals"])
    assert all(np.sign(word[w][1]) == -c2 for w in ("sparrow", "eagle", "trout", "shark"))
    assert np.sign(attr["stays warm-blooded"][1]) == c2 == -np.sign(attr["lives in water"][1])
    assert np.sign(attr["grows roots"][1]) == c2 == -np.sign(attr["reproduces with pollen"][1])
    # nested orthants of the context-analyzer vectors on dims {1, 2, 4}: animal > mammal > feline
    classes = organism_attribute_classes()
    config = np.sign(attr["purrs when content"][[0, 1, 3]])

    def orthant(dims: list[int]) -> set[str]:
        return {a for a in ORGANISM_TABLE if np.all(np.sign(attr[a][dims]) == config[: len(dims)])}

    def attrs_of(*names: str) -> set[str]:
        return {a for a, c in zip(ORGANISM_TABLE, classes, strict=True) if c in names}

    assert orthant([0]) == attrs_of("Animals", "Mammals", "Felines", "Birds", "Fish")
    assert orthant([0, 1]) == attrs_of("Mammals", "Felines")
    assert orthant([0, 1, 3]) == attrs_of("Felines")
    assert min(abs(v[k]) for a, v in attr.items() for k in (0, 1, 3) if a in orthant([0, 1])) > 0.1


def _brute_force_counts(seqs: list[np.ndarray], context: tuple[int, ...], row_token: dict[int, int]) -> dict:
    T, out = len(context), {}
    for s in seqs:
        for i in range(len(s) - T):
            if tuple(s[i:i + T]) == context and int(s[i + T]) in row_token:
                z = row_token[int(s[i + T])]
                out[z] = out.get(z, 0) + 1
    return out


@pytest.mark.parametrize("tokenizer", ["bpe", "word"])
def test_paper_b_text_small_corpus(small_data: Path, tokenizer: str) -> None:
    from ntputils.data.corpora.paper_b_corpora import tokenize_corpus

    data = paper_b_text("tinystories", V=20, m=60, context_lengths=(2, 3, 4), tokenizer=tokenizer,
                        bpe_vocab_size=300)
    assert data.V == 20 and data.m == 60
    assert np.bincount([len(c) for c in data.contexts]).tolist() == [0, 0, 20, 20, 20]
    np.testing.assert_allclose(_col_sums(data), 1.0)
    assert np.all(data.support_sizes >= 1)
    seqs, strings = tokenize_corpus("tinystories", tokenizer, 300)
    row_token = {strings.index(w): z for z, w in enumerate(data.vocab)}
    for j in (0, 21, 59):
        expected = _brute_force_counts(seqs, data.contexts[j], row_token)
        col = data.counts[:, [j]]
        assert dict(zip(col.indices.tolist(), col.data.tolist(), strict=True)) == expected
    if tokenizer == "bpe":
        assert any(w.startswith("#") for w in data.vocab)
    cached = paper_b_text("tinystories", V=20, m=60, context_lengths=(2, 3, 4), tokenizer=tokenizer,
                          bpe_vocab_size=300)
    assert (cached.counts != data.counts).nnz == 0 and cached.vocab == data.vocab


def test_paper_b_text_wikitext_and_errors(small_data: Path) -> None:
    data = paper_b_text("wikitext", V=30, m=50, tokenizer="bpe", bpe_vocab_size=300, selection="global")
    assert data.m == 50 and data.V <= 30
    assert "<unk>" in data.vocab
    with pytest.raises(ValueError, match="corpus"):
        paper_b_text("openwebtext")
    with pytest.raises(ValueError, match="tokenizer"):
        paper_b_text(tokenizer="char")


def test_corpus_windows_never_cross_sequences() -> None:
    corpus = Corpus.from_sequences([[1, 2, 3], [1, 2, 4, 5]])
    w2 = corpus.window_ids(2)[1]
    ctx, nxt, start = corpus.pairs(w2)
    assert sorted(zip(start.tolist(), nxt.tolist(), strict=True)) == [(0, 3), (3, 4), (4, 5)]
    assert ctx[0] == ctx[1]  # both "1 2"


def test_word_classes() -> None:
    classes = word_classes(["#went", "#playing", "#Lily", "#January", "#1990", "#km", "#and", "#she", "#the",
                            "#happy", "#quickly", ".", "#dog"])
    assert "#went" in classes["past-tense verb"] and "#playing" in classes["-ing verb"]
    assert "#Lily" in classes["person name"] and "#January" in classes["month"]
    assert "#1990" in classes["number"] and "#km" in classes["unit"]
    assert "#and" in classes["preposition/conjunction"] and "#she" in classes["pronoun"]
    assert "#the" in classes["determiner"] and "#happy" in classes["adjective"]
    assert "#quickly" in classes["adverb"] and "." in classes["punctuation"] and "#dog" in classes["noun"]
    assert classify("#Lily") == {"person name"}


def _entropy(c: np.ndarray) -> float:
    p = np.asarray(c, dtype=float) / np.sum(c)
    return float(-np.sum(p * np.log(p)))


def test_synthetic_entropy_floor_closed_forms() -> None:
    from ntputils.data.corpora.paper_a import synthetic_entropy_floor

    assert synthetic_entropy_floor(3, 2) == pytest.approx(_entropy([1, 1, 2]), abs=1e-12)  # 1.0397
    # n = 72 with 16 contexts of 3 tokens, counts {1,2}: 8 contexts (1,2,2) and 8 contexts (1,1,2)
    expected = (8 * 5 * _entropy([1, 2, 2]) + 8 * 4 * _entropy([1, 1, 2])) / 72
    assert synthetic_entropy_floor(3, 2, n=72) == pytest.approx(expected, abs=1e-12)
    # brute force on 2 contexts: every pair of count vectors
    import itertools

    vecs = list(itertools.product((1, 2, 3), repeat=3))
    for n in range(6, 19):
        pairs = [(a, b) for a in vecs for b in vecs if sum(a) + sum(b) == n]
        brute = min((_entropy(a) * sum(a) + _entropy(b) * sum(b)) / n for a, b in pairs)
        assert synthetic_entropy_floor(3, 3, m=2, n=n) == pytest.approx(brute, abs=1e-12)
    with pytest.raises(ValueError, match="n = 7"):  # one context of 3 tokens with counts {1,2}: n in 3..6
        synthetic_entropy_floor(3, 2, m=1, n=7)


@needs_shared
def test_synthetic_recipe_search_matches_builder() -> None:
    from ntputils.data.corpora.paper_a import _synthetic, synthetic_recipe_search

    res = synthetic_recipe_search(seeds=3, support_sizes=(3,), max_counts=(2,), use_cache=False)
    for i, seed in enumerate(res["seed"]):
        data = _synthetic(int(seed), 3, 2)
        assert (res["n"][i], res["V"][i]) == (data.n, data.V)
        assert res["H"][i] == pytest.approx(data.entropy, abs=1e-12)


def test_wikitext_detokenization_and_unknown_split() -> None:
    from ntputils.data.corpora.paper_b_corpora import detokenize_wikitext, split_at_unknown

    line = "The bird 's flight : 7 @,@ 000 km ( 4 @.@ 3 mi ) , and it wasn 't sing @-@ loudly ."
    assert detokenize_wikitext(line) == "The bird's flight: 7,000 km (4.3 mi), and it wasn't sing-loudly."
    assert split_at_unknown("The <unk> sang, then <unk> <unk>, flew") == ["The", " sang, then", ", flew"]
    assert split_at_unknown("<unk> x") == [" x"]


def test_paper_b_text_with_the_gpt2_tokenizer(small_data: Path) -> None:
    real = paths.REPO_ROOT.parent / "shared" / "data" / "gpt2-tokenizer"
    if not (real / "vocab.bpe").exists():
        pytest.skip("shared GPT-2 tokenizer files not present")
    (small_data / "gpt2-tokenizer").symlink_to(real)
    data = paper_b_text("wikitext", V=30, m=40, context_lengths=(2, 3))
    assert data.V == 30 and data.m == 40
    assert "#bird" in data.vocab and not any("unk" in w for w in data.vocab)  # <unk> cut out, never a token
    assert not any("Ġ" in w for w in data.vocab)  # readable: "#" marks a word start
    sts = paper_b_text("tinystories", V=20, m=30, context_lengths=(2,))
    assert "⏎" in sts.vocab  # the paragraph break is a real next token, shown as such


def test_sample_documents_is_a_seeded_sample_in_corpus_order() -> None:
    from ntputils.data.corpora.paper_b_corpora import sample_documents

    seqs = [np.array([i, i + 1]) for i in range(50)]
    a, b, c = (sample_documents(seqs, 0.9, s) for s in (0, 0, 1))
    assert len(a) == 45 and [x[0] for x in a] == sorted(x[0] for x in a)  # 90%, corpus order kept
    assert [x[0] for x in a] == [x[0] for x in b]  # same seed, same sample
    assert [x[0] for x in a] != [x[0] for x in c]  # another seed, another sample
    assert len(sample_documents(seqs, 1.0, 3)) == 50
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="documents"):
            sample_documents(seqs, bad, 0)


def test_paper_b_text_documents_sample_changes_the_counts(small_data: Path) -> None:
    full = paper_b_text("tinystories", V=20, m=60, context_lengths=(2, 3), tokenizer="word")
    s0 = paper_b_text("tinystories", V=20, m=60, context_lengths=(2, 3), tokenizer="word", documents=0.5,
                      sample_seed=0)
    s1 = paper_b_text("tinystories", V=20, m=60, context_lengths=(2, 3), tokenizer="word", documents=0.5,
                      sample_seed=1)
    assert s0.counts.sum() < full.counts.sum() and s1.counts.sum() < full.counts.sum()
    assert s0.counts.sum() != s1.counts.sum() or s0.contexts != s1.contexts
    with pytest.raises(ValueError, match="documents"):
        paper_b_text("tinystories", documents=0)
