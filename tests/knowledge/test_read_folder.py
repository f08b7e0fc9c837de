"""read_folder: a folder of documents in, a corpus the pipeline builds from; order-free, stable, fail-closed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contextmesh.formats.graph_file import dump_graph
from contextmesh.knowledge.corpus import Corpus, load_corpus
from contextmesh.knowledge.decoding import DocumentError
from contextmesh.knowledge.folder import read_folder
from contextmesh.knowledge.pipeline import build

DATA = Path(__file__).resolve().parents[1] / "data" / "documents"
GROUND = DATA / "groundstation"
MIDDLE = (
    "The antenna GS-2 reached the pass's Acquisition of Signal (AOS) time pointed 14 degrees away from the satellite."
)


def corpus_dict(corpus: Corpus) -> dict[str, object]:
    return {
        "entities": [{"name": e.name, "aliases": list(e.aliases)} for e in corpus.entities],
        "sources": [
            {
                "key": s.key,
                "title": s.title,
                "origin": s.origin,
                "retrieved_at": s.retrieved_at,
                "spans": [
                    {
                        "key": span.key,
                        "text": span.text,
                        "body": span.body,
                        "relations": [{"type": r.type, "target": r.target} for r in span.relations],
                    }
                    for span in s.spans
                ],
            }
            for s in corpus.sources
        ],
    }


def copy_fixture(tmp_path: Path, name: str = "groundstation") -> Path:
    target = tmp_path / name
    shutil.copytree(DATA / name, target)
    return target


def refused(paths: list[Path | str], **kwargs: Path) -> str:
    with pytest.raises(DocumentError) as caught:
        read_folder(paths, **kwargs)
    assert "\n" not in str(caught.value)
    return str(caught.value)


# -- into the pipeline ----------------------------------------------------------------------------


def test_the_pipeline_builds_a_graph_with_a_claim_from_a_paragraphs_middle_sentence() -> None:
    corpus, warnings = read_folder([GROUND])
    assert warnings == []
    result = build(corpus)
    claims = {node.label: node for node in result.graph.by_type("claim")}
    assert MIDDLE in claims  # the second of four sentences of the Summary paragraph
    middle = claims[MIDDLE]
    mentioned = {
        result.graph.node(edge.dst).label for edge in result.graph.out_edges(middle.id) if edge.type == "mentions"
    }
    assert {"GS-2", "Acquisition of Signal"} <= mentioned
    assert result.report.stage("LINK").drops == []
    relation_edges = [e for e in result.graph.edges.values() if e.type in {"cites", "supersedes", "contradicts"}]
    assert sorted(e.type for e in relation_edges) == ["cites", "cites", "cites", "supersedes"]


def test_the_read_corpus_passes_the_strict_corpus_loader_unchanged(tmp_path: Path) -> None:
    for domain in ("groundstation", "clinicallab"):
        corpus, _ = read_folder([DATA / domain])
        path = tmp_path / f"{domain}.json"
        path.write_text(json.dumps(corpus_dict(corpus)), encoding="utf-8")
        assert load_corpus(path) == corpus


_DIGEST = """
import hashlib, sys
from contextmesh.formats.graph_file import dump_graph
from contextmesh.knowledge.folder import read_folder
from contextmesh.knowledge.pipeline import build
corpus, _ = read_folder(sys.argv[1:])
print(hashlib.sha256(dump_graph(build(corpus).graph)).hexdigest())
"""


def test_the_graph_from_a_folder_is_byte_identical_under_any_hash_seed_and_path_order() -> None:
    files = sorted(str(p) for p in GROUND.rglob("*.*") if p.suffix in {".md", ".txt"})
    orders = [[str(GROUND)], files, list(reversed(files))]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _DIGEST, *paths],
            env={**os.environ, "PYTHONHASHSEED": seed},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed, paths in zip(("0", "1", "2718281"), orders, strict=True)
    ]
    digests = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        digests.append(out.strip())
    corpus, _ = read_folder([GROUND])
    assert digests == [hashlib.sha256(dump_graph(build(corpus).graph)).hexdigest()] * 3


# -- order and stability --------------------------------------------------------------------------


def test_the_corpus_does_not_depend_on_the_order_or_repetition_of_paths() -> None:
    files = sorted(
        p for p in GROUND.rglob("*.*") if p.suffix in {".md", ".txt"}
    )  # the root's entities.json still applies
    whole = read_folder([GROUND])
    assert read_folder(list(reversed(files))) == whole
    assert read_folder([files[3], GROUND, files[0], GROUND / "plans", files[3]]) == whole
    assert [s.key for s in whole[0].sources] == sorted(s.key for s in whole[0].sources)


def test_keys_are_stable_across_reads_and_an_edit_changes_only_its_sentences_keys(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    before, _ = read_folder([folder])
    assert read_folder([folder])[0] == before
    path = folder / "postmortems" / "2026-02-gs2-lost-pass.md"
    path.write_text(path.read_text(encoding="utf-8").replace("14 degrees", "12 degrees"), encoding="utf-8")
    after, _ = read_folder([folder])
    old = {span.key for _, span in before.spans()}
    new = {span.key for _, span in after.spans()}
    assert len(old - new) == 1 and len(new - old) == 1
    (gone,) = old - new
    assert next(span.text for _, span in before.spans() if span.key == gone) == MIDDLE
    untouched = [s for s in before.sources if s.key != "postmortems/2026-02-gs2-lost-pass.md"]
    assert untouched == [s for s in after.sources if s.key != "postmortems/2026-02-gs2-lost-pass.md"]


def test_a_root_names_documents_from_it(tmp_path: Path) -> None:
    corpus, _ = read_folder([GROUND / "plans"], root=GROUND)
    assert [s.key for s in corpus.sources] == ["plans/capacity-2025.md", "plans/capacity-2026.md"]
    assert read_folder([GROUND / "plans"])[0].sources[0].key == "capacity-2025.md"
    assert "every path lies inside the root" in refused([GROUND], root=GROUND / "plans")


# -- what is read ---------------------------------------------------------------------------------


def test_other_files_are_reported_hidden_ones_and_sidecars_skipped(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "clinicallab")
    (folder / "scan.pdf").write_bytes(b"%PDF-1.7")
    (folder / "decisions.json").write_text("{}", encoding="utf-8")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD.md").write_text("not read", encoding="utf-8")
    (folder / ".draft.md").write_text("not read", encoding="utf-8")
    (folder / "notes.MD").write_text("Upper-case suffixes are documents too.", encoding="utf-8")
    corpus, warnings = read_folder([folder])
    assert [str(w) for w in warnings] == ["scan.pdf: not a document (only .md, .markdown, .txt files are read)"]
    assert "notes.MD" in [s.key for s in corpus.sources] and ".draft.md" not in [s.key for s in corpus.sources]
    _, warnings = read_folder([folder / "decisions.json", folder / "notes.MD"])
    assert [str(w) for w in warnings] == ["decisions.json: not a document (only .md, .markdown, .txt files are read)"]


def test_symbolic_links_are_followed_only_to_files_inside_the_folder(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "clinicallab")
    outside = tmp_path / "secret.md"
    outside.write_text("A secret that must not be read into the corpus.", encoding="utf-8")
    (folder / "leak.md").symlink_to(outside)
    (folder / "again.md").symlink_to(folder / "vendor" / "tube-system-note.md")
    (folder / "loop").symlink_to(folder, target_is_directory=True)
    corpus, warnings = read_folder([folder])
    assert [str(w) for w in warnings] == [
        "again.md: the same file as vendor/tube-system-note.md; read once",
        "leak.md: a link to outside the folder; not followed",
        "loop: a link to a folder; not followed",
    ]
    keys = [s.key for s in corpus.sources]
    assert "again.md" not in keys and "vendor/tube-system-note.md" in keys and "leak.md" not in keys
    assert all("secret" not in span.text for _, span in corpus.spans())


def test_a_file_name_that_cannot_be_a_key_is_reported_and_skipped(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "clinicallab")
    (folder / "line\nbreak.md").write_text("A document with a strange name is here.", encoding="utf-8")
    os.close(os.open(os.fsencode(folder) + b"/caf\xe9.md", os.O_CREAT | os.O_WRONLY))
    corpus, warnings = read_folder([folder])
    assert [str(w) for w in warnings] == [
        "'caf\\udce9.md': a file name that is not UTF-8; not read",
        "'line\\nbreak.md': a file name with a control or format character; not read",
    ]
    assert all("\n" not in str(w) for w in warnings)
    assert len(corpus.sources) == 4


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "clinicallab")
    os.mkfifo(folder / "pipe.md")
    assert refused([folder]) == "pipe.md: not a regular file; only regular files are read"


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: [tmp / "missing"], "missing: no such file or folder; every path given must exist"),
        (lambda tmp: [], "paths: nothing; name at least one file or folder to read"),
        (lambda tmp: [tmp], "no document; a folder to read holds at least one .md, .markdown, .txt file"),
    ],
)
def test_unreadable_input_is_a_clear_error(tmp_path: Path, make: object, expected: str) -> None:
    paths = make(tmp_path)  # type: ignore[operator]
    assert expected in refused(paths)


def test_a_broken_link_named_explicitly_is_refused(tmp_path: Path) -> None:
    (tmp_path / "gone.md").symlink_to(tmp_path / "nowhere.md")
    assert refused([tmp_path / "gone.md"]).endswith("no such file or folder; every path given must exist")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\x00\x01binary", "bad.md: byte 0: a NUL byte (a binary file)"),
        (b"caf\xe9", "bad.md: byte 3 (line 1): bytes that are not UTF-8 (e9)"),
        (b"---\ntitle: x\n", "bad.md:1: front matter that is never closed"),
        (b"---\ndate: 2026-02-30\n---\n", "bad.md:2: the date '2026-02-30'"),
        (b"x" * (4 * 1024 * 1024 + 1), "bad.md: more than 4194304 bytes"),
    ],
)
def test_one_hostile_file_stops_the_whole_read(tmp_path: Path, content: bytes, expected: str) -> None:
    folder = copy_fixture(tmp_path, "clinicallab")
    (folder / "bad.md").write_bytes(content)
    assert refused([folder]).startswith(expected)


def test_the_root_entities_file_is_used_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path)
    corpus, _ = read_folder([folder])
    assert corpus.entities[0].name == "Kiruna Ground Station"
    (folder / "entities.json").write_text('{"entities": [{"name": "X", "alias": []}]}', encoding="utf-8")
    assert (
        refused([folder])
        == "entities.json: entities[0].alias: an unknown field 'alias'; allowed fields are ['name', 'aliases']"
    )
