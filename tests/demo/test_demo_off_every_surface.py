"""Nothing in ``contextmesh/`` outside ``demo/`` mentions the demo's plan, keys, feed or corpus (issue 17).

The bundled demo is an ordinary project (``contextmesh/demo/contextmesh.toml``). The surfaces — the
command line, the MCP server, the dashboard — reach it only as "the bundled example project" through
one seam, :mod:`contextmesh.project.bundled`, which names its folder; everything else they get is
what that project's file names (its registry, plan, flat baseline and ``[project] extension``,
ADR 0023). So every module outside ``demo/`` — the surfaces included, no exemption — is scanned:

* as text (comments and docstrings too) for the demo's values: its plan's name, task names and
  grounds, every key its registry holds, its feed's file name and advisory, its corpus label,
  files, assumptions and evidence;
* as a syntax tree for any import of ``contextmesh.demo`` (``import``, ``from``, relative, or a
  literal ``import_module``/``__import__`` name), and for the folder named in a path
  (``… / "demo"``) anywhere but the seam.

The demo's own commands are contributed by it: their handlers are defined in ``contextmesh/demo/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import contextmesh
from contextmesh.demo import auth, execute, knowledge, saved

PACKAGE_DIR = Path(contextmesh.__file__).resolve().parent
SEAM = "project/bundled.py"
DEMO_COMMANDS = [("demo",), ("demo", "advisory"), ("execute",), ("invalidate",), ("session", "save")]


def _demo_values() -> list[str]:
    registry = saved.demo_registry(Path("feed.json")).describe()
    plan = contextmesh.Plan(auth.PLAN_NAME, contextmesh.ContextGraph(), registry=saved.demo_registry(Path("f.json")))
    auth.declare_plan(plan)
    _, sidecar = knowledge.load_demo()
    values = {
        auth.PLAN_NAME,
        auth.ADVISORY_TEXT,
        "argon2-cffi",
        *registry["workers"],
        *registry["auditors"],
        *(task.assumes for task in plan.tasks.values()),
        *(f'"{name}"' for name in plan.tasks if name not in ("schema", "tokens", "routes")),
        execute.REPAIR_GROUND,
        saved.default_feed().name,
        # The corpus label is also the demo package's import path: quoted text, or the import checks below.
        f'"{saved.DEMO_CORPUS}"',
        f"'{saved.DEMO_CORPUS}'",
        *(path.name for path in (knowledge.CORPUS_PATH, knowledge.SIDECAR_PATH, knowledge.BREAK_PATH)),
        knowledge.REPLACEMENT,
        knowledge.EVIDENCE_ID,
        *(assumption.statement for assumption in sidecar.assumptions),
        "sidecar.break",
        "break_assumption",
    }
    return sorted(values)


def outside_the_demo() -> dict[str, str]:
    return {
        "/".join(path.relative_to(PACKAGE_DIR).parts): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        if path.relative_to(PACKAGE_DIR).parts[0] != "demo"
    }


def demo_imports(text: str) -> list[str]:
    """Every import of the demo package in ``text`` (a module outside it), with its line."""
    found = []
    for node in ast.walk(ast.parse(text)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            targets = [base, *(f"{base}.{a.name}" for a in node.names)] if not node.level else [f"relative {base}"]
            targets += [f"relative .{a.name}" for a in node.names if node.level and a.name == "demo"]
            if node.level and base.split(".")[0] == "demo":
                targets.append("contextmesh.demo (relative)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            targets = [node.value] if node.value.startswith("contextmesh.demo") else []
        found += [f"{getattr(node, 'lineno', 0)} {t}" for t in targets if t.startswith("contextmesh.demo")]
    return found


def folder_named(text: str) -> list[int]:
    """Lines where a path is built with the demo's folder name (``something / "demo"``)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and isinstance(node.right, ast.Constant)
        and node.right.value == "demo"
    ]


def test_no_module_outside_the_demo_spells_its_plan_keys_feed_or_corpus() -> None:
    modules = outside_the_demo()
    assert {"cli/parser.py", "cli/reads.py", "mcp/command.py", "dashboard/payload.py"} <= set(modules)
    values = _demo_values()
    spelled = {name: [v for v in values if v in text] for name, text in modules.items()}
    assert {name: found for name, found in spelled.items() if found} == {}


def test_no_module_outside_the_demo_imports_it() -> None:
    found = {name: demo_imports(text) for name, text in outside_the_demo().items()}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_only_the_seam_names_the_demo_folder() -> None:
    from contextmesh.project.bundled import BUNDLED_DIR

    found = {name: folder_named(text) for name, text in outside_the_demo().items()}
    assert {name for name, lines in found.items() if lines} == {SEAM}
    assert BUNDLED_DIR == PACKAGE_DIR / "demo" and (BUNDLED_DIR / "contextmesh.toml").is_file()


def test_the_demo_commands_are_the_demo_packages_own() -> None:
    from contextmesh.cli.parser import build_parser, leaf_parsers

    leaves = leaf_parsers(build_parser())
    modules = {words: leaves[words].get_default("handler").__func__.__module__ for words in DEMO_COMMANDS}
    assert modules == dict.fromkeys(DEMO_COMMANDS, "contextmesh.demo.demo_commands")


def test_the_scans_see_a_mention() -> None:
    """Not vacuous: the values are the demo's real ones and the checks catch each form of mention."""
    values = _demo_values()
    demo_text = "".join(p.read_text(encoding="utf-8") for p in (PACKAGE_DIR / "demo").glob("*.py"))
    assert "secure-authentication" in values and "auth.hash.bcrypt.v1" in values and '"hashing"' in values
    assert "demo-feed.json" in values and '"contextmesh.demo"' in values and "corpus.json" in values
    assert all(value in demo_text for value in (auth.PLAN_NAME, f'"{saved.DEMO_CORPUS}"', execute.REPAIR_GROUND))
    for source in (
        "from contextmesh.demo.auth import publish\n",
        "def f():\n    import contextmesh.demo.knowledge\n",
        "import importlib\nimportlib.import_module('contextmesh.demo.saved')\n",
        "from contextmesh import demo\n",
    ):
        assert demo_imports(source), source
    assert demo_imports("from contextmesh.project import bundled\n") == []
    assert folder_named("from pathlib import Path\nPath('x') / 'demo'\n") == [2]


@pytest.mark.parametrize("words", DEMO_COMMANDS)
def test_every_demo_command_still_parses(words: tuple[str, ...]) -> None:
    from contextmesh.cli.parser import build_parser, leaf_parsers

    assert words in leaf_parsers(build_parser())
