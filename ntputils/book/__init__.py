"""The book runner: ``python -m ntputils.book build`` executes the chapters (papermill) and builds the HTML.

A chapter is re-executed only when its cache key (:mod:`~ntputils.book.keys`) changed; the commands are in
:mod:`~ntputils.book.cli`, parameter sweeps on Dask in :mod:`~ntputils.book.sweep`.
"""
