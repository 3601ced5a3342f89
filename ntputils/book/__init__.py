"""The book runner: ``python -m ntputils.book build`` executes the chapters (papermill) and builds the HTML.

A chapter is re-executed only when its cache key (:mod:`~ntputils.book.keys`) changed; the build is
:mod:`~ntputils.book.build`, one chapter's supervised papermill child :mod:`~ntputils.book.execute`. The
command line of every job is :mod:`ntputils.cli`; sweeps and committed tables are :mod:`ntputils.sweeps`,
the GPU machine's path :mod:`ntputils.gpu`.
"""
