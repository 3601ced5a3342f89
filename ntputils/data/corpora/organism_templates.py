"""Paper B's organism template data: "The organism that [attribute] is [subject]"
(paper B Sec. 4.1, Figs. 1-3).

Contexts are the attributes, next tokens the subjects; only the subject is predicted. The paper
shows the table only as a heatmap (Fig. 2C) and names a few entries: the animals dog, wolf, cat,
tiger, sparrow, eagle, trout, shark (the "Animals" support set of Fig. 3), the plants apple, tulip,
and the attributes "uses sunlight for food", "hunts in groups", "stays warm-blooded", "lives in
water", "grows roots", "reproduces with pollen", "has green leaves", "has feathers". It states
rank(S~) = 6 and the sign structure of the SVD S~ = U Sigma V^T (Figs. 1, 2B, 10):

* concept 1 separates plants from animals (words and contexts);
* concept 2 separates mammals from the other animals, and in the contexts also "grows roots"
  from "reproduces with pollen" among the plant attributes;
* context-analyzer dims {1, 2, 4} give nested orthants animal > mammal > feline (cat, tiger).

RECONSTRUCTED table (:data:`ORGANISM_TABLE`): 16 subjects (8 animals, 8 plants), 17 attributes in 8
support classes (:data:`ORGANISM_CLASSES`). The class sizes and the number of attributes per class
were chosen by an exhaustive search over small designs so that rank(S~) = 6 *and* all the sign
statements above hold (tests/test_corpora.py checks them); two plants (apple, moss) belong to
neither plant sub-class, which is what gives the sixth dimension. The supports are toy categories,
not botany (e.g. only the three trees "grow roots").

Counts: each (attribute, subject) pair of the table occurs once, so ``p_j`` is uniform on the
support and ``pi_j`` is proportional to ``|S_j|``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ntputils.data.corpora.tokenize import WordVocab
from ntputils.data.ntp import NTPData, from_counts

TEMPLATE = "The organism that {attribute} is"

ANIMALS = ("dog", "wolf", "cat", "tiger", "sparrow", "eagle", "trout", "shark")
PLANTS = ("apple", "tulip", "rose", "daisy", "oak", "pine", "maple", "moss")
SUBJECTS = ANIMALS + PLANTS

#: Support classes (name -> subjects), in the order of the confusion matrices of Fig. 3.
ORGANISM_CLASSES: dict[str, tuple[str, ...]] = {
    "Animals": ANIMALS,
    "Plants": PLANTS,
    "Mammals": ("dog", "wolf", "cat", "tiger"),
    "Felines": ("cat", "tiger"),
    "Birds": ("sparrow", "eagle"),
    "Fish": ("trout", "shark"),
    "Trees": ("oak", "pine", "maple"),
    "Flowers": ("tulip", "rose", "daisy"),
}

#: Attribute -> class name (the RECONSTRUCTED Fig. 2C table; paper's own phrases where known).
ATTRIBUTE_CLASS: dict[str, str] = {
    "hunts in groups": "Animals",
    "moves around to find food": "Animals",
    "uses sunlight for food": "Plants",
    "has green leaves": "Plants",
    "stays warm-blooded": "Mammals",
    "feeds milk to its young": "Mammals",
    "has fur": "Mammals",
    "purrs when content": "Felines",
    "has retractable claws": "Felines",
    "belongs to the cat family": "Felines",
    "has feathers": "Birds",
    "lives in water": "Fish",
    "grows roots": "Trees",
    "has a woody trunk": "Trees",
    "sheds bark": "Trees",
    "reproduces with pollen": "Flowers",
    "grows colorful flowers": "Flowers",
}

#: The table of Fig. 2C: attribute -> support set (subjects that can follow it).
ORGANISM_TABLE: dict[str, tuple[str, ...]] = {a: ORGANISM_CLASSES[c] for a, c in ATTRIBUTE_CLASS.items()}


def organism_table() -> dict[str, tuple[str, ...]]:
    """A copy of :data:`ORGANISM_TABLE` (attribute -> subjects), for printing as Fig. 2C.

    Paper B, Fig. 2C.
    """
    return {a: tuple(s) for a, s in ORGANISM_TABLE.items()}


def organism_classes() -> dict[str, tuple[str, ...]]:
    """A copy of :data:`ORGANISM_CLASSES` (support-class name -> subjects).

    The support classes of Paper B, Fig. 2C and Fig. 3.
    """
    return {c: tuple(s) for c, s in ORGANISM_CLASSES.items()}


def organism_attribute_classes() -> list[str]:
    """Class name of every context (column) of :func:`organism`, in column order.

    The classes of the confusion matrices of Paper B, Fig. 3.
    """
    return [ATTRIBUTE_CLASS[a] for a in ORGANISM_TABLE]


def organism() -> NTPData:
    """The organism dataset: V = 16 subjects (rows), m = 17 attributes (columns), counts 1 per pair.

    Contexts are the full prompts ``"The organism that <attribute> is"`` as word ids into
    ``context_vocab``; ``vocab`` lists the subjects (animals first). rank(S~) = 6.

    Paper B, Sec. 4.1, Figs. 1-3.
    """
    attributes = list(ORGANISM_TABLE)
    row = {s: i for i, s in enumerate(SUBJECTS)}
    rows = np.fromiter((row[s] for a in attributes for s in ORGANISM_TABLE[a]), dtype=np.int64)
    cols = np.repeat(np.arange(len(attributes)), [len(ORGANISM_TABLE[a]) for a in attributes])
    counts = sp.coo_array((np.ones(rows.size, dtype=np.int64), (rows, cols)),
                          shape=(len(SUBJECTS), len(attributes))).tocsc()
    prompts = [TEMPLATE.format(attribute=a).split() for a in attributes]
    words = WordVocab(prompts)
    contexts = [tuple(int(i) for i in words.encode(p)) for p in prompts]
    return from_counts(counts, contexts, list(SUBJECTS), words.words)
