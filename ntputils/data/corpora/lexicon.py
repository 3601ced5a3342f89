"""Word classes for the purity analysis of concept clusters ("beyond the paper", chapter b04).

Paper B reads its word clouds by eye ("past-tense verbs", "proper names", "months", "numbers",
"units", "prepositions/conjunctions" ...). :func:`word_classes` assigns such labels automatically
so that the purity of an orthant or k-means cluster can be measured.

Why these resources (all offline, installed from PyPI):

* **lemminflect** (``lemminflect==0.2.3``) ships its English lexicon (lemma and inflection tables
  derived from the Automatically Generated Inflection Database and the Penn Treebank tags) inside
  the wheel. It gives the open classes of a word type -- noun, verb, adjective, adverb -- and, by
  re-inflecting the verb lemma, whether a form is a past tense (VBD), an -ing form (VBG), a
  third-person present (VBZ) or a base form. NLTK's tagger and WordNet data are *not* in the NLTK
  wheel (they are downloaded at run time), and spaCy models come from GitHub: neither is available.
* **names** (``names==0.3.0``) ships the 1990 US-census given-name lists (~5,000 names), used for
  the "person name" class.
* closed classes (pronouns, determiners, prepositions/conjunctions, auxiliaries/modals, months,
  number words, units) are short hand-written lists below: they are closed sets, so a list is
  exact and clearer than a statistical tagger.

The classes are *type-level* (no context): a word receives every class it can belong to, so
classes overlap ("play" is a noun and a verb, "May" a month and a name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

PRONOUNS = frozenset("""i me my mine myself you your yours yourself yourselves he him his himself she her hers
herself it its itself we us our ours ourselves they them their theirs themselves who whom whose what which
this that these those someone somebody something anyone anybody anything everyone everybody everything
nobody nothing one""".split())
DETERMINERS = frozenset("""a an the this that these those my your his her its our their some any no every each
either neither all both many much few several another other such what which whose""".split())
PREPOSITIONS_CONJUNCTIONS = frozenset("""about above across after against along among around as at before
behind below beneath beside besides between beyond but by despite down during except for from in inside
into like near of off on onto out outside over past since through throughout till to toward towards under
underneath until up upon with within without and or nor so yet because although though while whereas if unless
whether than when whenever where wherever once both either neither via per amid""".split())
AUXILIARIES = frozenset("""be am is are was were been being have has had having do does did will would shall
should can could may might must ought""".split())
MONTHS = frozenset("""january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec""".split())
NUMBER_WORDS = frozenset("""zero one two three four five six seven eight nine ten eleven twelve thirteen
fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety
hundred thousand million billion trillion dozen half first second third fourth fifth sixth seventh eighth
ninth tenth""".split())
UNITS = frozenset("""km kilometre kilometres kilometer kilometers mi mile miles m metre metres meter meters cm
centimetres centimeters mm millimetres millimeters ft foot feet inch inches yd yard yards kg kilogram
kilograms g gram grams lb lbs pound pounds oz ounce ounces ton tons tonne tonnes mph km/h kph knots
°c °f degrees percent % acre acres hectare hectares ha litre litres liter liters gallon gallons mw kw
watts volts hz second seconds minute minutes hour hours day days week weeks month months year years decade
decades century centuries $ £ € dollars cents""".split())

VERB_FORM_CLASSES = {"VBD": "past-tense verb", "VBG": "-ing verb", "VBZ": "present-tense verb",
                     "VB": "base-form verb"}

_NUMBER = re.compile(r"^[+-]?(\d+([.,@]\d+)*|\d*\.\d+)(st|nd|rd|th|s)?$")
_PUNCT = re.compile(r"^[^\w\s]+$")
_MARKERS = ("#", "Ġ", "▁")


def _strip(word: str) -> str:
    """The bare word: token markers (``#``, ``Ġ``, ``▁``) and surrounding whitespace removed."""
    w = word.strip()
    while w[:1] in _MARKERS and len(w) > 1:
        w = w[1:]
    return w.strip()


@lru_cache(maxsize=1)
def _given_names() -> frozenset[str]:
    """Lower-cased census given names from the ``names`` package data files."""
    import names  # noqa: PLC0415 - optional data package

    folder = Path(names.__file__).parent
    out: set[str] = set()
    for file in ("dist.male.first", "dist.female.first"):
        for line in (folder / file).read_text().splitlines():
            if line.strip():
                out.add(line.split()[0].lower())
    return frozenset(out)


def _verb_forms(word: str, lemmas: Iterable[str]) -> set[str]:
    """Penn tags (VBD, VBG, VBZ, VB) that ``word`` realizes for one of the verb ``lemmas``."""
    import lemminflect  # noqa: PLC0415

    tags = set()
    for lemma in lemmas:
        for tag in ("VBD", "VBG", "VBZ", "VB"):
            if word in lemminflect.getInflection(lemma, tag=tag):
                tags.add(tag)
    return tags


def classify(word: str) -> set[str]:
    """All classes of one word type (see :func:`word_classes`).

    The categories of Paper B, Fig. 4 (verb forms, names, months, numbers, ...).
    """
    import lemminflect  # noqa: PLC0415

    w = _strip(word)
    if not w:
        return set()
    low = w.lower()
    if _PUNCT.match(w) and w not in ("%", "$", "£", "€"):
        return {"punctuation"}
    classes: set[str] = set()
    if _NUMBER.match(w) or low in NUMBER_WORDS:
        classes.add("number")
    if low in MONTHS and (w[0].isupper() or low not in ("may", "march")):
        classes.add("month")
    if low in UNITS:
        classes.add("unit")
    closed = {"pronoun": PRONOUNS, "determiner": DETERMINERS,
              "preposition/conjunction": PREPOSITIONS_CONJUNCTIONS, "auxiliary/modal": AUXILIARIES}
    for name, members in closed.items():
        if low in members:
            classes.add(name)
    readings = lemminflect.getAllLemmas(w) or lemminflect.getAllLemmas(low)
    common_word = bool(lemminflect.getAllLemmas(low))
    if classes & set(closed) or classes & {"number", "month"}:
        return classes
    if low in _given_names() and (w[0].isupper() or not common_word):
        classes.add("person name")
    elif w[0].isupper() and w[1:].islower() and lemminflect.getAllLemmas(w, upos="PROPN"):
        classes.add("proper noun")
    if classes and w[0].isupper():
        return classes  # a capitalized name is not also a common noun or verb
    open_classes = {"NOUN": "noun", "VERB": "verb", "ADJ": "adjective", "ADV": "adverb"}
    for upos, name in open_classes.items():
        if upos in readings:
            classes.add(name)
    if "VERB" in readings:
        tags = _verb_forms(low, readings["VERB"])
        classes |= {VERB_FORM_CLASSES[t] for t in tags}
    return classes


def word_classes(words: Iterable[str]) -> dict[str, set[str]]:
    """Map class names to the members of ``words`` that belong to them.

    Classes: ``noun``, ``verb``, ``adjective``, ``adverb``, ``past-tense verb``, ``-ing verb``,
    ``present-tense verb`` (third person), ``base-form verb``, ``number``, ``month``,
    ``person name``, ``proper noun``, ``preposition/conjunction``, ``pronoun``, ``determiner``,
    ``auxiliary/modal``, ``unit``, ``punctuation``. Words are returned as given (``#`` markers
    kept); the look-up uses the bare word. A word may be in several classes, or in none.

    The categories of Paper B, Fig. 4 (verb forms, names, months, numbers, ...).
    """
    out: dict[str, set[str]] = {}
    for word in words:
        for name in classify(word):
            out.setdefault(name, set()).add(word)
    return out
