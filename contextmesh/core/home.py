"""Where ContextMesh keeps its per-user state: ``$CONTEXTMESH_HOME``, else the XDG state directory.

One rule for every reader — the managed Prefect server's home, the served records, the demo's
advisory feed: ``$CONTEXTMESH_HOME`` when it is set and not empty, else
``$XDG_STATE_HOME/contextmesh``, else ``~/.local/state/contextmesh``. As the XDG Base Directory
specification says, an ``XDG_STATE_HOME`` that is empty or not an absolute path is ignored (an
empty one once made the demo feed a path relative to whatever directory a command ran in).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["HOME_ENV", "contextmesh_home"]

HOME_ENV = "CONTEXTMESH_HOME"


def contextmesh_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$CONTEXTMESH_HOME``, else ``$XDG_STATE_HOME/contextmesh``, else ``~/.local/state/contextmesh``."""
    env = os.environ if environ is None else environ
    home = env.get(HOME_ENV)
    if home:
        return Path(home)
    state = env.get("XDG_STATE_HOME", "")
    base = Path(state) if state and Path(state).is_absolute() else Path.home() / ".local" / "state"
    return base / "contextmesh"
