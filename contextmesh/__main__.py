"""``python -m contextmesh``: the same command line as the ``contextmesh`` script."""

from contextmesh.cli import main

raise SystemExit(main())
