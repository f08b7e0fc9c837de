"""GRAPH.md, parsed: the one definition of node types, edge types, legal pairs and invalidation.

The file is read once at import into :data:`ONTOLOGY`. In a checkout or an editable install it is
the ``GRAPH.md`` at the repository root; an installed wheel carries the same file inside the
package. :class:`NodeType` and :class:`EdgeType` are spelled out here so type checkers see them,
and the import fails if they disagree with the parsed tables.

Parser rules, each refused with an :class:`OntologyError` naming the row and the rule:

1. A ``## `` heading sets the section; only ``Node types`` and ``Edge types`` are read.
2. A row is a line that starts and ends with ``|``; separator rows and the header row are skipped.
3. A node row needs a Symbol equal to its Type in lower case; Must carry is a list of
   back-ticked names (an empty cell requires nothing).
4. An edge row's Legal pairs holds one or more ``a → b`` (or ``a -> b``); its Invalidation is
   exactly ``backward``, ``forward`` or ``none``.
5. Every node type an edge pair names is declared in the node table.
6. A file yielding no node types or no edge pairs is not a usable ontology.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from contextmesh.core.errors import OntologyError

__all__ = [
    "DIRECTIONS",
    "ONTOLOGY",
    "Direction",
    "EdgeType",
    "NodeType",
    "Ontology",
    "graph_md_path",
    "load_ontology",
    "parse_ontology",
]

Direction = Literal["backward", "forward", "none"]
DIRECTIONS: tuple[Direction, ...] = ("backward", "forward", "none")

_PAIR = re.compile(r"([a-z_]+)\s*(?:→|->)\s*([a-z_]+)")
_NAME = re.compile(r"`([^`]+)`")
_SEPARATOR = re.compile(r"^[\s:\-]+$")


@dataclass(frozen=True)
class Ontology:
    """The parsed tables. Tuples keep GRAPH.md's order so every listing is deterministic."""

    node_types: tuple[str, ...]
    edge_types: tuple[str, ...]
    signatures: MappingProxyType[str, frozenset[tuple[str, str]]]
    invalidation: MappingProxyType[str, Direction]
    must_carry: MappingProxyType[str, frozenset[str]]
    origin: str = field(default="GRAPH.md", compare=False)

    @property
    def backward(self) -> frozenset[str]:
        """Edge types along which a falling target takes its source down."""
        return frozenset(t for t, d in self.invalidation.items() if d == "backward")

    @property
    def forward(self) -> frozenset[str]:
        """Edge types along which a falling source takes its target down."""
        return frozenset(t for t, d in self.invalidation.items() if d == "forward")

    @property
    def propagating(self) -> frozenset[str]:
        """Every edge type that carries invalidation, in either direction."""
        return self.backward | self.forward

    def legal_pairs(self, edge_type: str) -> list[tuple[str, str]]:
        """The legal (source type, target type) pairs of ``edge_type``, sorted."""
        return sorted(self.signatures.get(edge_type, frozenset()))


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _plain(cell: str) -> str:
    return cell.replace("`", "").strip().lower()


def parse_ontology(text: str, origin: str = "GRAPH.md") -> Ontology:
    """Parse GRAPH.md text into an :class:`Ontology`, refusing any malformed row."""
    section = ""
    node_types: list[str] = []
    must_carry: dict[str, frozenset[str]] = {}
    edge_types: list[str] = []
    signatures: dict[str, frozenset[tuple[str, str]]] = {}
    invalidation: dict[str, Direction] = {}
    rows: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if line.startswith("## "):
            section = line[3:].strip().lower()
            continue
        if section not in {"node types", "edge types"} or not (line.startswith("|") and line.endswith("|")):
            continue
        cells = _cells(line)
        if all(_SEPARATOR.match(cell) for cell in cells if cell):
            continue
        where = f"{origin}:{number}"
        first = _plain(cells[0])
        if section == "node types":
            if first in {"", "type"}:
                continue
            symbol = _plain(cells[1]) if len(cells) > 1 else ""
            if not symbol:
                raise OntologyError(f"{where}: node type '{cells[0]}' has no Symbol column; every node row needs one")
            if symbol != first:
                raise OntologyError(
                    f"{where}: node type '{cells[0]}': Symbol column is '{symbol}', which does not match "
                    f"Type '{cells[0]}' lowercased ('{first}')"
                )
            if symbol in must_carry:
                raise OntologyError(f"{where}: node type '{symbol}' is declared twice")
            node_types.append(symbol)
            must_carry[symbol] = frozenset(_NAME.findall(cells[3])) if len(cells) > 3 else frozenset()
        else:
            if first in {"", "edge"}:
                continue
            direction = _plain(cells[2]) if len(cells) > 2 else ""
            if direction not in DIRECTIONS:
                raise OntologyError(
                    f"{where}: edge type '{first}': Invalidation column is '{direction}'; "
                    f"must be one of {list(DIRECTIONS)}"
                )
            pairs = frozenset(_PAIR.findall(cells[1])) if len(cells) > 1 else frozenset()
            if not pairs:
                raise OntologyError(f"{where}: edge type '{first}' has no legal pair; write them as 'a → b'")
            if first in signatures:
                raise OntologyError(f"{where}: edge type '{first}' is declared twice")
            edge_types.append(first)
            rows[first] = where
            signatures[first] = pairs
            invalidation[first] = direction
    if not node_types or not signatures:
        raise OntologyError(f"{origin} did not yield a usable ontology: it needs a Node types and an Edge types table")
    for edge_type, pairs in signatures.items():
        undeclared = sorted({t for pair in pairs for t in pair} - set(node_types))
        if undeclared:
            raise OntologyError(
                f"{rows[edge_type]}: edge type '{edge_type}': edge table references undeclared node types: "
                f"{undeclared}; every type in a legal pair must be a row of the node table"
            )
    return Ontology(
        node_types=tuple(node_types),
        edge_types=tuple(edge_types),
        signatures=MappingProxyType(signatures),
        invalidation=MappingProxyType(invalidation),
        must_carry=MappingProxyType(must_carry),
        origin=origin,
    )


def graph_md_path() -> Path:
    """Where this installation's GRAPH.md is: inside the package (wheel) or at the repo root."""
    package = Path(__file__).resolve().parent.parent  # contextmesh/, above core/
    packaged = package / "GRAPH.md"
    if packaged.is_file():
        return packaged
    return package.parent / "GRAPH.md"


def load_ontology(path: Path | None = None) -> Ontology:
    """Read and parse a GRAPH.md (this installation's by default)."""
    source = path or graph_md_path()
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as exc:
        raise OntologyError(f"cannot read the schema file {source}: {exc.strerror}") from None
    return parse_ontology(text, origin=str(source.name if path is None else source))


ONTOLOGY = load_ontology()


class NodeType(StrEnum):
    """The six node types of GRAPH.md (checked against the parsed table at import)."""

    ENTITY = "entity"
    CLAIM = "claim"
    SOURCE = "source"
    DECISION = "decision"
    ASSUMPTION = "assumption"
    EVIDENCE = "evidence"


class EdgeType(StrEnum):
    """The ten edge types of GRAPH.md (checked against the parsed table at import)."""

    MENTIONS = "mentions"
    DERIVED_FROM = "derived_from"
    CITES = "cites"
    CONTRADICTS = "contradicts"
    SUPPORTS = "supports"
    DEPENDS_ON = "depends_on"
    PRODUCES = "produces"
    SUPERSEDES = "supersedes"
    JUSTIFIED_BY = "justified_by"
    RESOLVES_TO = "resolves_to"


def _check_enums_match(ontology: Ontology) -> None:
    if tuple(NodeType) != ontology.node_types:
        raise OntologyError(f"NodeType {[t.value for t in NodeType]} differs from GRAPH.md {list(ontology.node_types)}")
    if tuple(EdgeType) != ontology.edge_types:
        raise OntologyError(f"EdgeType {[t.value for t in EdgeType]} differs from GRAPH.md {list(ontology.edge_types)}")


_check_enums_match(ONTOLOGY)
