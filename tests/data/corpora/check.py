"""Check the question corpora under this folder: standard library only, never imports ContextMesh.

Run `python3 tests/data/corpora/check.py` from the repository root. It checks that every JSON file
parses, that question ids are unique and every field has an allowed value, that every quote is a
unique substring of its document (both as written and with link markup removed, since a quote must
survive ingestion), that every link between documents reaches a document, heading or text fragment
that exists, that every decision, assumption, scenario and span key named anywhere exists, and it
lists paraphrase questions that share a content word (by a crude stem) with their answer sentence.
It prints counts by kind and split. It exits 1 on any error; stem warnings are for a person to read.
"""

from __future__ import annotations

import json
import re
import sys
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
LINK = re.compile(r'\[([^\]]*)\]\(([^)\s]+)(?:\s+"([^"]*)")?\)')
LINK_TITLES = {"cites", "supersedes", "contradicts"}
DEAD_ENDS = {None, "entity_unresolved", "no_typed_edge", "wrong_node_type", "pruned_too_early", "any"}
EDGES = re.findall(
    r"\S+", "supersedes depends_on contradicts cites derived_from produces supports justified_by mentions"
)
KINDS = {
    "paraphrase",
    "alias",
    "acronym",
    "acronym-ambiguous",
    "temporal",
    "typo",
    "unanswerable-present",
    "body-only",
    "after-disproof",
    *(f"multihop:{edge}" for edge in EDGES),
    *(f"dead-end:{reason}" for reason in sorted(DEAD_ENDS - {None, "any"}, key=str)),
}
STOP = frozenset(
    re.findall(
        r"\S+",
        """a an the of to in on at by for from with and or but not no is are was were be been being
    do does did done has have had having it its this that these those there their them they he she
    his her we our us you your i me my what which who whom whose when where why how whether if then
    than so as into onto over under about after before between during through until up down out off
    again once also only just still ever any all each every both either neither some such more most
    other another same can could would should will shall may might must said say says tell told
    happen happened one s t""",
    )
)
# Decision keys, assumption keys, scenario keys.
Keys = tuple[set[str], set[str], set[str]]
QUESTION_FIELDS = re.findall(
    r"\S+", "id split kind question answerable gold expect_dead_end as_of after_scenario edge note"
)


def stem(word: str) -> str:
    """A deliberately crude stem: enough to catch grow/growth and reading/read, and to over-warn."""
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "ed", "es", "s", "ly", "th"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:5]


def content_stems(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9][a-z0-9_\-./]*", text.lower())
    return {stem(w.strip("-./")) for w in words if w.strip("-./") and w not in STOP}


def strip_links(text: str) -> str:
    return LINK.sub(lambda m: m.group(1), text)


def split_front_matter(raw: str) -> tuple[dict[str, str], str]:
    if not raw.startswith("---\n"):
        return {}, raw
    end = raw.index("\n---\n", 4)
    fields = {}
    for line in raw[4:end].splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields, raw[end + 5 :]


def slug(heading: str) -> str:
    text = re.sub(r"[^\w\s-]", "", heading.strip().lower())
    return re.sub(r"\s", "-", text)


class Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")

    def load_json(self, path: Path) -> Any:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            self.error(str(path.relative_to(REPO)), f"does not parse: {exc}")
            return None


class Documents:
    """The water corpus's documents: raw text, text without link markup, headings."""

    def __init__(self, folder: Path, checker: Checker) -> None:
        self.checker = checker
        self.raw: dict[str, str] = {}
        self.plain: dict[str, str] = {}
        self.front: dict[str, dict[str, str]] = {}
        for path in sorted(folder.iterdir()):
            text = path.read_text(encoding="utf-8")
            self.front[path.name], body = split_front_matter(text)
            self.raw[path.name] = body
            self.plain[path.name] = strip_links(body)

    def check_quote(self, where: str, doc: str, quote: str) -> None:
        if doc not in self.raw:
            self.checker.error(where, f"document {doc!r} is not in the corpus")
            return
        for label, text in (("as written", self.raw[doc]), ("without links", self.plain[doc])):
            count = text.count(quote)
            if count != 1:
                self.checker.error(where, f"quote {quote!r} occurs {count} times in {doc} {label}")

    def sentence(self, doc: str, quote: str) -> str:
        text = self.plain.get(doc, "")
        for paragraph in re.split(r"\n\s*\n", text):
            for sentence in re.split(r"(?<=[.!?])\s+", paragraph.replace("\n", " ")):
                if quote in sentence:
                    return sentence
        return quote

    def check_links(self) -> None:
        for name, body in self.raw.items():
            for match in LINK.finditer(body):
                label, target, title = match.groups()
                if "://" in target or target.startswith("mailto:"):
                    continue
                where = f"docs/{name} link [{label}]({target})"
                if title is not None and title not in LINK_TITLES:
                    self.checker.error(where, f"title {title!r} is not one of {sorted(LINK_TITLES)}")
                file, _, fragment = target.partition("#")
                if file not in self.raw:
                    self.checker.error(where, f"target {file!r} is not a document of the corpus")
                    continue
                if fragment.startswith(":~:text="):
                    wanted = urllib.parse.unquote(fragment[len(":~:text=") :])
                    count = self.plain[file].count(wanted)
                    if count != 1:
                        self.checker.error(where, f"text fragment {wanted!r} occurs {count} times")
                elif fragment:
                    slugs = {slug(line.lstrip("#")) for line in self.raw[file].splitlines() if line.startswith("#")}
                    if fragment not in slugs:
                        self.checker.error(where, f"no heading with slug {fragment!r}")

    def check_front_matter(self) -> None:
        undated = [name for name, fields in self.front.items() if "date" not in fields]
        if len(undated) != 1:
            self.checker.error("docs", f"expected exactly one undated document, found {undated}")
        for name, fields in self.front.items():
            date = fields.get("date")
            if date is not None and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
                self.checker.error(f"docs/{name}", f"date {date!r} is not YYYY-MM-DD")

    def words(self) -> int:
        return sum(len(re.findall(r"\S+", text)) for text in self.plain.values())


def check_sidecar(checker: Checker, docs: Documents, folder: Path) -> Keys:
    decisions_file = checker.load_json(folder / "decisions.json") or {}
    scenarios_file = checker.load_json(folder / "scenarios.json") or {}
    assumptions = {a["key"] for a in decisions_file.get("assumptions", [])}
    decisions = {d["key"] for d in decisions_file.get("decisions", [])}
    for item in decisions_file.get("assumptions", []):
        if item["source"] not in docs.raw:
            checker.error(f"assumption {item['key']}", f"document {item['source']!r} is not in the corpus")
        for ref in item.get("supported_by", []):
            docs.check_quote(f"assumption {item['key']}", ref["doc"], ref["quote"])
    for item in decisions_file.get("decisions", []):
        where = f"decision {item['key']}"
        for ref in item.get("rests_on", []):
            docs.check_quote(where, ref["doc"], ref["quote"])
        for doc in [item["source"], *item.get("cites", [])]:
            if doc not in docs.raw:
                checker.error(where, f"document {doc!r} is not in the corpus")
        for key in item.get("assumptions", []):
            if key not in assumptions:
                checker.error(where, f"assumption {key!r} does not exist")
        for key in [*item.get("needs", []), *([item["supersedes"]] if item.get("supersedes") else [])]:
            if key not in decisions:
                checker.error(where, f"decision {key!r} does not exist")
    scenarios = set()
    for item in scenarios_file.get("scenarios", []):
        scenarios.add(item["key"])
        where = f"scenario {item['key']}"
        if item["assumption"] not in assumptions:
            checker.error(where, f"assumption {item['assumption']!r} does not exist")
        for ref in item.get("supports", []):
            docs.check_quote(where, ref["doc"], ref["quote"])
        for key in item.get("justifies", []):
            if key not in decisions:
                checker.error(where, f"decision {key!r} does not exist")
    return decisions, assumptions, scenarios


def gold_sentence(gold: dict[str, str], docs: Documents | None, spans: dict[str, str]) -> str | None:
    if "span" in gold:
        return spans.get(gold["span"])
    if "doc" in gold and docs is not None:
        return docs.sentence(gold["doc"], gold["quote"])
    return None


def check_fields(checker: Checker, where: str, q: dict[str, Any], scenarios: set[str]) -> None:
    """Each field's value is allowed, and the fields agree with each other and with the kind."""
    for field in QUESTION_FIELDS:
        if field not in q:
            checker.error(where, f"missing field {field!r}")
    kind = q.get("kind", "")
    problems = {
        f"kind {kind!r} is not allowed": kind not in KINDS,
        f"split {q.get('split')!r} is not dev or heldout": q.get("split") not in ("dev", "heldout"),
        f"expect_dead_end {q.get('expect_dead_end')!r} is not allowed": q.get("expect_dead_end") not in DEAD_ENDS,
        f"edge {q.get('edge')!r} is not an edge type": q.get("edge") is not None and q["edge"] not in EDGES,
        f"as_of {q.get('as_of')!r} is not YYYY-MM-DD": q.get("as_of") is not None
        and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", q["as_of"]),
        f"after_scenario {q.get('after_scenario')!r} does not exist": q.get("after_scenario") is not None
        and q["after_scenario"] not in scenarios,
        "an answerable question needs gold and no expected dead end": bool(q.get("answerable"))
        and (not q.get("gold") or q.get("expect_dead_end") is not None),
        "an unanswerable question needs an expected dead end and no gold": q.get("answerable") is False
        and (bool(q.get("gold")) or q.get("expect_dead_end") is None),
        f"kind {kind} but edge {q.get('edge')!r}": kind.startswith("multihop:")
        and q.get("edge") != kind.split(":", 1)[1],
        f"kind {kind} but expect_dead_end {q.get('expect_dead_end')!r}": kind.startswith("dead-end:")
        and q.get("expect_dead_end") != kind.split(":", 1)[1],
        "after-disproof needs after_scenario": kind == "after-disproof" and q.get("after_scenario") is None,
        "temporal needs as_of": kind == "temporal" and q.get("as_of") is None,
    }
    for message, broken in problems.items():
        if broken:
            checker.error(where, message)


def check_gold(
    checker: Checker, where: str, gold: dict[str, str], keys: Keys, docs: Documents | None, spans: dict[str, str]
) -> None:
    decisions, assumptions, scenarios = keys
    if "doc" in gold:
        if docs is None:
            checker.error(where, "doc gold in a corpus without documents")
        else:
            docs.check_quote(where, gold["doc"], gold["quote"])
        return
    for field, known in (
        ("span", set(spans)),
        ("decision", decisions),
        ("assumption", assumptions),
        ("evidence", scenarios),
    ):
        if field in gold:
            if gold[field] not in known:
                checker.error(where, f"{field} {gold[field]!r} does not exist")
            return
    checker.error(where, f"gold {gold!r} names no doc, span, decision, assumption or evidence")


def check_questions(
    checker: Checker, path: Path, corpus: str, keys: Keys, docs: Documents | None, spans: dict[str, str]
) -> Counter[tuple[str, str]]:
    data = checker.load_json(path) or {}
    where_file = str(path.relative_to(REPO))
    if data.get("corpus") != corpus:
        checker.error(where_file, f"corpus is {data.get('corpus')!r}, expected {corpus!r}")
    counts: Counter[tuple[str, str]] = Counter()
    seen: set[str] = set()
    for q in data.get("questions", []):
        where = f"{where_file} {q.get('id')}"
        if q.get("id") in seen:
            checker.error(where, "duplicate id")
        seen.add(q.get("id"))
        check_fields(checker, where, q, keys[2])
        for gold in q.get("gold", []):
            check_gold(checker, where, gold, keys, docs, spans)
        if q.get("kind") == "paraphrase":
            asked = content_stems(q.get("question", ""))
            for gold in q.get("gold", []):
                sentence = gold_sentence(gold, docs, spans)
                shared = asked & content_stems(sentence or "")
                if shared:
                    checker.warnings.append(f"{where}: shares {sorted(shared)} with {sentence!r}")
        counts[(q.get("kind", "?"), q.get("split", "?"))] += 1
    return counts


def print_counts(name: str, counts: Counter[tuple[str, str]]) -> None:
    kinds = sorted({kind for kind, _ in counts})
    dev = sum(n for (_, split), n in counts.items() if split == "dev")
    held = sum(n for (_, split), n in counts.items() if split == "heldout")
    print(f"{name}: {dev + held} questions ({dev} dev, {held} heldout)")
    for kind in kinds:
        print(f"  {kind:32} dev {counts[(kind, 'dev')]:2}  heldout {counts[(kind, 'heldout')]:2}")


def main() -> int:
    checker = Checker()
    water = HERE / "water"
    for path in sorted(HERE.rglob("*.json")):
        checker.load_json(path)
    docs = Documents(water / "docs", checker)
    docs.check_links()
    docs.check_front_matter()
    water_keys = check_sidecar(checker, docs, water)
    water_counts = check_questions(checker, water / "questions.json", "water", water_keys, docs, {})

    corpus = checker.load_json(REPO / "contextmesh/demo/corpus.json") or {}
    sidecar = checker.load_json(REPO / "contextmesh/demo/sidecar.json") or {}
    spans = {s["key"]: s["text"] for src in corpus.get("sources", []) for s in src["spans"]}
    demo_keys = (
        {d["key"] for d in sidecar.get("decisions", [])},
        {a["key"] for a in sidecar.get("assumptions", [])},
        {"break"},
    )
    demo_counts = check_questions(checker, HERE / "demo/questions.json", "demo", demo_keys, None, spans)

    print(f"water: {len(docs.raw)} documents, {docs.words()} words without front matter or link targets")
    print_counts("water", water_counts)
    print_counts("demo", demo_counts)
    for warning in checker.warnings:
        print(f"warning: {warning}")
    for error in checker.errors:
        print(f"error: {error}")
    return 1 if checker.errors else 0


if __name__ == "__main__":
    sys.exit(main())
