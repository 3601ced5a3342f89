"""Datasets of the two papers, built from real text (``shared/data``, see :mod:`.readers`) or templates.

Every builder returns :class:`ntputils.data.NTPData` (V x m counts, ``vocab`` = next-token strings,
``contexts`` = token-id tuples, ``context_str(j)`` renders a context) and caches what it builds under
``ntputils.paths.cache_dir("corpora")``.

========================================  =======================================================
:func:`paper_a_synthetic`                 paper A "Synthetic" (template sentences; m=16, V=30)
:func:`paper_a_tinystories`               paper A "Simplified TinyStories" (m~400, V~100)
:func:`tinystories_bpe64`                 paper A Fig. 3 TinyStories-100, BPE-64 windows of 6 tokens
:func:`organism`                          paper B organism templates (rank(S~) = 6)
:func:`paper_b_text`                      paper B Simplified TinyStories / WikiText (V=1000, m=10000)
:func:`word_classes`                      word classes for cluster-purity analyses
========================================  =======================================================
"""

from ntputils.data.corpora.lexicon import classify, word_classes
from ntputils.data.corpora.organism import (
    ORGANISM_CLASSES,
    ORGANISM_TABLE,
    organism,
    organism_attribute_classes,
    organism_classes,
    organism_table,
)
from ntputils.data.corpora.paper_a import (
    PaperATinyStories,
    paper_a_synthetic,
    paper_a_tinystories,
    paper_a_tinystories_details,
)
from ntputils.data.corpora.paper_b_text import WindowedStories, paper_b_text, tinystories_bpe64
from ntputils.data.corpora.readers import (
    ChecksumError,
    DataUnavailableError,
    read_template_sentences,
    read_tinystories,
    read_tinystories_lines,
    read_wikitext,
)

__all__ = [
    "ORGANISM_CLASSES",
    "ORGANISM_TABLE",
    "ChecksumError",
    "DataUnavailableError",
    "PaperATinyStories",
    "WindowedStories",
    "classify",
    "organism",
    "organism_attribute_classes",
    "organism_classes",
    "organism_table",
    "paper_a_synthetic",
    "paper_a_tinystories",
    "paper_a_tinystories_details",
    "paper_b_text",
    "read_template_sentences",
    "read_tinystories",
    "read_tinystories_lines",
    "read_wikitext",
    "tinystories_bpe64",
    "word_classes",
]
