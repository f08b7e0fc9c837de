"""GRAPH.md is the one definition of the schema: the parser, the enums and the graph agree with it."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from contextmesh.core import ontology as ontology_module
from contextmesh.core.errors import OntologyError
from contextmesh.core.graph import ContextGraph
from contextmesh.core.ontology import ONTOLOGY, EdgeType, NodeType, graph_md_path, load_ontology, parse_ontology

REPO_ROOT = Path(__file__).resolve().parents[2]
GRAPH_MD = REPO_ROOT / "GRAPH.md"
ORIGIN = "custom/GRAPH.md"
# Directories that are not part of the repository's own tree.
NOT_THE_TREE = {
    ".venv",
    ".venv-core",
    "venv",
    ".git",
    ".tools",
    "node_modules",
    "build",
    "dist",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
}

EXPECTED_MUST_CARRY = {
    "entity": {"canonical", "aliases"},
    "claim": {"provenance"},
    "source": {"origin", "retrieved_at"},
    "decision": {"rationale", "provenance"},
    "assumption": {"status", "version"},
    "evidence": {"kind"},
}


def graph_md_text() -> str:
    return GRAPH_MD.read_text(encoding="utf-8")


def edited(old: str, new: str) -> tuple[str, int]:
    """GRAPH.md with the one line containing ``old`` changed; returns the text and that line's number."""
    lines = graph_md_text().splitlines()
    hits = [i for i, line in enumerate(lines) if old in line]
    assert len(hits) == 1, f"{old!r} should occur on exactly one line of GRAPH.md, found {len(hits)}"
    lines[hits[0]] = lines[hits[0]].replace(old, new)
    return "\n".join(lines) + "\n", hits[0] + 1


def table_rows(section: str) -> list[list[str]]:
    """An independent, minimal reading of one GRAPH.md table: data rows as stripped cells."""
    rows: list[list[str]] = []
    current = ""
    for line in graph_md_text().splitlines():
        if line.startswith("## "):
            current = line[3:].strip().lower()
        elif current == section and line.startswith("|") and line.rstrip().endswith("|"):
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if set("".join(cells)) <= set("-: ") or cells[0].lower() in {"type", "edge"}:
                continue
            rows.append(cells)
    return rows


# -- the parsed tables and the enums --------------------------------------------------------


def test_node_type_enum_equals_the_node_table_in_order_and_as_a_set() -> None:
    symbols = tuple(row[1] for row in table_rows("node types"))
    assert len(symbols) == 6
    assert tuple(t.value for t in NodeType) == ONTOLOGY.node_types == symbols
    assert {t.value for t in NodeType} == set(ONTOLOGY.node_types)
    assert set(ONTOLOGY.node_types) == {t.value for t in NodeType}


def test_edge_type_enum_equals_the_edge_table_in_order_and_as_a_set() -> None:
    names = tuple(row[0] for row in table_rows("edge types"))
    assert len(names) == 10
    assert tuple(t.value for t in EdgeType) == ONTOLOGY.edge_types == names
    assert {t.value for t in EdgeType} == set(ONTOLOGY.edge_types) == set(ONTOLOGY.signatures)
    assert set(ONTOLOGY.signatures) == {t.value for t in EdgeType}


def test_legal_pairs_equal_the_edge_table() -> None:
    for row in table_rows("edge types"):
        pairs = {tuple(p.strip() for p in pair.split("→")) for pair in row[1].split(",")}
        assert ONTOLOGY.signatures[row[0]] == frozenset(pairs), row[0]
    assert ONTOLOGY.legal_pairs("mentions") == [("claim", "entity"), ("source", "entity")]


def test_enums_that_disagree_with_the_tables_are_refused() -> None:
    text, _ = edited("| Evidence | `evidence` |", "| Widget | `widget` |")
    text = text.replace("evidence →", "widget →").replace("→ evidence", "→ widget")
    with pytest.raises(OntologyError, match="NodeType"):
        ontology_module._check_enums_match(parse_ontology(text))


def test_backward_edges_are_depends_on_and_derived_from() -> None:
    assert frozenset({"depends_on", "derived_from"}) == ONTOLOGY.backward


def test_forward_edges_are_produces_only() -> None:
    assert frozenset({"produces"}) == ONTOLOGY.forward
    assert ONTOLOGY.propagating == {"depends_on", "derived_from", "produces"}


def test_the_other_seven_edge_types_carry_no_invalidation() -> None:
    quiet = {t for t, d in ONTOLOGY.invalidation.items() if d == "none"}
    assert quiet == {"mentions", "cites", "contradicts", "supports", "supersedes", "justified_by", "resolves_to"}
    assert quiet.isdisjoint(ONTOLOGY.propagating)


def test_must_carry_is_exactly_the_table_for_every_type() -> None:
    assert {t: set(names) for t, names in ONTOLOGY.must_carry.items()} == EXPECTED_MUST_CARRY


def test_reloading_graph_md_gives_an_equal_ontology() -> None:
    assert load_ontology() == ONTOLOGY
    assert load_ontology(GRAPH_MD) == ONTOLOGY


# -- malformed tables -----------------------------------------------------------------------


def test_node_row_without_a_symbol_is_refused_naming_the_row() -> None:
    text, line = edited("| Claim | `claim` |", "| Claim |  |")
    with pytest.raises(OntologyError) as caught:
        parse_ontology(text, origin=ORIGIN)
    message = str(caught.value)
    assert f"{ORIGIN}:{line}:" in message
    assert "no Symbol column" in message


def test_symbol_that_differs_from_type_is_refused() -> None:
    text, line = edited("| Claim | `claim` |", "| Claim | `assertion` |")
    with pytest.raises(OntologyError) as caught:
        parse_ontology(text, origin=ORIGIN)
    message = str(caught.value)
    assert f"{ORIGIN}:{line}:" in message
    assert "Symbol column is 'assertion'" in message
    assert "does not match Type 'Claim' lowercased ('claim')" in message


def test_unknown_invalidation_direction_is_refused() -> None:
    text, line = edited(
        "| decision → source, claim → claim | none |", "| decision → source, claim → claim | sideways |"
    )
    with pytest.raises(OntologyError) as caught:
        parse_ontology(text, origin=ORIGIN)
    message = str(caught.value)
    assert f"{ORIGIN}:{line}:" in message
    assert "edge type 'cites': Invalidation column is 'sideways'" in message
    assert "['backward', 'forward', 'none']" in message


def test_empty_invalidation_direction_is_refused() -> None:
    text, line = edited(
        "| decision → entity, decision → source | forward |", "| decision → entity, decision → source |  |"
    )
    with pytest.raises(OntologyError) as caught:
        parse_ontology(text, origin=ORIGIN)
    message = str(caught.value)
    assert f"{ORIGIN}:{line}:" in message
    assert "edge type 'produces': Invalidation column is ''" in message


def test_pair_naming_an_undeclared_node_type_is_refused() -> None:
    text, _ = edited("| source → entity, claim → entity |", "| widget → entity, claim → entity |")
    with pytest.raises(OntologyError) as caught:
        parse_ontology(text, origin=ORIGIN)
    message = str(caught.value)
    assert message.startswith(ORIGIN)
    assert "undeclared node types: ['widget']" in message


def test_pair_naming_an_undeclared_node_type_names_the_row() -> None:
    text, line = edited("| source → entity, claim → entity |", "| widget → entity, claim → entity |")
    with pytest.raises(OntologyError, match=re.escape(f"{ORIGIN}:{line}")):
        parse_ontology(text, origin=ORIGIN)


def test_edge_row_with_no_pair_is_refused() -> None:
    text, line = edited("| entity → entity |", "| an alias folds in |")
    with pytest.raises(OntologyError) as caught:
        parse_ontology(text, origin=ORIGIN)
    message = str(caught.value)
    assert f"{ORIGIN}:{line}:" in message
    assert "edge type 'resolves_to' has no legal pair" in message


@pytest.mark.parametrize(
    ("old", "new"),
    [("## Node types", "## Node kinds"), ("## Edge types", "## Edges, informally")],
    ids=["no-node-table", "no-edge-table"],
)
def test_text_without_a_usable_table_is_refused(old: str, new: str) -> None:
    text, _ = edited(old, new)
    with pytest.raises(OntologyError, match=re.escape(f"{ORIGIN} did not yield a usable ontology")):
        parse_ontology(text, origin=ORIGIN)


def test_empty_text_is_not_a_usable_ontology() -> None:
    with pytest.raises(OntologyError, match="did not yield a usable ontology"):
        parse_ontology("", origin=ORIGIN)


def test_duplicate_node_type_is_refused() -> None:
    lines = graph_md_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("| Claim |"))
    lines.insert(index + 1, lines[index])
    with pytest.raises(OntologyError) as caught:
        parse_ontology("\n".join(lines), origin=ORIGIN)
    message = str(caught.value)
    assert f"{ORIGIN}:{index + 2}:" in message
    assert "node type 'claim' is declared twice" in message


def test_duplicate_edge_type_is_refused() -> None:
    lines = graph_md_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("| `cites` |"))
    lines.insert(index + 1, lines[index])
    with pytest.raises(OntologyError) as caught:
        parse_ontology("\n".join(lines), origin=ORIGIN)
    message = str(caught.value)
    assert f"{ORIGIN}:{index + 2}:" in message
    assert "edge type 'cites' is declared twice" in message


# -- where GRAPH.md lives -------------------------------------------------------------------


def test_graph_md_path_is_the_repository_root_copy_in_a_checkout() -> None:
    import contextmesh

    package = Path(contextmesh.__file__).resolve().parent
    if package.parent == REPO_ROOT:  # a checkout or an editable install reads the root file
        assert graph_md_path().resolve() == GRAPH_MD
    else:  # an installed wheel (the core-only run) carries its own copy inside the package
        assert graph_md_path().resolve() == package / "GRAPH.md"
    assert GRAPH_MD.is_file()


def test_exactly_one_graph_md_exists_in_the_repository() -> None:
    found = []
    for folder, dirs, files in os.walk(REPO_ROOT):
        dirs[:] = [d for d in dirs if d not in NOT_THE_TREE and not d.endswith(".egg-info")]
        found.extend(Path(folder) / name for name in files if name == "GRAPH.md")
    assert found == [GRAPH_MD]


# -- a graph reads its own ontology ---------------------------------------------------------


def test_graph_with_a_custom_ontology_reports_that_ontologys_directions() -> None:
    text, _ = edited(
        "| decision → entity, decision → source | forward |", "| decision → entity, decision → source | none |"
    )
    custom = parse_ontology(text, origin=ORIGIN)
    graph = ContextGraph(custom)
    assert graph.ontology is custom
    assert graph.ontology.invalidation["produces"] == "none"
    assert graph.ontology.forward == frozenset()
    assert graph.ontology.propagating == {"depends_on", "derived_from"}
    assert ContextGraph().ontology.forward == {"produces"}  # the module default is untouched
