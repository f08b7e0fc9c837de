"""Nothing of the engine knows the demo: its plan, keys, feed, corpus name and texts live in contextmesh/demo/.

The command line and the dashboard run the demo, so they may name it; the MCP server's ``--demo`` may
import the demo's own functions (never spell its values). Every other module under ``contextmesh/``
is scanned as text, comments and docstrings included, and parsed for imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import contextmesh
from contextmesh.demo import auth, execute, knowledge, saved

PACKAGE_DIR = Path(contextmesh.__file__).resolve().parent
RUNS_THE_DEMO = ("cli", "dashboard")  # the surfaces whose job includes running the demo
MAY_IMPORT_THE_DEMO = (*RUNS_THE_DEMO, "mcp")

DEMO_VALUES = sorted(
    {
        auth.PLAN_NAME,
        auth.ADVISORY_TEXT,
        *auth.DEFAULT_KEYS.values(),
        # The corpus name is also the demo package's import path, so it counts only as quoted text.
        f'"{saved.DEMO_CORPUS}"',
        f"'{saved.DEMO_CORPUS}'",
        saved.default_feed().name,
        execute.REPAIR_GROUND,
        knowledge.REPLACEMENT,
        knowledge.EVIDENCE_ID,
        "argon2-cffi",
        "sidecar.break",
        "break_assumption",
    }
)


def engine_modules(exempt: tuple[str, ...]) -> dict[str, str]:
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR).parts
        if parts[0] in ("demo", *exempt):
            continue
        found["/".join(parts)] = path.read_text(encoding="utf-8")
    return found


def test_no_engine_module_spells_a_value_of_the_demo() -> None:
    modules = engine_modules(RUNS_THE_DEMO)
    assert "orchestration/flow_steps.py" in modules and "session/layout.py" in modules
    spelled = {name: [v for v in DEMO_VALUES if v in text] for name, text in modules.items()}
    assert {name: values for name, values in spelled.items() if values} == {}


def test_only_the_surfaces_import_the_demo() -> None:
    importers = []
    for name, text in engine_modules(MAY_IMPORT_THE_DEMO).items():
        for node in ast.walk(ast.parse(text)):
            targets = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            importers += [f"{name}:{node.lineno} {t}" for t in targets if t.startswith("contextmesh.demo")]  # type: ignore[attr-defined]
    assert importers == []


def test_the_scan_would_see_a_mention() -> None:
    """Not vacuous: the values are the demo's real ones and appear in the demo itself."""
    demo_text = "".join(p.read_text(encoding="utf-8") for p in (PACKAGE_DIR / "demo").glob("*.py"))
    assert "secure-authentication" in DEMO_VALUES and '"contextmesh.demo"' in DEMO_VALUES
    assert all(value in demo_text for value in (auth.PLAN_NAME, f'"{saved.DEMO_CORPUS}"', execute.REPAIR_GROUND))
