"""Context variants for paper A's Simplified TinyStories: tense change and synonym substitution.

Paper A enlarges its ~50 frequent TinyStories contexts ("expand_m" in the authors' code; spec 4.2) by
adding, for every context,

1. one *tense variant*: the first inflected verb (not "time"/"named") replaced by its
   third-person-singular present form ("she loved to" -> "she loves to", "there was a" ->
   "there is a");
2. *synonym variants*: for every position except the last two, one variant per synonym of the word
   there (a single word replaced at a time). A word of the hand table :data:`SYNONYMS` takes the
   table's list; any other adjective or noun takes up to 10 WordNet synonyms
   (:func:`ntputils.data.corpora.wordnet.wordnet_synonyms`).

Every variant inherits the support (and, before re-sampling, the counts) of its original, which is
what creates the groups of contexts with identical supports whose embeddings collapse.

Differences from the authors' tools:

* tense: the verb test and the VBZ form come from ``lemminflect`` (an offline English
  lemmatizer/inflector on PyPI) instead of NLTK's POS tagger + WordNet lemmatizer; a word counts as
  an inflected verb when its lexical readings include a verb lemma different from the word.
* the adjective/noun test before the WordNet look-up: the authors ran NLTK's perceptron tagger on the
  context; its model is not in the shared data, so :func:`noun_or_adjective` decides from the word
  type (closed classes and adverbs excluded, a verb right after "to" excluded, otherwise a noun,
  adjective or proper-noun reading in lemminflect's lexicon, or no reading at all -- the tagger's
  default for an unknown word is a noun).
* the hand table :data:`SYNONYMS` is our own word lists for the same keys as the authors' table
  (liked, loved, little, day, lots, lily, tim, timmy, big, boy, girl) with the same number of distinct
  entries per key (15, 15, 19, 10, 4, 8, 7, 7, 24, 15, 11), since the number of variants -- not the
  words chosen -- sets the number of contexts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ntputils.data.corpora.lexicon import (
    AUXILIARIES,
    DETERMINERS,
    NUMBER_WORDS,
    PREPOSITIONS_CONJUNCTIONS,
    PRONOUNS,
)

#: Words never changed (as in the authors' recipe).
SKIP = frozenset({"time", "named"})

#: Irregular third-person forms for the auxiliaries (lemminflect gives them too; kept explicit).
_VBZ_OVERRIDES = {"be": "is", "have": "has", "do": "does", "go": "goes"}

#: Adverbs that also have an adjective/noun reading in lemminflect but are tagged as adverbs in
#: these contexts ("there was", "then", "now").
ADVERBS = frozenset("""there then now here very so too also always never just still again soon once away back
together outside inside later really even ever not how why when where""".split())

#: Hand-written synonym table: the keys of the authors' table, with as many distinct entries per key.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "little": ("small", "tiny", "young", "cute", "sweet", "kind", "shy", "brave", "happy", "curious",
               "bright", "playful", "smart", "clever", "gentle", "adorable", "lovely", "cheerful", "petite"),
    "big": ("large", "huge", "giant", "tall", "great", "enormous", "massive", "strong", "vast", "immense",
            "grand", "gigantic", "colossal", "mighty", "hefty", "bulky", "tremendous", "towering", "jumbo",
            "mammoth", "titanic", "monstrous", "sizable", "whopping"),
    "day": ("morning", "afternoon", "evening", "night", "noon", "dawn", "dusk", "sunrise", "sunset",
            "weekend"),
    "girl": ("lady", "kid", "child", "lass", "princess", "maiden", "daughter", "toddler", "sister", "baby",
             "youngster"),
    "boy": ("kid", "child", "lad", "guy", "prince", "youngster", "son", "fellow", "toddler", "brother",
            "baby", "chap", "youth", "teen", "junior"),
    "lily": ("lucy", "amy", "anna", "sara", "mia", "emma", "ella", "sue"),
    "tim": ("tom", "sam", "ben", "max", "jack", "bob", "timmy"),
    "timmy": ("tom", "sam", "ben", "max", "jack", "bob", "tim"),
    "loved": ("liked", "loves", "likes", "enjoyed", "enjoys", "adored", "adores", "preferred", "prefers",
              "cherished", "cherishes", "fancied", "admired", "treasured", "relished"),
    "liked": ("loved", "loves", "likes", "enjoyed", "enjoys", "adored", "adores", "preferred", "prefers",
              "cherished", "cherishes", "fancied", "admired", "treasured", "relished"),
    "lots": ("many", "plenty", "loads", "heaps"),
}

_CLOSED = PRONOUNS | DETERMINERS | PREPOSITIONS_CONJUNCTIONS | AUXILIARIES | NUMBER_WORDS | ADVERBS


def noun_or_adjective(word: str, previous: str | None = None) -> bool:
    """Whether ``word`` (lower-case, after ``previous``) would be tagged as an adjective or noun.

    Stand-in for the authors' NLTK tag test (``JJ*``/``NN*``) before the WordNet look-up: false for
    punctuation and numbers, closed-class words, :data:`ADVERBS`, and a word with a verb reading right
    after "to"; true for a word with a noun, adjective or proper-noun reading in lemminflect's lexicon
    and for a word it does not know (an unknown word is tagged as a noun).

    Context variants of Paper A's Simplified TinyStories (Paper A, Figs. 1 and 6; spec 4.2).
    """
    import lemminflect  # noqa: PLC0415 - keeps the package import light

    if not word.replace("-", "").isalpha() or word in _CLOSED:
        return False
    readings = lemminflect.getAllLemmas(word)
    if previous == "to" and ("VERB" in readings or "AUX" in readings):
        return False
    return not readings or bool({"NOUN", "ADJ", "PROPN"} & set(readings))


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


def synonym_variants(tokens: Sequence[str], table: dict[str, tuple[str, ...]] | None = None,
                     wordnet: Callable[[str], Sequence[str]] | None = None
                     ) -> list[tuple[tuple[str, ...], str]]:
    """Synonym variants ``(tokens, kind)``, one per (position, synonym), every position but the last two.

    A word of ``table`` (default :data:`SYNONYMS`) takes the table's list (kind ``"synonym"``); otherwise,
    when ``wordnet`` (a function word -> synonyms, e.g.
    :func:`ntputils.data.corpora.wordnet.wordnet_synonyms`) is given and :func:`noun_or_adjective` holds,
    the word takes ``wordnet(word)`` (kind ``"wordnet"``). Words in :data:`SKIP` are never changed.

    Context variants of Paper A's Simplified TinyStories (Paper A, Figs. 1 and 6; recipe from the authors'
    code, spec 4.2).
    """
    table = SYNONYMS if table is None else table
    out: list[tuple[tuple[str, ...], str]] = []
    for i, word in enumerate(tokens[:-2]):
        if word in SKIP:
            continue
        if word in table:
            synonyms, kind = table[word], "synonym"
        elif wordnet is not None and noun_or_adjective(word, tokens[i - 1] if i else None):
            synonyms, kind = tuple(wordnet(word)), "wordnet"
        else:
            continue
        for synonym in synonyms:
            if synonym != word:
                out.append((tuple(tokens[:i]) + (synonym,) + tuple(tokens[i + 1:]), kind))
    return out


def expand_contexts(contexts: Sequence[Sequence[str]], wordnet: Callable[[str], Sequence[str]] | None = None
                    ) -> list[tuple[tuple[str, ...], int, str]]:
    """All contexts after expansion as ``(tokens, index of the original, kind)``, grouped by original.

    Each original is followed by its tense variant and its synonym variants (:func:`synonym_variants`;
    WordNet synonyms only when ``wordnet`` is given), so groups of identical supports are contiguous, as
    in the authors' file. ``kind`` is ``"original"``, ``"tense"``, ``"synonym"`` (hand table) or
    ``"wordnet"``. Duplicates: an original always keeps its own support (a variant equal to some original
    is dropped); among variants the first one wins.

    Context variants of Paper A's Simplified TinyStories (Paper A, Figs. 1 and 6; recipe from the authors'
    code).
    """
    originals = [tuple(c) for c in contexts]
    seen = set(originals)
    out: list[tuple[tuple[str, ...], int, str]] = []
    for j, c in enumerate(originals):
        out.append((c, j, "original"))
        candidates = [(v, "tense") for v in [tense_variant(c)] if v is not None]
        candidates += synonym_variants(c, wordnet=wordnet)
        for variant, kind in candidates:
            if variant not in seen:
                seen.add(variant)
                out.append((variant, j, kind))
    return out
