"""The sentence-model embedder: a tiny BERT built here, saved as a sentence-transformers directory,
loaded through the same code that loads a real model (nothing downloaded, no PyTorch)."""

from __future__ import annotations

import json
import math
import os
import random
import struct
import subprocess
import sys
from array import array
from pathlib import Path

import pytest

from contextmesh.core import vectors
from contextmesh.core.errors import InputError
from contextmesh.knowledge.embed import HashedEmbedder, cosine
from contextmesh.knowledge.safetensors_file import read_tensors
from contextmesh.knowledge.sentence_model import SentenceModelEmbedder, embedder_for
from contextmesh.knowledge.tensor_ops import PythonOps, best_ops
from contextmesh.knowledge.wordpiece import WordPiece

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    ".",
    "?",
    ",",
    "the",
    "index",
    "re",
    "##build",
    "##s",
    "partition",
    "plan",
    "capacity",
    "memory",
    "ran",
    "out",
    "of",
    "what",
    "replaced",
    "old",
    "in",
    "cafe",
]
HIDDEN, HEADS, INTER, POSITIONS = 8, 2, 16, 16


def _tensors(layers: int, seed: int) -> dict[str, tuple[list[int], list[float]]]:
    rng = random.Random(seed)

    def normal(*shape: int) -> tuple[list[int], list[float]]:
        return list(shape), [rng.gauss(0.0, 0.5) for _ in range(math.prod(shape))]

    out = {
        "embeddings.word_embeddings.weight": normal(len(VOCAB), HIDDEN),
        "embeddings.position_embeddings.weight": normal(POSITIONS, HIDDEN),
        "embeddings.token_type_embeddings.weight": normal(2, HIDDEN),
        "embeddings.LayerNorm.weight": ([HIDDEN], [1.0 + rng.gauss(0, 0.1) for _ in range(HIDDEN)]),
        "embeddings.LayerNorm.bias": normal(HIDDEN),
    }
    for i in range(layers):
        at = f"encoder.layer.{i}."
        for name, rows, cols in (
            ("attention.self.query", HIDDEN, HIDDEN),
            ("attention.self.key", HIDDEN, HIDDEN),
            ("attention.self.value", HIDDEN, HIDDEN),
            ("attention.output.dense", HIDDEN, HIDDEN),
            ("intermediate.dense", INTER, HIDDEN),
            ("output.dense", HIDDEN, INTER),
        ):
            out[at + name + ".weight"] = normal(rows, cols)
            out[at + name + ".bias"] = normal(rows)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[at + name + ".weight"] = ([HIDDEN], [1.0] * HIDDEN)
            out[at + name + ".bias"] = normal(HIDDEN)
    return out


def write_safetensors(path: Path, tensors: dict[str, tuple[list[int], list[float]]]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    data = bytearray()
    # an int64 tensor, as real models carry (position_ids): listed, checked and skipped
    header["embeddings.position_ids"] = {"dtype": "I64", "shape": [1, 4], "data_offsets": [0, 32]}
    data += struct.pack("<4q", 0, 1, 2, 3)
    for name, (shape, values) in tensors.items():
        raw = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + bytes(data))


def tiny_model(directory: Path, *, layers: int = 2, seed: int = 7, pooling: str = "mean") -> Path:
    """A sentence-transformers directory holding a tiny random BERT (the files a real one has)."""
    (directory / "1_Pooling").mkdir(parents=True)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    config = {
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": HIDDEN,
        "num_attention_heads": HEADS,
        "num_hidden_layers": layers,
        "intermediate_size": INTER,
        "max_position_embeddings": POSITIONS,
        "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute",
        "vocab_size": len(VOCAB),
    }
    (directory / "modules.json").write_text(json.dumps(modules))
    (directory / "config.json").write_text(json.dumps(config))
    (directory / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 12}))
    (directory / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    mode = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token"}[pooling]
    (directory / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": HIDDEN, mode: True}))
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    write_safetensors(directory / "model.safetensors", _tensors(layers, seed))
    return directory


def _unit(values: list[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


# -- the tokenizer -------------------------------------------------------------------------------------


def test_wordpiece_splits_words_greedily_into_the_longest_vocabulary_pieces() -> None:
    pieces = WordPiece(VOCAB, max_length=12)
    assert pieces.words("What  REPLACED the Café's index?") == [
        "what",
        "replaced",
        "the",
        "cafe",
        "'",
        "s",
        "index",
        "?",
    ]
    assert pieces.pieces("rebuilds") == ["re", "##build", "##s"]
    assert pieces.pieces("rebuilt") == ["[UNK]"]  # no split of the whole word: the word is unknown
    assert pieces.pieces("partition" * 12) == ["[UNK]"]  # longer than 100 characters
    ids = pieces.encode("the index " * 20)
    assert len(ids) == 12 and ids[0] == VOCAB.index("[CLS]") and ids[-1] == VOCAB.index("[SEP]")


def test_a_vocabulary_without_the_special_pieces_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "vocab.txt").write_text("the\nindex\n")
    with pytest.raises(InputError) as caught:
        WordPiece.from_file(tmp_path / "vocab.txt")
    assert caught.value.path == str(tmp_path / "vocab.txt") and "[CLS]" in caught.value.found


# -- loading and embedding ------------------------------------------------------------------------------


def test_a_tiny_model_loads_and_embeds_into_the_stored_form(tmp_path: Path) -> None:
    embedder = embedder_for(f"model:{tiny_model(tmp_path / 'tiny')}")
    assert embedder.dimensions == HIDDEN and embedder.name == f"model-tiny-{HIDDEN}"
    stored = embedder.embed("What replaced the old index?")
    assert vectors.check(stored) is None and len(vectors.decode(stored)) == HIDDEN
    assert stored == embedder.embed("What replaced the old index?")
    near = cosine(vectors.decode(stored), vectors.decode(embedder.embed("what replaced the old index")))
    far = cosine(vectors.decode(stored), vectors.decode(embedder.embed("capacity plan memory ran out of")))
    assert near > far


def test_with_no_layers_the_vector_is_the_mean_of_the_normalised_input_embeddings(tmp_path: Path) -> None:
    """An oracle written here, apart from the encoder: word + position + type embeddings, LayerNorm, mean."""
    directory = tiny_model(tmp_path / "flat", layers=0)
    embedder = SentenceModelEmbedder(directory)
    weights = {name: (t.shape, t.values.tolist()) for name, t in read_tensors(directory / "model.safetensors").items()}
    ids = [VOCAB.index(w) for w in ("[CLS]", "the", "index", "[SEP]")]

    def row(name: str, i: int) -> list[float]:
        shape, values = weights[name]
        return values[i * shape[1] : (i + 1) * shape[1]]

    gain, bias = weights["embeddings.LayerNorm.weight"][1], weights["embeddings.LayerNorm.bias"][1]
    normed = []
    for position, token in enumerate(ids):
        x = [
            a + b + c
            for a, b, c in zip(
                row("embeddings.word_embeddings.weight", token),
                row("embeddings.position_embeddings.weight", position),
                row("embeddings.token_type_embeddings.weight", 0),
                strict=True,
            )
        ]
        mean = sum(x) / len(x)
        std = math.sqrt(sum((v - mean) ** 2 for v in x) / len(x) + 1e-12)
        normed.append([(v - mean) / std * g + b for v, g, b in zip(x, gain, bias, strict=True)])
    expected = _unit([sum(column) / len(normed) for column in zip(*normed, strict=True)])
    got = _unit(embedder.vector("The index"))
    assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) < 1e-5


def test_every_weight_counts_and_the_backends_agree(tmp_path: Path) -> None:
    first = tiny_model(tmp_path / "a", seed=7)
    other = tiny_model(tmp_path / "b", seed=8)
    text = "the capacity plan ran out of memory."
    plain = SentenceModelEmbedder(first, ops=PythonOps()).vector(text)
    best = SentenceModelEmbedder(first, ops=best_ops()).vector(text)
    assert sum(a * b for a, b in zip(_unit(plain), _unit(best), strict=True)) > 0.99999
    assert SentenceModelEmbedder(other).embed(text) != SentenceModelEmbedder(first).embed(text)
    cls = SentenceModelEmbedder(tiny_model(tmp_path / "c", seed=7, pooling="cls")).vector(text)
    assert _unit(cls) != _unit(plain)


def test_a_model_in_an_installed_package_loads_from_its_model_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site" / "tiny_model_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('the package is located, never imported')\n")
    tiny_model(package / "model")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    embedder = embedder_for("package:tiny_model_pkg")
    assert embedder.name == f"tiny_model_pkg-{HIDDEN}"
    assert embedder.embed("the index") == SentenceModelEmbedder(package / "model").embed("the index")
    with pytest.raises(InputError, match="no_such_model_pkg"):
        embedder_for("package:no_such_model_pkg")


def test_the_default_and_hashed_choices_stay_download_free() -> None:
    assert isinstance(embedder_for("hashed"), HashedEmbedder)
    assert embedder_for("hashed-64").dimensions == 64
    for bad in ("", "bert", "hashed-0", "hashed-x", "model:", "package:"):
        with pytest.raises(InputError) as caught:
            embedder_for(bad)
        assert caught.value.path == "embedder" and repr(bad) in caught.value.found


_BUILD = """
import sys
from pathlib import Path
from contextmesh.demo.knowledge import load_demo
from contextmesh.formats.graph_file import dump_graph
from contextmesh.knowledge.pipeline import build
from contextmesh.knowledge.sentence_model import embedder_for
corpus, _ = load_demo()
sys.stdout.buffer.write(dump_graph(build(corpus, embedder=embedder_for(sys.argv[1])).graph))
"""


def test_a_graph_built_with_a_model_is_byte_identical_across_processes_and_hash_seeds(tmp_path: Path) -> None:
    choice = f"model:{tiny_model(tmp_path / 'tiny')}"
    outputs = []
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _BUILD, choice], env=env, capture_output=True, check=True, timeout=120
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b'"i8:') > 50


# -- refusing bad files ---------------------------------------------------------------------------------


def _damaged(tmp_path: Path, name: str, content: bytes | str) -> Path:
    directory = tiny_model(tmp_path / "bad")
    target = directory / name
    target.write_bytes(content if isinstance(content, bytes) else content.encode())
    return directory


@pytest.mark.parametrize(
    ("name", "content", "where", "rule"),
    [
        ("model.safetensors", b"\x01\x02", "model.safetensors", "8-byte header"),
        ("model.safetensors", struct.pack("<Q", 2**40) + b"{}", "model.safetensors", "fits in the file"),
        ("model.safetensors", struct.pack("<Q", 3) + b"{{{", "model.safetensors", "JSON object"),
        ("model.safetensors", struct.pack("<Q", 2) + b"{}", "embeddings.word_embeddings.weight", "every weight"),
        ("config.json", '{"model_type": "gpt2"}', "config.json:model_type", "bert"),
        ("config.json", "[1]", "config.json", "holds an object"),
        ("modules.json", '[{"type": "sentence_transformers.models.Dense"}]', "modules.json", "a Transformer"),
        ("1_Pooling/config.json", '{"pooling_mode_max_tokens": true}', "config.json", "one pooling mode"),
        ("vocab.txt", b"\xff\xfe", "vocab.txt", "UTF-8"),
    ],
)
def test_a_damaged_model_directory_is_refused_naming_the_file_and_the_rule(
    tmp_path: Path, name: str, content: bytes | str, where: str, rule: str
) -> None:
    directory = _damaged(tmp_path, name, content)
    with pytest.raises(InputError) as caught:
        SentenceModelEmbedder(directory)
    assert where in caught.value.path and rule in caught.value.rule


def test_a_tensor_whose_bytes_do_not_fit_its_shape_is_refused(tmp_path: Path) -> None:
    header = json.dumps({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}}).encode()
    path = tmp_path / "w.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + array("f", [0.0] * 3).tobytes())
    with pytest.raises(InputError) as caught:
        read_tensors(path)
    assert caught.value.path.endswith(":w") and "needs 16" in caught.value.rule
