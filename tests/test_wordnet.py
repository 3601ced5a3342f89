"""WordNet loader (paper A's Simplified-TinyStories synonym step): checksum, nltk path, clear errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ntputils import paths
from ntputils.data.corpora.readers import ChecksumError, DataUnavailableError
from ntputils.data.corpora.wordnet import (
    WORDNET_PARTS,
    check_wordnet_file,
    load_wordnet,
    wordnet_synonyms,
    wordnet_zip,
)

needs_wordnet = pytest.mark.skipif(not wordnet_zip().is_file(), reason="shared WordNet not present")


def test_missing_wordnet_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.DATA_ENV, str(tmp_path))
    with pytest.raises(DataUnavailableError, match=r"wordnet\.zip.*NTP_DATA_DIR"):
        load_wordnet()
    # the Simplified-TinyStories builder names the file before doing any work
    from ntputils.data.corpora.paper_a import paper_a_tinystories

    with pytest.raises(DataUnavailableError, match=r"wordnet\.zip"):
        paper_a_tinystories(use_cache=False)


def test_wrong_checksum_is_refused(tmp_path: Path) -> None:
    bad = tmp_path.joinpath(*WORDNET_PARTS)
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not a zip")
    with pytest.raises(ChecksumError, match="sha256"):
        check_wordnet_file(bad)
    assert check_wordnet_file(bad, verify=False) == bad


@needs_wordnet
def test_wordnet_synonyms_of_friend(tmp_path: Path) -> None:
    wn = load_wordnet()
    assert wn.get_version() == "3.0"
    import nltk

    assert str(wordnet_zip().parents[1]) in nltk.data.path  # set by the loader, not by the user
    # the five noun senses of "friend": 8 single-word lemma names besides "friend" itself ("Friend" = Quaker)
    syn = wordnet_synonyms("friend", wordnet=wn)
    assert set(syn) == {"ally", "acquaintance", "supporter", "protagonist", "champion", "admirer", "booster",
                        "quaker"}
    assert wordnet_synonyms("friends", wordnet=wn)[:2] == ("friend", "ally")  # morphy finds the noun
    # at most `limit` names are kept before multi-word ones are dropped
    dog = wordnet_synonyms("dog", wordnet=wn)
    assert all("_" not in w for w in dog) and len(dog) <= 10 and "domestic_dog" not in dog
    assert wordnet_synonyms("dog", limit=2, wordnet=wn) == ()  # "domestic_dog", "canis_familiaris"
    # a copy of the verified file elsewhere loads too (nltk.data.path is extended for it)
    copy = tmp_path.joinpath(*WORDNET_PARTS)
    copy.parent.mkdir(parents=True)
    shutil.copy(wordnet_zip(), copy)
    assert load_wordnet(tmp_path).get_version() == "3.0"
