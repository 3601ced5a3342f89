"""``python -m ntputils.book ...``: the project's command line, :mod:`ntputils.cli` (also ``ntpbook``)."""

from ntputils.cli import main

raise SystemExit(main())
