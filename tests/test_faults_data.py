"""Issue 16, data and cache faults: content-addressed corpus caches and chapter keys, checksummed cache
entries recomputed with a warning (truncated, garbled, an overwritten ``L^mm``), corpus files verified
against the sha256 table by default, and I/O errors that name the file and the variable pointing at it.
"""

from __future__ import annotations

import lzma
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from ntputils import paths
from ntputils.book import build as book_build
from ntputils.book.project import Project
from ntputils.data.corpora import cache, readers
from ntputils.data.corpora.cache import CacheWarning, cached_arrays, load_verified, save_verified
from ntputils.data.corpora.readers import ChecksumError, CorruptDataError

SHARED = paths.data_dir()
TEMPLATES = SHARED / readers.TEMPLATES_DIR / "verysmallset.txt"
TS_VALID = SHARED / readers.TINYSTORIES_DIR / "tinystories_v1_valid_head.txt.xz"
needs_shared = pytest.mark.skipif(not TEMPLATES.exists() or not TS_VALID.exists(),
                                  reason="shared/data absent")


@pytest.fixture(autouse=True)
def _tmp_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "cache"))


@pytest.fixture
def data_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the template sentences as the data root."""
    if not TEMPLATES.exists():
        pytest.skip("shared/data absent")
    root = tmp_path / "data"
    (root / readers.TEMPLATES_DIR).mkdir(parents=True)
    shutil.copy(TEMPLATES, root / readers.TEMPLATES_DIR / "verysmallset.txt")
    monkeypatch.setenv(paths.DATA_ENV, str(root))
    return root


def _edit(file: Path, old: str, new: str) -> None:
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))
    st = file.stat()  # same-second rewrites: make the (size, mtime) memo key change for sure
    os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


# ---------------------------------------------------------------- content-addressed caches
def test_data_digest_sees_edits_behind_a_symlinked_folder_and_refuses_a_cycle(tmp_path):
    """A folder linked into a corpus folder is data like any other: editing a file behind the link changes
    the digest (rglob did not follow the link, so the caches and chapter keys missed the edit). A link
    back to a folder that contains it is an error naming the link, not an endless walk."""
    root, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    (root / "tinystories").mkdir(parents=True)
    elsewhere.mkdir()
    (root / "tinystories" / "a.txt").write_text("one")
    (elsewhere / "b.txt").write_text("two")
    (root / "tinystories" / "linked").symlink_to(elsewhere, target_is_directory=True)
    before = paths.data_digest(root)
    _edit(elsewhere / "b.txt", "two", "three")
    assert paths.data_digest(root) != before
    (elsewhere / "again").symlink_to(elsewhere, target_is_directory=True)
    named = re.escape(str(root / "tinystories" / "linked" / "again"))
    with pytest.raises(ValueError, match=f"data folder {named} links back to .*symlink cycle"):
        paths.data_digest(root)


def test_corpus_cache_follows_data_content_not_path(data_root, tmp_path, monkeypatch):
    from ntputils.data.corpora import paper_a_synthetic

    before = cache.cache_path("paper_a_synthetic", {"seed": 1})
    first = paper_a_synthetic()
    moved = tmp_path / "moved"
    shutil.copytree(data_root, moved)
    monkeypatch.setenv(paths.DATA_ENV, str(moved))
    assert cache.cache_path("paper_a_synthetic", {"seed": 1}) == before  # same content, other path
    monkeypatch.setenv(readers.VERIFY_ENV, "0")  # an edited file is user data now
    _edit(moved / readers.TEMPLATES_DIR / "verysmallset.txt", "cookies", "muffins")
    assert cache.cache_path("paper_a_synthetic", {"seed": 1}) != before
    second = paper_a_synthetic()
    assert (second.V, second.vocab) != (first.V, first.vocab)  # rebuilt from the edited file


def test_edited_data_file_fails_verification_by_default(data_root):
    from ntputils.data.corpora import paper_a_synthetic

    _edit(data_root / readers.TEMPLATES_DIR / "verysmallset.txt", "cookies", "muffins")
    with pytest.raises(ChecksumError, match=r"verysmallset\.txt.*NTP_DATA_DIR.*NTP_VERIFY_DATA=0"):
        paper_a_synthetic()


def test_a_run_that_read_data_is_stale_after_a_data_edit(data_root, tmp_path):
    """The data part of a build key comes from the run's trace: a run that imported a data reader has
    the data's digest in its key (:func:`~ntputils.book.fingerprint.trace_digest`), one that did not
    stays cached."""
    from ntputils.book.fingerprint import run_key

    (tmp_path / "notebooks").mkdir()
    keys = book_build.KeyCalculator(Project(tmp_path))
    reads = {"functions": ["data/corpora/readers.py:read_template_sentences"],
             "modules": ["data/corpora/readers.py"]}
    pure = {"functions": ["hashing.py:digest"], "modules": ["hashing.py"]}
    metas = [{"key": "k", "trace": t, "trace_key": run_key("k", t)} for t in (reads, pure)]
    assert all(keys.trace_current(m) for m in metas)
    _edit(data_root / readers.TEMPLATES_DIR / "verysmallset.txt", "cookies", "muffins")
    assert not keys.trace_current(metas[0])  # the run that read data re-runs
    assert keys.trace_current(metas[1])  # the one that did not is still cached


def test_file_sha256_memo_rehashes_a_rewritten_file(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("a")
    h1 = paths.file_sha256(f)
    f.write_text("bb")
    assert paths.file_sha256(f) != h1


# ---------------------------------------------------------------- checksummed cache entries
def _build() -> dict[str, np.ndarray]:
    return {"vocab": np.array(["a", "b", "c"]), "ids": np.arange(3)}


def test_garbled_cache_entry_is_recomputed_with_warning(tmp_path):
    calls = []

    def build():
        calls.append(1)
        return _build()

    cached_arrays("demo", {"k": 1}, build)
    path = cache.cache_path("demo", {"k": 1})
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["vocab"] = arrays["vocab"][::-1]  # vocabulary reversed, checksum kept
    np.savez_compressed(path, **arrays)
    with pytest.warns(CacheWarning, match=r"demo-.*\.npz.*NTP_CACHE_DIR.*does not match its checksum"):
        out = cached_arrays("demo", {"k": 1}, build)
    assert out["vocab"].tolist() == ["a", "b", "c"] and len(calls) == 2
    assert load_verified(path) is not None  # repaired on disk


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "no-checksum"])
def test_unreadable_cache_entry_is_recomputed(tmp_path, damage):
    cached_arrays("demo", {"k": 2}, _build)
    path = cache.cache_path("demo", {"k": 2})
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(b"not a zip at all")
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        np.savez_compressed(path, **_build())
    with pytest.warns(CacheWarning, match=str(path.name)):
        out = cached_arrays("demo", {"k": 2}, _build)
    assert out["ids"].tolist() == [0, 1, 2]
    assert load_verified(path) is not None


def test_overwritten_lmm_cache_is_reverified(tmp_path):
    from ntputils.geometry import max_margin_cached
    from ntputils.geometry.maxmargin import support_key

    S = np.array([[1, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 0, 1]], dtype=float)
    L, info = max_margin_cached(S, eps=1e-8)
    assert not info["cached"]
    path = paths.cache_dir("lmm") / f"{support_key(S, 'cvxpy', eps=1e-8)}.npz"
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files if k != cache.CHECKSUM}
    for bad, message in ((2 * L, "nuclear norm"), (0 * L, "not feasible"), (L[:, :3], "shape")):
        save_verified(path, {**arrays, "L": bad})  # a consistent entry whose L was overwritten
        with pytest.warns(CacheWarning, match=message):
            L2, info2 = max_margin_cached(S, eps=1e-8)
        assert not info2["cached"] and np.allclose(L2, L, atol=1e-5)
    L3, info3 = max_margin_cached(S, eps=1e-8)
    assert info3["cached"] and np.array_equal(L3, L2)


# ---------------------------------------------------------------- corpus files
def _write_xz(path: Path, raw: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(path, "wb") as f:
        f.write(raw)


@needs_shared
def test_valid_xz_with_only_the_first_20kb_is_rejected(tmp_path):
    raw = lzma.open(TS_VALID).read()
    _write_xz(tmp_path / TS_VALID.name, raw[:20_000])
    with pytest.raises(ChecksumError, match=r"tinystories_v1_valid_head\.txt\.xz.*20,000 uncompressed bytes"):
        readers.read_tinystories(tmp_path, files=["tinystories_v1_valid_head"])
    assert len(readers.read_tinystories(tmp_path, files=["tinystories_v1_valid_head"], verify=False)) > 0


@pytest.mark.parametrize("damage", ["garbage", "truncated", "not-utf8"])
def test_corrupt_corpus_files_name_the_file_and_the_variable(tmp_path, monkeypatch, damage):
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    monkeypatch.setenv(readers.VERIFY_ENV, "0")
    file = tmp_path / "wikitext-2" / "valid.txt.xz"
    if damage == "garbage":
        file.parent.mkdir(parents=True)
        file.write_bytes(b"\xfd7zXZ\x00 this is not xz")
    elif damage == "truncated":
        _write_xz(file, b" = T = \n line one \n" * 2000)
        file.write_bytes(file.read_bytes()[:-40])
    else:
        _write_xz(file, b" = T = \n \xff\xfe broken \n")
    with pytest.raises(CorruptDataError, match=r"valid\.txt\.xz.*NTP_DATA_DIR="):
        readers.read_wikitext("valid")


def test_verify_default_follows_the_environment(monkeypatch):
    monkeypatch.delenv(readers.VERIFY_ENV, raising=False)
    assert readers.verify_default(None) is True
    monkeypatch.setenv(readers.VERIFY_ENV, "0")
    assert readers.verify_default(None) is False and readers.verify_default(True) is True


def test_an_uncompressed_verified_entry_reads_back_and_an_alteration_is_still_caught(tmp_path):
    import warnings

    path = tmp_path / "c.npz"
    arrays = {"w": np.arange(12.0).reshape(3, 4)}
    save_verified(path, arrays, compress=False)
    np.testing.assert_array_equal(load_verified(path)["w"], arrays["w"])
    raw = bytearray(path.read_bytes())
    i = raw.find(np.float64(5.0).tobytes())  # uncompressed: the stored float is in the file as is
    raw[i:i + 8] = np.float64(6.0).tobytes()
    path.write_bytes(bytes(raw))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert load_verified(path) is None
    assert any(issubclass(w.category, CacheWarning) and "c.npz" in str(w.message) for w in seen)
