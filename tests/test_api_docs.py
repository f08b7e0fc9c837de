"""docs/api.md and ``contextmesh.__all__`` name the same things, and every example on the page runs.

In the style of httpx's exported-members test: a name is *documented* when it appears, in
backticks, in a heading of docs/api.md (``### `Plan`, `RoundReport```). Every exported name is
documented exactly once, every documented name is exported, every documented name is used in a
Python example of its own section, and every ``python`` block of the page runs — each in a fresh
namespace, with an empty temporary directory as the working directory — importing nothing of the
package but names of its root.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

import contextmesh

PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"
HEADING = re.compile(r"^(#{1,6}) (.*)$")
NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Section:
    """One heading of the page, the names it documents and the Python blocks under it."""

    heading: str
    line: int
    names: tuple[str, ...]
    examples: tuple[tuple[int, str], ...]


def read_page(text: str) -> list[Section]:
    """Split a page into sections at every heading; code fences are not headings."""
    sections: list[Section] = []
    heading, line, names, examples = "(top)", 0, (), []
    fence: tuple[str, int, list[str]] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        found = FENCE.match(raw)
        if fence is not None:
            if found and not found.group(1):
                language, start, body = fence
                if language == "python":  # padded so a traceback's line numbers are the page's
                    examples.append((start, "\n" * start + "\n".join(body) + "\n"))
                fence = None
            else:
                fence[2].append(raw)
            continue
        if found:
            fence = (found.group(1), number, [])
            continue
        title = HEADING.match(raw)
        if title:
            sections.append(Section(heading, line, names, tuple(examples)))
            heading, line, names, examples = title.group(2), number, tuple(NAME.findall(title.group(2))), []
    assert fence is None, f"docs/api.md: the fence opened at line {fence[1]} is never closed"
    sections.append(Section(heading, line, names, tuple(examples)))
    return sections


SECTIONS = read_page(PAGE.read_text(encoding="utf-8"))
EXAMPLES = [(f"{s.heading}@{start}", code) for s in SECTIONS for start, code in s.examples]


def documented() -> Counter[str]:
    return Counter(name for section in SECTIONS for name in section.names)


def test_every_exported_name_is_documented() -> None:
    assert sorted(set(contextmesh.__all__) - set(documented())) == []


def test_every_documented_name_is_exported() -> None:
    assert sorted(set(documented()) - set(contextmesh.__all__)) == []


def test_every_name_is_documented_once() -> None:
    assert {name: count for name, count in documented().items() if count > 1} == {}


def test_every_documented_name_is_used_in_an_example_of_its_section() -> None:
    unused = []
    for section in SECTIONS:
        code = "".join(example for _, example in section.examples)
        used = {node.id for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Name)} if code else set()
        used |= {
            a.asname or a.name for n in ast.walk(ast.parse(code)) if isinstance(n, ast.ImportFrom) for a in n.names
        }
        unused += [f"{section.heading}: {name}" for name in section.names if name not in used]
    assert unused == []


def test_examples_import_only_the_package_root() -> None:
    deep = []
    for where, code in EXAMPLES:
        for node in ast.walk(ast.parse(code)):
            modules = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            deep += [f"{where}: {m}" for m in modules if m.startswith("contextmesh.")]
    assert deep == []


def test_the_page_has_an_example_per_section_of_names() -> None:
    assert len(EXAMPLES) >= 25
    assert [s.heading for s in SECTIONS if s.names and not s.examples] == []


@pytest.mark.parametrize("code", [code for _, code in EXAMPLES], ids=[where for where, _ in EXAMPLES])
def test_the_example_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "api_example"}
    exec(compile(code, str(PAGE), "exec"), namespace)


# -- the page reader itself -------------------------------------------------------------------------


def test_the_reader_finds_names_in_headings_only_and_code_in_python_fences() -> None:
    page = (
        "# Title `Plan`\n\nProse names `Session` without documenting it.\n\n"
        "## Group\n\n### `A`, `b_c`\n\n```python\nx = 1\n```\n\n```\n# not a heading\n```\n\n"
        "### `D`\n\n```text\nno\n```\n"
    )
    sections = read_page(page)
    assert [(s.heading, s.names) for s in sections] == [
        ("(top)", ()),
        ("Title `Plan`", ("Plan",)),
        ("Group", ()),
        ("`A`, `b_c`", ("A", "b_c")),
        ("`D`", ("D",)),
    ]
    assert sections[3].examples == ((9, "\n" * 9 + "x = 1\n"),)
    assert sections[4].examples == ()


def test_an_example_that_fails_fails_the_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AssertionError):
        test_the_example_runs("from contextmesh import slug\nassert slug('a', 'b') == 'nope'\n", tmp_path, monkeypatch)
    assert "api_example" not in sys.modules
