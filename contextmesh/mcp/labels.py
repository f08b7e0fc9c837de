"""A node named by its label: tools that take a node id accept a label where it names exactly one.

An agent reads labels, not ids. :func:`resolve` turns what a client sent into a node id: the id
itself when the graph has it, else the one live node (of the kind the tool takes) whose label — an
assumption's statement — equals it, case and spacing aside. A label shared by several live nodes
is refused naming them, never guessed; one that names nothing is passed on unchanged, so the tool
reports the missing id with its own suggestions.
"""

from __future__ import annotations

from contextmesh.core.errors import ContextMeshError
from contextmesh.core.graph import ContextGraph
from contextmesh.mcp.quoting import quote

__all__ = ["AmbiguousLabelError", "resolve"]

_LISTED = 5


class AmbiguousLabelError(ContextMeshError):
    """A label that more than one live node carries."""


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def resolve(graph: ContextGraph, given: str, node_type: str | None = None) -> str:
    """The node id ``given`` means: itself if it is one, else the one live node labelled so."""
    if given in graph.nodes:
        return given
    wanted = _norm(given)
    if not wanted:
        return given
    found = [
        node.id
        for node in graph.nodes.values()
        if node.live
        and (node_type is None or node.type == node_type)
        and (_norm(node.label) == wanted or _norm(_statement(graph, node.id)) == wanted)
    ]
    if len(found) > 1:
        shown = ", ".join(sorted(found)[:_LISTED])
        raise AmbiguousLabelError(
            f"the label {quote(given)} names {len(found)} live nodes ({shown}); give the id of the one you mean"
        )
    return found[0] if found else given


def _statement(graph: ContextGraph, node_id: str) -> str:
    record = graph.assumptions.get(node_id)
    return "" if record is None else record.statement
