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

from ntputils.lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (see ntputils.lazy)
_LAZY = {
    "classify": "ntputils.data.corpora.lexicon",
    "word_classes": "ntputils.data.corpora.lexicon",
    "ORGANISM_CLASSES": "ntputils.data.corpora.organism_templates",
    "ORGANISM_TABLE": "ntputils.data.corpora.organism_templates",
    "organism": "ntputils.data.corpora.organism_templates",
    "organism_attribute_classes": "ntputils.data.corpora.organism_templates",
    "organism_classes": "ntputils.data.corpora.organism_templates",
    "organism_table": "ntputils.data.corpora.organism_templates",
    "PaperATinyStories": "ntputils.data.corpora.paper_a",
    "paper_a_synthetic": "ntputils.data.corpora.paper_a",
    "paper_a_tinystories": "ntputils.data.corpora.paper_a",
    "paper_a_tinystories_details": "ntputils.data.corpora.paper_a",
    "WindowedStories": "ntputils.data.corpora.tinystories100",
    "paper_b_text": "ntputils.data.corpora.paper_b_corpora",
    "tinystories_bpe64": "ntputils.data.corpora.tinystories100",
    "ChecksumError": "ntputils.data.corpora.readers",
    "DataUnavailableError": "ntputils.data.corpora.readers",
    "read_template_sentences": "ntputils.data.corpora.readers",
    "read_tinystories": "ntputils.data.corpora.readers",
    "read_tinystories_lines": "ntputils.data.corpora.readers",
    "read_wikitext": "ntputils.data.corpora.readers",
}

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

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
