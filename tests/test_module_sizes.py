"""Small modules, one concept each: the sizes docs/architecture.md states ("Where a change goes").

A module over 500 lines or a function over 80 is a sign that two concepts share a file; split it
by concept (docs/adr/0007) rather than raising the bound. The median keeps the tree from drifting
towards modules that are all just under the ceiling.
"""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "contextmesh"
MAX_MODULE_LINES = 500
MEDIAN_MODULE_LINES = 250
MAX_FUNCTION_LINES = 80


def modules() -> list[Path]:
    found = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    assert len(found) > 50, "the scan sees the package"
    return found


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_the_ceiling() -> None:
    over = {p.relative_to(PACKAGE).as_posix(): n for p in modules() if (n := line_count(p)) > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines (split by concept): {over}"


def test_the_median_module_is_small() -> None:
    assert statistics.median(line_count(p) for p in modules()) <= MEDIAN_MODULE_LINES


def test_no_function_is_over_the_ceiling() -> None:
    long_functions = []
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long_functions.append(f"{path.relative_to(PACKAGE).as_posix()}:{node.name} ({length})")
    assert not long_functions, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"
