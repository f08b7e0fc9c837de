"""docs/formats/*.md: every rule id that is cited is defined, and the session pages' bounds are the code's.

Cheap checks, not a reader of the pages: rule ids are numbered once each, from 1, per prefix; every id
a page or a format module cites names a rule of its page; and the limits and rule texts that the
session pages and ``execution-v2.md`` quote verbatim are the ones the loaders use. ``session-v3.md``
and ``session-v4.md`` stay for readers of v3 and v4: each is checked against itself (v4 keeps every
v3 rule's number and adds S41-S51, C9-C10; v5 keeps every v4 rule's and adds S52-S58, C11), and the
code's citations are checked against ``session-v5.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contextmesh.core.canonical import MAX_DEPTH
from contextmesh.execution import snapshot
from contextmesh.session import commit, files, layout, lock

ROOT = Path(__file__).resolve().parents[2]
FORMATS = ROOT / "docs" / "formats"
# Which page defines the rules of each prefix.
PAGES = {
    "G": "graph-v3.md",
    "R": "resolver-v2.md",
    "E": "execution-v2.md",
    "L": "runledger-v2.md",
    "P": "proofs-v1.md",
    "J": "journal-v1.md",
    **dict.fromkeys("STFCNW", "session-v5.md"),
}
# Pages kept for readers of an older version: their rules are checked against the page itself.
LEGACY = {"session-v3.md": "session-v5.md", "session-v4.md": "session-v5.md"}
# The modules that implement the formats (elsewhere an "S311" is a linter's code, not a rule).
MODULES = [
    *sorted((ROOT / "contextmesh" / "session").glob("*.py")),
    *sorted((ROOT / "contextmesh" / "formats").glob("*.py")),
    ROOT / "contextmesh" / "execution" / "snapshot.py",
    ROOT / "contextmesh" / "core" / "canonical.py",
    ROOT / "contextmesh" / "orchestration" / "served_record.py",
    ROOT / "tools" / "verify_runledger.py",
    ROOT / "tools" / "verify_ledger_proofs.py",
]
PREFIXES = "".join(PAGES)
# A rule is defined in bold where it is stated: "**S3.**", "**C6 — a failure …**", "**S4–S7.**".
_BOLD = re.compile(rf"\*\*([{PREFIXES}])(\d+)(?:–([{PREFIXES}])(\d+))?(?=\.|\*\*| —)")
# …or, for byte rules stated as a group, in a heading: "## 3. Bytes (rules R1–R4)".
_HEADING = re.compile(rf"^#+ .*\(rules ([{PREFIXES}])(\d+)–([{PREFIXES}])(\d+)\)$", re.MULTILINE)
_CITED = re.compile(rf"(?<!\w)([{PREFIXES}])(\d{{1,2}})(?!\w)")


def text(name: str) -> str:
    return (FORMATS / name).read_text(encoding="utf-8")


def flat(name: str) -> str:
    """The page with every run of white space as one space (a quoted message may wrap)."""
    return " ".join(text(name).split())


def _ranges(matches: list[re.Match[str]]) -> list[str]:
    ids = []
    for match in matches:
        prefix, first, last = match.group(1), int(match.group(2)), match.group(4)
        assert match.group(3) in (None, prefix), match.group(0)
        ids += [f"{prefix}{n}" for n in range(first, int(last or first) + 1)]
    return ids


def bold_rules(name: str) -> list[str]:
    return _ranges(list(_BOLD.finditer(text(name))))


def defined(name: str) -> set[str]:
    return set(bold_rules(name)) | set(_ranges(list(_HEADING.finditer(text(name)))))


def _key(rule: str) -> tuple[str, int]:
    return rule[0], int(rule[1:])


def page_of(prefix: str, name: str) -> str:
    """The page whose rules an id of ``prefix`` cited on page ``name`` names."""
    return name if name in LEGACY and PAGES[prefix] == LEGACY[name] else PAGES[prefix]


ALL_PAGES = sorted({*PAGES.values(), *LEGACY})


@pytest.mark.parametrize("name", ALL_PAGES)
def test_each_rule_is_stated_once_and_the_numbers_run_from_one_without_a_gap(name: str) -> None:
    stated = bold_rules(name)
    assert len(stated) == len(set(stated)), sorted({r for r in stated if stated.count(r) > 1}, key=_key)
    rules = defined(name)
    assert rules, name
    for prefix in sorted({r[0] for r in rules}):
        numbers = sorted(int(r[1:]) for r in rules if r[0] == prefix)
        assert numbers == list(range(1, len(numbers) + 1)), (name, prefix, numbers)
        assert page_of(prefix, name) == name, (prefix, name)


def _cited(source: str) -> set[str]:
    return {f"{p}{n}" for p, n in _CITED.findall(source)}


@pytest.mark.parametrize("name", ALL_PAGES)
def test_every_rule_a_page_cites_is_defined_on_its_own_page(name: str) -> None:
    missing = {rule for rule in _cited(text(name)) if rule not in defined(page_of(rule[0], name))}
    assert not missing, sorted(missing, key=_key)


@pytest.mark.parametrize("module", MODULES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_rule_the_code_cites_is_defined_on_its_page(module: Path) -> None:
    missing = {rule for rule in _cited(module.read_text(encoding="utf-8")) if rule not in defined(PAGES[rule[0]])}
    assert not missing, sorted(missing, key=_key)


def test_v4_keeps_every_v3_rule_and_adds_its_own_after_the_last() -> None:
    old, new = defined("session-v3.md"), defined("session-v4.md")
    assert old <= new
    assert new - old == {f"S{n}" for n in range(41, 52)} | {"C9", "C10"}


def test_v5_keeps_every_v4_rule_and_adds_its_own_after_the_last() -> None:
    old, new = defined("session-v4.md"), defined("session-v5.md")
    assert old <= new
    assert new - old == {f"S{n}" for n in range(52, 59)} | {"C11"}


def test_the_v5_page_states_the_journals_bounds_as_the_loader_applies_them() -> None:
    page = flat("session-v5.md")
    assert layout.MAX_SEGMENTS == 64 and layout.JOURNAL_FLOOR_BYTES == 1_048_576
    assert "at most 64 elements" in page and "max(⌊`graph.bytes` / 8⌋, 1,048,576)" in page
    assert layout.journal_limit(8 * 2**20 * 3) == 3 * 2**20 and layout.journal_limit(100) == 2**20


@pytest.mark.parametrize("name", ["session-v3.md", "session-v4.md", "session-v5.md"])
def test_the_session_pages_bounds_are_the_loaders(name: str) -> None:
    page = flat(name)
    assert files.MANIFEST_MAX_BYTES == 65_536
    assert f"a manifest is at most {files.MANIFEST_MAX_BYTES} bytes" in page
    assert f"{files.MANIFEST_MAX_BYTES + 1:,} bytes" in page  # what is read at most
    assert f"at most {commit.MAX_GENERATION} generations" in page
    assert f"`{lock._HOLDER.pattern.decode()}`" in page
    assert f"at most {lock._HOLDER_MAX + 1} bytes are read" in page
    assert f"nest at most {MAX_DEPTH} levels" in page
    assert f"`a file nests arrays and objects at most {MAX_DEPTH} deep`" in page


@pytest.mark.parametrize("name", ["session-v3.md", "session-v4.md", "session-v5.md"])
def test_the_session_page_quotes_the_readers_rule_texts(name: str) -> None:
    page = flat(name)
    assert f"`{files._RULE}`" in page
    assert "`names in a session directory are plain file names`" in page


def test_the_v5_page_names_the_versions_the_reader_reads_and_the_writer_writes() -> None:
    page = flat("session-v5.md")
    assert layout.READ_VERSIONS == (3, 4, 5) and layout.SESSION_VERSION == 5
    assert "`this ContextMesh reads contextmesh.session v3, v4 and v5`" in page
    assert f"session <dir>: {commit.MIGRATED}" in page


def test_the_execution_pages_attempt_bound_is_the_loaders() -> None:
    page = flat("execution-v2.md")
    bound = snapshot.MAX_ATTEMPT
    assert bound == 2**53 - 2
    assert f"{bound:,}" in page
    assert f"`an attempt is a non-negative integer of at most {bound} (one more run must stay writable)`" in page
    assert "the one its attrs.attempt records`" in page
