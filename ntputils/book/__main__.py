"""``python -m ntputils.book ...`` -- see :mod:`ntputils.book.cli`."""

from ntputils.book.cli import main

raise SystemExit(main())
