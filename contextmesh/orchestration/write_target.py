"""Where a write to a session runs: on the deployments that serve it, or in this process — decided here.

The CLI (``contextmesh recheck|resume|repair``) and the MCP launcher (``deployments/serve_mcp.py``)
both ask :func:`served_target` and act on its answer: a :class:`ServedRecord` means "dispatch to
these deployments", None means "run in this process". The rule, once:

* ``local`` (``--local``, ``--dispatch never``): in this process, nothing is looked up;
* ``auto``: the deployments of a live ``deployments/serve.py`` serving this directory (its served
  record under ``$CONTEXTMESH_HOME/served/``), else in this process;
* ``deployment`` (``--deployment``): the work-pool deployments (``names``: a project's, by default
  ``deployments/prefect.yaml``'s) on ``$PREFECT_API_URL``, which must exist and name this directory —
  never in this process.

With ``check_api`` (the CLI), the API of a record found is checked to answer first, so an
unreachable one is one refusal naming the address. The MCP launcher passes ``check_api=False``:
its dispatcher probes the API itself before every call and refuses while it is down, since a
long-lived server must not fall back to in-process work when the API blinks.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from contextmesh.core.errors import ExecutionError
from contextmesh.orchestration.deployed import configured_record, require_api
from contextmesh.orchestration.local_server import configured_api_url
from contextmesh.orchestration.served_record import ServedRecord, find, peek

__all__ = ["WHERE", "Where", "served_target"]

Where = Literal["auto", "local", "deployment"]
WHERE: tuple[Where, ...] = ("auto", "local", "deployment")


def served_target(
    session_dir: Path,
    where: Where = "auto",
    *,
    check_api: bool = True,
    home: Path | None = None,
    names: Mapping[str, str] | None = None,
) -> ServedRecord | None:
    """The deployments a write to ``session_dir`` is dispatched to, or None to run it in this process.

    A directory that is not a session with a plan is refused (``peek`` names the file) in ``auto``
    and ``deployment`` modes; ``local`` reads nothing.
    """
    if where == "local":
        return None
    if where == "deployment":
        api_url = configured_api_url()
        if not api_url:
            raise ExecutionError("--deployment dispatches to PREFECT_API_URL, which is not set")
        require_api(api_url)
        return configured_record(session_dir, api_url, names)
    if where != "auto":
        raise ExecutionError(f"a write runs where {list(WHERE)} says, not {where!r}")
    session_id, _, _ = peek(str(session_dir))
    record = find(session_id, session_dir, home)
    if record is not None and check_api:
        require_api(record.api_url)
    return record
