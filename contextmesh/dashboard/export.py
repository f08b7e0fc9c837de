"""``contextmesh export``: write the dashboard's payload and its page.

``export(out_dir, ...)`` writes ``out_dir/data/mesh.json`` (the payload, ``canonical.file_bytes``)
and ``out_dir/index.html`` (the page; with ``inline`` the payload is embedded and the page is one
file that works from ``file://``). Each file is written whole (a temporary sibling, then a
rename), so a reader never sees half a page. ``render_summary`` is the text the CLI prints.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contextmesh.core.canonical import file_bytes, sha256_hex
from contextmesh.dashboard.page import render_page
from contextmesh.dashboard.payload import DEFAULT_ROUNDS, build_payload

if TYPE_CHECKING:
    from contextmesh.session.session import Session

__all__ = ["DATA_PATH", "PAGE_PATH", "export", "render_summary", "write_files"]

DATA_PATH = Path("data") / "mesh.json"
PAGE_PATH = Path("index.html")


def export(
    out_dir: Path,
    *,
    session_dir: Path | None = None,
    rounds: int = DEFAULT_ROUNDS,
    inline: bool = False,
    feed: Path | None = None,
    session: Session | None = None,
) -> dict[str, Any]:
    """Build the payload (the demo's, or a saved session's read-only) and write data and page.

    Returns plain data describing what was written, for ``--json`` and :func:`render_summary`.
    """
    payload = build_payload(session_dir=session_dir, rounds=rounds, feed=feed, session=session)
    data = file_bytes(payload)
    page = render_page(data if inline else None).encode("utf-8")
    write_files(out_dir, data, page)
    graph = payload["graph"]
    header = payload["header"]
    execution = payload["execution"]
    return {
        "out": str(out_dir),
        "data": str(out_dir / DATA_PATH),
        "page": str(out_dir / PAGE_PATH),
        "inline": inline,
        "data_bytes": len(data),
        "page_bytes": len(page),
        "data_sha256": sha256_hex(data),
        "source": payload["source"],
        "nodes_live": header["nodes_live"],
        "nodes_total": header["nodes_total"],
        "edges_live": header["edges_live"],
        "edges_total": header["edges_total"],
        "walks": header["walks"],
        "graph": {"drawn": graph["drawn"], "of": graph["drawable"], "sampled": graph["sampled"], "cap": graph["cap"]},
        "ledger": None
        if execution is None
        else {
            "entries": execution["ledger"]["entries"],
            "head": execution["ledger"]["head"],
            "verified": execution["ledger"]["verified"],
        },
    }


def write_files(out_dir: Path, data: bytes, page: bytes) -> None:
    """Write ``data/mesh.json`` and ``index.html`` under ``out_dir``, each replaced whole."""
    for relative, content in ((DATA_PATH, data), (PAGE_PATH, page)):
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        scratch.write_bytes(content)
        scratch.replace(target)


def render_summary(summary: dict[str, Any]) -> str:
    """What ``export`` wrote, for a person."""
    source = summary["source"]
    if source["kind"] == "demo":
        origin = f"the bundled demo ({source['walk_rounds']} walk rounds, plan {source['plan']})"
    else:
        origin = f"session generation {source['generation']} ({source['walk_rounds']} walk rounds asked in memory)"
    graph = summary["graph"]
    drawn = (
        f"sampled {graph['drawn']} of {graph['of']} nodes (cap {graph['cap']})"
        if graph["sampled"]
        else f"all {graph['drawn']} nodes drawn"
    )
    lines = [
        f"EXPORT {origin}",
        f"  nodes {summary['nodes_live']:,} live of {summary['nodes_total']:,} · "
        f"edges {summary['edges_live']:,} live of {summary['edges_total']:,} · {summary['walks']:,} walks",
        f"  graph panel: {drawn}",
    ]
    ledger = summary["ledger"]
    if ledger is not None:
        state = "verifies" if ledger["verified"] else "DOES NOT VERIFY"
        lines.append(f"  run ledger: {ledger['entries']} entries · head {ledger['head'][:16]}… · chain {state}")
    lines.append(f"  wrote {summary['data']} ({summary['data_bytes']:,} bytes, sha256 {summary['data_sha256'][:16]}…)")
    how = "payload inlined: opens from disk" if summary["inline"] else "reads data/mesh.json: serve the folder"
    lines.append(f"  wrote {summary['page']} ({summary['page_bytes']:,} bytes; {how})")
    return "\n".join(lines)
