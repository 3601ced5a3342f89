"""Context variants for paper A's Simplified TinyStories: tense change and synonym substitution.

Paper A enlarges its ~50 frequent TinyStories contexts ("expand_m" in the authors' code) by adding,
for every context,

1. one *tense variant*: the first inflected verb (not "time"/"named") replaced by its
   third-person-singular present form ("she loved to" -> "she loves to", "there was a" ->
   "there is a");
2. *synonym variants*: for every position except the last two, one variant per synonym of the
   word there (a single word replaced at a time).

Every variant inherits the support (and, before re-sampling, the counts) of its original, which is
what creates the groups of contexts with identical supports whose embeddings collapse.

What we use instead of the authors' tools (both unavailable offline):

* tense: the verb test and the VBZ form come from ``lemminflect`` (an offline English
  lemmatizer/inflector on PyPI) instead of NLTK's POS tagger + WordNet lemmatizer; a word counts as
  an inflected verb when its only lexical readings include a verb lemma different from the word.
* synonyms: the hand-written table :data:`SYNONYMS` below (our own lists, in the spirit of the
  authors' hand dictionary; the lists for "little", "girl", "boy", "day", "lily", "loved"/"liked"
  have about as many entries as theirs) replaces both their dictionary and the up-to-10 WordNet
  synonyms they added for other nouns/adjectives (e.g. for "friends") -- NLTK's WordNet data is not
  installable offline. Words absent from the table get no synonym variant.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Words never changed (as in the authors' recipe).
SKIP = frozenset({"time", "named"})

#: Irregular third-person forms for the auxiliaries (lemminflect gives them too; kept explicit).
_VBZ_OVERRIDES = {"be": "is", "have": "has", "do": "does", "go": "goes"}

#: Hand-written synonym table for frequent TinyStories nouns, adjectives, names and verbs.
SYNONYMS: dict[str, tuple[str, ...]] = {
    # adjectives
    "little": ("small", "tiny", "young", "cute", "sweet", "kind", "shy", "brave", "happy", "curious",
               "bright", "playful", "smart", "clever", "gentle", "adorable", "lovely", "cheerful", "friendly",
               "jolly"),
    "small": ("little", "tiny", "young", "cute", "sweet", "kind", "shy", "brave", "happy", "curious"),
    "big": ("large", "huge", "giant", "tall", "great", "enormous", "massive", "strong"),
    "happy": ("glad", "joyful", "cheerful", "merry", "pleased", "delighted"),
    "sad": ("unhappy", "upset", "gloomy", "blue", "miserable"),
    # time words
    "day": ("morning", "afternoon", "evening", "night", "noon", "dawn", "dusk", "sunrise", "sunset",
            "weekend"),
    # people
    "girl": ("lady", "kid", "child", "lass", "princess", "maiden", "daughter", "toddler", "sister", "baby",
             "youngster"),
    "boy": ("kid", "child", "lad", "guy", "prince", "youngster", "son", "fellow", "toddler", "brother",
            "baby", "chap", "youth", "teen", "junior"),
    "mom": ("mother", "mommy", "mum", "mama"),
    "dad": ("father", "daddy", "papa"),
    "friend": ("pal", "buddy", "mate", "companion", "playmate"),
    "friends": ("pals", "buddies", "mates", "companions", "playmates", "chums", "allies", "neighbors",
                "classmates", "partners"),
    # names
    "lily": ("lucy", "amy", "anna", "sara", "mia", "emma", "ella", "sue"),
    "tim": ("tom", "sam", "ben", "max", "jack", "joe", "bob", "timmy"),
    "timmy": ("tom", "sam", "ben", "max", "jack", "joe", "bob", "tim"),
    # animals and places
    "dog": ("puppy", "pup", "hound", "doggy"),
    "cat": ("kitten", "kitty"),
    "park": ("playground", "garden", "yard", "field"),
    # verbs of liking
    "loved": ("liked", "loves", "likes", "enjoyed", "enjoys", "adored", "adores", "preferred", "prefers",
              "cherished", "cherishes", "fancied", "admired", "treasured", "relished"),
    "liked": ("loved", "loves", "likes", "enjoyed", "enjoys", "adored", "adores", "preferred", "prefers",
              "cherished", "cherishes", "fancied", "admired", "treasured", "relished"),
    "lots": ("many", "plenty", "loads"),
}


def third_person_present(word: str) -> str | None:
    """Third-person-singular present of an inflected verb form (``"loved"`` -> ``"loves"``), else ``None``.

    ``None`` when the word has no verb reading in lemminflect's lexicon, is already a base form, or
    is in :data:`SKIP`.

    Context variants of Paper A's Simplified TinyStories (Paper A, Figs. 1 and 6; recipe from the authors'
    code).
    """
    import lemminflect  # noqa: PLC0415 - keeps the package import light

    if word in SKIP:
        return None
    readings = lemminflect.getAllLemmas(word)
    lemmas = readings.get("VERB", ()) or readings.get("AUX", ())
    if not lemmas:
        return None
    lemma = lemmas[0]
    if lemma == word:
        return None
    if lemma in _VBZ_OVERRIDES:
        return _VBZ_OVERRIDES[lemma]
    forms = lemminflect.getInflection(lemma, tag="VBZ")
    return forms[0] if forms and forms[0] != word else None


def tense_variant(tokens: Sequence[str]) -> tuple[str, ...] | None:
    """The context with its first inflected verb put in the third-person present (all occurrences).

    Context variants of Paper A's Simplified TinyStories (Paper A, Figs. 1 and 6; recipe from the authors'
    code).
    """
    for word in tokens:
        new = third_person_present(word)
        if new is not None:
            return tuple(new if t == word else t for t in tokens)
    return None


def synonym_variants(tokens: Sequence[str], table: dict[str, tuple[str, ...]] | None = None
                     ) -> list[tuple[str, ...]]:
    """One variant per (position, synonym) for every position except the last two.

    Context variants of Paper A's Simplified TinyStories (Paper A, Figs. 1 and 6; recipe from the authors'
    code).
    """
    table = SYNONYMS if table is None else table
    out: list[tuple[str, ...]] = []
    for i, word in enumerate(tokens[:-2]):
        if word in SKIP:
            continue
        for synonym in table.get(word, ()):
            out.append(tuple(tokens[:i]) + (synonym,) + tuple(tokens[i + 1:]))
    return out


def expand_contexts(contexts: Sequence[Sequence[str]]) -> list[tuple[tuple[str, ...], int, str]]:
    """All contexts after expansion as ``(tokens, index of the original, kind)``, grouped by original.

    Each original is followed by its variants (so groups of identical supports are contiguous, as
    in the authors' file). ``kind`` is ``"original"``, ``"tense"`` or ``"synonym"``. Duplicates: an
    original always keeps its own support (a variant equal to some original is dropped); among
    variants the first one wins.

    Context variants of Paper A's Simplified TinyStories (Paper A, Figs. 1 and 6; recipe from the authors'
    code).
    """
    originals = [tuple(c) for c in contexts]
    seen = set(originals)
    out: list[tuple[tuple[str, ...], int, str]] = []
    for j, c in enumerate(originals):
        out.append((c, j, "original"))
        candidates = [(v, "tense") for v in [tense_variant(c)] if v is not None]
        candidates += [(v, "synonym") for v in synonym_variants(c)]
        for variant, kind in candidates:
            if variant not in seen:
                seen.add(variant)
                out.append((variant, j, kind))
    return out
