"""The book's generated pages as pure renderers of data: the status page (:mod:`.status`), the reproduction
scorecard and its headline (:mod:`.scorecard`) and the history of rules in git (:mod:`.rule_history`). The
runner (:mod:`ntputils.book.pages`) collects the build's state into a snapshot and calls them; nothing here
imports the runner. Sphinx, run by jupyter-book, loads the book's extension (:mod:`.sphinx_ext`: figures kept
at a legible width, :mod:`.png`); the browser test checks the same PNG facts.
"""
