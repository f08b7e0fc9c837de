"""The ``contextmesh`` command line: parse, make one library call, render.

Every command accepts ``--json`` and then prints one JSON document and nothing else. Commands that
need Prefect import it lazily, so ``ask`` starts fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from contextmesh.canonical import file_bytes
from contextmesh.errors import ContextMeshError
from contextmesh.ontology import ONTOLOGY, graph_md_path

__all__ = ["main"]

Handler = Callable[[argparse.Namespace], tuple[Any, str]]


def _schema(_: argparse.Namespace) -> tuple[Any, str]:
    data: dict[str, Any] = {
        "file": str(graph_md_path()),
        "node_types": {t: sorted(ONTOLOGY.must_carry[t]) for t in ONTOLOGY.node_types},
        "edge_types": {
            t: {"pairs": [f"{a}->{b}" for a, b in ONTOLOGY.legal_pairs(t)], "invalidation": ONTOLOGY.invalidation[t]}
            for t in ONTOLOGY.edge_types
        },
    }
    lines = [f"schema: {data['file']}", "", "NODE TYPES (must carry)"]
    lines += [f"  {t:<11} {', '.join(names) or '-'}" for t, names in data["node_types"].items()]
    lines += ["", "EDGE TYPES (invalidation: legal pairs)"]
    for t, spec in data["edge_types"].items():
        lines.append(f"  {t:<13} {spec['invalidation']:<8} {', '.join(spec['pairs'])}")
    return data, "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="contextmesh", description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    schema = commands.add_parser("schema", help="print the ontology GRAPH.md defines")
    schema.set_defaults(handler=_schema)
    for sub in commands.choices.values():
        sub.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the process exit code."""
    args = _parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        data, text = handler(args)
    except ContextMeshError as exc:
        print(f"contextmesh: {exc}", file=sys.stderr)
        return 1
    if args.json:
        sys.stdout.write(file_bytes(data).decode("utf-8"))
    else:
        print(text)
    return 0
