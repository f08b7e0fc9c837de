"""The repository stands alone: nothing in it cites a document kept outside it, and its doc links resolve.

Two checks over the files git tracks (a fresh clone is exactly those):

* no tracked file mentions a document kept outside the repository: the folder of notes beside the
  checkout, the architecture note that came before ``docs/architecture.md``, or one of the notes
  this project was started from (:data:`FORBIDDEN`, spelled in pieces so that this file does not
  trip its own check). A fact the code or an ADR rests on is written into the repository
  (``docs/prefect-facts.md``, ``docs/architecture.md``) and cited there. Vendored third-party files
  (``.tools/``, ``node_modules/``) are not the project's words and are not searched;
* every relative link in the project's Markdown (``README.md``, ``GRAPH.md``,
  ``dashboard/README.md``, ``docs/**/*.md``) points at a tracked file or folder, and a ``#fragment``
  into a Markdown page names one of its headings (the anchors GitHub derives from them). Links in
  code blocks and code spans are examples, not links, and are skipped.
"""

from __future__ import annotations

import re
import subprocess
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[1]
VENDORED = (".tools/", "node_modules/")
DOC_PAGES = ("README.md", "GRAPH.md", "dashboard/README.md")

# Spelled in pieces, so that this file does not trip its own check: the sibling notes folder, the old
# architecture note, and the notes by name (bare, which covers ``reference/<name>``) or by path.
_NOTE_NAMES = (
    "prefect" + "-notes",
    "mcp" + "-notes",
    "model" + "-codebases",
    "original" + "-behaviour",
    "seed" + "-contextmesh-readme",
)
_OTHER_NOTES = ("ci" + "-notes", "seed" + "-mesh-mcp-server-note")
FORBIDDEN: tuple[str, ...] = (
    "../" + "shared",
    "ARCHITECTURE" + ".md",
    *_NOTE_NAMES,
    *("reference" + "/" + name for name in _OTHER_NOTES),
)


# -- the files ---------------------------------------------------------------------------------------


def tracked_files() -> list[str]:
    """Every path git tracks in this checkout, relative to the root, with forward slashes."""
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False, timeout=60)
    assert done.returncode == 0, f"git ls-files failed in {ROOT}: {done.stderr.decode(errors='replace').strip()}"
    return sorted(name for name in done.stdout.decode("utf-8").split("\0") if name)


def own_files(names: Iterable[str]) -> list[str]:
    """The names outside vendored folders (at the root or deeper)."""
    return [name for name in names if not any(f"/{folder}" in f"/{name}" for folder in VENDORED)]


# -- check 1: no citation of a document outside the repository -----------------------------------------


def outside_citations(files: Mapping[str, bytes]) -> list[str]:
    """``path:line: mentions '…'`` for every forbidden mention, in path and line order."""
    found = []
    for name, data in sorted(files.items()):
        for number, line in enumerate(data.split(b"\n"), start=1):
            for needle in FORBIDDEN:
                if needle.encode("utf-8") in line:
                    found.append(f"{name}:{number}: mentions '{needle}'")
    return found


# -- check 2: relative links resolve ----------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def prose_lines(text: str, *, blank_spans: bool = True) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with code spans blanked unless asked not to."""
    kept: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
            continue
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            continue
        kept.append((number, _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line) if blank_spans else line))
    return kept


def link_targets(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every inline link, image and link definition in the prose."""
    found = []
    for number, line in prose_lines(text):
        found.extend((number, m.group(1)) for m in _INLINE_LINK.finditer(line))
        definition = _DEFINITION.match(line)
        if definition:
            found.append((number, definition.group(1)))
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lower-cased, punctuation dropped, spaces to dashes."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.replace("`", "").replace("*", "")
    kept = "".join(
        c for c in text.lower() if c in " -_" or unicodedata.category(c)[0] in "LN" or unicodedata.category(c) == "Mn"
    )
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a page, repeated headings numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(text, blank_spans=False):
        heading = _HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(pages: Mapping[str, str], tracked: set[str]) -> list[str]:
    """``page:line: …`` for every relative link whose file, folder or heading does not exist."""
    folders = {str(parent) for name in tracked for parent in PurePosixPath(name).parents if str(parent) != "."}
    problems = []
    for page, text in sorted(pages.items()):
        here = PurePosixPath(page).parent
        for number, target in link_targets(text):
            if not target or _SCHEME.match(target):
                continue
            path_part, _, fragment = target.partition("#")
            if path_part:
                resolved = _normalise(here / unquote(path_part))
                if resolved is None or (resolved not in tracked and resolved not in folders):
                    problems.append(f"{page}:{number}: links to '{target}', which is not a file of the repository")
                    continue
            else:
                resolved = page
            if fragment and resolved.endswith(".md") and resolved in pages and fragment not in anchors(pages[resolved]):
                problems.append(f"{page}:{number}: links to '{target}', but {resolved} has no heading '#{fragment}'")
    return problems


def _normalise(path: PurePosixPath) -> str | None:
    """``a/b/../c`` as ``a/c``; None for a path that climbs out of the repository."""
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/".join(parts)


def doc_pages(names: Iterable[str]) -> list[str]:
    return [n for n in names if n in DOC_PAGES or (n.startswith("docs/") and n.endswith(".md"))]


# -- the real tree -----------------------------------------------------------------------------------------


def test_no_tracked_file_cites_a_document_outside_the_repository() -> None:
    names = own_files(tracked_files())
    assert "README.md" in names and "contextmesh/orchestration/settings.py" in names
    files = {name: (ROOT / name).read_bytes() for name in names if (ROOT / name).is_file()}
    assert outside_citations(files) == []


def test_every_relative_link_in_the_docs_points_at_a_file_of_the_repository() -> None:
    tracked = set(tracked_files())
    pages = {name: (ROOT / name).read_text(encoding="utf-8") for name in doc_pages(sorted(tracked))}
    assert {"README.md", "docs/architecture.md", "docs/prefect-facts.md"} <= set(pages)
    assert broken_links(pages, tracked) == []


# -- the checks themselves ---------------------------------------------------------------------------------


def test_a_citation_outside_the_repository_is_found_with_its_line() -> None:
    files = {
        "a.py": b"# fine\n# see " + ("../" + "shared/x").encode() + b"\n",
        "docs/b.md": ("ARCHITECTURE" + ".md draws ten layers\n").encode(),
        "c.py": ("# (" + "prefect" + "-notes pitfall 14)\n").encode(),
        "d.md": ("see reference/" + "ci" + "-notes for the runner\n").encode(),
        "e.md": b"docs/architecture.md and docs/prefect-facts.md are ours\n",
    }
    assert outside_citations(files) == [
        "a.py:2: mentions '" + "../" + "shared'",
        "c.py:1: mentions '" + "prefect" + "-notes'",
        "d.md:1: mentions 'reference/" + "ci" + "-notes'",
        "docs/b.md:1: mentions '" + "ARCHITECTURE" + ".md'",
    ]


def test_vendored_files_are_not_the_projects_words() -> None:
    names = ["a.py", ".tools/node/x.md", "web/node_modules/y/README.md", "tools/z.py"]
    assert own_files(names) == ["a.py", "tools/z.py"]


def test_a_link_to_a_missing_file_or_heading_is_found() -> None:
    pages = {
        "README.md": "See [the map](docs/map.md#layers), [gone](docs/gone.md) and [x](https://example.org/x).\n",
        "docs/map.md": "# Map\n\n## Layers\n\n[up](../README.md), [here](#nowhere), [adr](adr/), [pic](img/p.png)\n",
    }
    tracked = {"README.md", "docs/map.md", "docs/adr/0001.md"}
    assert broken_links(pages, tracked) == [
        "README.md:1: links to 'docs/gone.md', which is not a file of the repository",
        "docs/map.md:5: links to '#nowhere', but docs/map.md has no heading '#nowhere'",
        "docs/map.md:5: links to 'img/p.png', which is not a file of the repository",
    ]


def test_links_in_code_are_examples_and_a_path_may_not_climb_out() -> None:
    page = (
        "```\n[in a fence](missing.md)\n```\n"
        "~~~~md\n[tilde](missing.md)\n~~~~\n"
        "use `[span](missing.md)`\n"
        "[out](../../x.md)\n"
    )
    assert broken_links({"docs/p.md": page}, {"docs/p.md"}) == [
        "docs/p.md:8: links to '../../x.md', which is not a file of the repository"
    ]


def test_anchors_follow_githubs_rule() -> None:
    page = (
        "## A laptop: the managed local server and serve.py\n"
        "## Recheck → resume: two triggers\n"
        "## `code` and **bold**\n"
        "## Again\n## Again\n"
    )
    assert anchors(page) == {
        "a-laptop-the-managed-local-server-and-servepy",
        "recheck--resume-two-triggers",
        "code-and-bold",
        "again",
        "again-1",
    }
