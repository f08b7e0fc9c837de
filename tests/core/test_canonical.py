"""The invariants of contextmesh/core/canonical.py: one JSON form, RFC 8785 digests, strict loading."""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from contextmesh.core import canonical
from contextmesh.core.canonical import (
    MAX_SAFE_INTEGER,
    canonical_bytes,
    digest,
    ensure_canonical,
    file_bytes,
    loads,
    sha256_hex,
)
from contextmesh.core.errors import CanonicalError, InputError

PACKAGE = Path(__file__).resolve().parents[2] / "contextmesh"


class Opaque:
    """A custom object: no JSON form."""


REFUSED: list[tuple[str, Any, str]] = [
    ("nan", {"a": {"b": [0, 1, float("nan")]}}, "a.b[2]"),
    ("inf", {"a": {"b": [0, 1, float("inf")]}}, "a.b[2]"),
    ("minus-inf", {"x": -float("inf")}, "x"),
    ("set", {"a": {1, 2}}, "a"),
    ("frozenset", {"a": [frozenset()]}, "a[0]"),
    ("bytes", {"a": {"b": b"raw"}}, "a.b"),
    ("bytearray", [bytearray(b"raw")], "[0]"),
    ("int-key", {"a": {1: "one"}}, "a"),
    ("tuple-key", {"a": {("x", "y"): 1}}, "a"),
    ("none-key", {None: 1}, "$"),
    ("custom-object", {"a": [Opaque()]}, "a[0]"),
    ("int-above-2**53", {"n": 2**53}, "n"),
    ("int-below-minus-2**53", {"n": -(2**53)}, "n"),
    ("huge-int", [1, 2**64], "[1]"),
]


@pytest.mark.parametrize(("value", "path"), [(v, p) for _, v, p in REFUSED], ids=[n for n, _, _ in REFUSED])
def test_value_without_a_single_json_form_is_refused_with_its_path(value: Any, path: str) -> None:
    with pytest.raises(CanonicalError) as caught:
        ensure_canonical(value)
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")
    assert isinstance(caught.value, InputError)


@pytest.mark.parametrize(("value", "path"), [(v, p) for _, v, p in REFUSED], ids=[n for n, _, _ in REFUSED])
def test_refusal_happens_before_any_serialiser_runs(value: Any, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def serialiser_called(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("a serialiser ran on a value that has no single JSON form")

    monkeypatch.setattr(canonical.orjson, "dumps", serialiser_called)
    monkeypatch.setattr(canonical.rfc8785, "dumps", serialiser_called)
    for write in (file_bytes, canonical_bytes, digest):
        with pytest.raises(CanonicalError) as caught:
            write(value)
        assert caught.value.path == path


def test_nan_would_otherwise_be_written_as_null_silently() -> None:
    # Why invariant 1 exists: orjson turns NaN into null without complaint.
    assert orjson.dumps([float("nan")]) == b"[null]"
    with pytest.raises(CanonicalError):
        file_bytes([float("nan")])


def test_integers_at_the_safe_limit_are_accepted() -> None:
    ensure_canonical([MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER])
    assert MAX_SAFE_INTEGER == 2**53 - 1
    assert canonical_bytes([MAX_SAFE_INTEGER]) == b"[9007199254740991]"


def test_plain_json_data_including_tuples_is_accepted() -> None:
    value = {"a": (1, 2.5, "x"), "b": None, "c": True, "d": [{"e": -0.5}]}
    ensure_canonical(value)
    assert file_bytes(value) == b'{"a":[1,2.5,"x"],"b":null,"c":true,"d":[{"e":-0.5}]}\n'


def test_file_bytes_sort_keys_and_end_with_one_newline() -> None:
    data = file_bytes({"b": 1, "a": {"z": 1, "y": 2}})
    assert data == b'{"a":{"y":2,"z":1},"b":1}\n'
    assert data.endswith(b"\n")
    assert not data.endswith(b"\n\n")


def test_file_bytes_are_the_same_for_any_insertion_order() -> None:
    assert file_bytes({"b": 1, "a": 2}) == file_bytes({"a": 2, "b": 1})


RFC8785_VECTORS: list[tuple[str, Any, bytes]] = [
    ("brief-example", {"b": 1, "a": [1.0, "x"]}, b'{"a":[1,"x"],"b":1}'),
    (
        "rfc8785-section-3.2.2",
        json.loads(
            r"""{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],"""
            r""" "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/", "literals": [null, true, false]}"""
        ),
        r"""{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"""
        r""""string":"€$\u000f\nA'B\"\\\\\"/"}""".encode(),
    ),
    (
        "utf16-key-order",
        {"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew", "1": "One", "\U0001f600": "Emoji"},
        '{"\\r":"Carriage Return","1":"One","\u20ac":"Euro Sign","\U0001f600":"Emoji","\ufb33":"Hebrew"}'.encode(),
    ),
    ("numbers", [-0.0, 1e21, 1e-7, 0.1, 100.0], b"[0,1e+21,1e-7,0.1,100]"),
]


@pytest.mark.parametrize(
    ("value", "expected"), [(v, e) for _, v, e in RFC8785_VECTORS], ids=[n for n, _, _ in RFC8785_VECTORS]
)
def test_canonical_bytes_are_rfc8785(value: Any, expected: bytes) -> None:
    assert canonical_bytes(value) == expected


def test_digest_is_sha256_over_the_rfc8785_bytes_and_stable() -> None:
    value = {"b": 1, "a": [1.0, "x"]}
    assert digest(value) == hashlib.sha256(b'{"a":[1,"x"],"b":1}').hexdigest()
    assert digest(value) == digest({"a": [1, "x"], "b": 1}) == digest(json.loads('{"a":[1.0,"x"],"b":1}'))
    assert digest({"a": 1}) == "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    assert digest({"a": 1}) != digest({"a": 2})


def test_sha256_hex_is_plain_sha256() -> None:
    assert sha256_hex(b"") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


# -- loads ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (b'{"k":1,"k":2}', "$"),
        (b'{"a":{"k":1,"k":2}}', "a"),
        (b'{"a":{"b":[0,{"k":1,"k":2}]}}', "a.b[1]"),
        (b'[[{"x":{"k":null,"k":null}}]]', "[0][0].x"),
    ],
    ids=["top", "nested-object", "inside-a-list", "deep"],
)
def test_loads_refuses_duplicate_keys_at_any_depth(text: bytes, path: str) -> None:
    assert orjson.loads(text) is not None  # a plain parser keeps the last duplicate silently
    with pytest.raises(CanonicalError) as caught:
        loads(text)
    assert caught.value.path == path
    assert "'k' twice" in str(caught.value)


@pytest.mark.parametrize("text", [b'{"a":NaN}', b'{"a":Infinity}', b"[-Infinity]", "[NaN]"])
def test_loads_refuses_non_finite_literals(text: bytes | str) -> None:
    with pytest.raises(CanonicalError):
        loads(text)


@pytest.mark.parametrize("text", [b"", b"{", b"[1,]", b"{'a': 1}", b"\xff", b'{"a":1} x', b"nul"])
def test_loads_refuses_invalid_json(text: bytes) -> None:
    with pytest.raises(CanonicalError, match="not strict JSON"):
        loads(text)


def test_loads_refuses_integers_beyond_the_safe_range() -> None:
    with pytest.raises(CanonicalError) as caught:
        loads(b'{"a":9007199254740993}')
    assert caught.value.path == "a"


def test_loads_accepts_valid_json_that_is_not_in_canonical_form() -> None:
    text = ' {\n  "b" : 1 ,\n  "a" : [ 1.5 , "x", {"z": null, "y": true} ]\n}\n'
    assert loads(text) == {"b": 1, "a": [1.5, "x", {"z": None, "y": True}]}
    assert loads(text.encode()) == loads(text)


def test_loads_takes_the_fast_path_for_bytes_it_wrote(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"nodes": [{"id": "n", "weight": 1.0, "attrs": {"k": [1, 2]}}], "build": 3}

    def slow_path(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the slow parser ran on bytes that file_bytes wrote")

    data = file_bytes(value)
    monkeypatch.setattr(canonical.json, "loads", slow_path)
    assert loads(data) == value


def test_loads_round_trips_file_bytes_exactly() -> None:
    value = {"b": [1.0, 2, "three", None, False], "a": {"nested": {"x": -1.25}}}
    data = file_bytes(value)
    assert loads(data) == value
    assert file_bytes(loads(data)) == data


# -- only canonical.py turns data into bytes or digests -------------------------------------


def package_modules() -> Iterator[Path]:
    yield from sorted(PACKAGE.rglob("*.py"))


def serialisation_offences(source: str) -> list[str]:
    """Calls of orjson.dumps / json.dumps and any use of hashlib, however imported or aliased."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # local name -> "module" or "module.attr"
    offences: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
                if alias.name.split(".")[0] == "hashlib":
                    offences.append(f"line {node.lineno}: import hashlib")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            root = node.module.split(".")[0]
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if root == "hashlib":
                    offences.append(f"line {node.lineno}: from hashlib import {alias.name}")
                if root in {"json", "orjson"} and alias.name == "dumps":
                    offences.append(f"line {node.lineno}: from {node.module} import dumps")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target = aliases.get(node.value.id)
            if target in {"json", "orjson"} and node.attr == "dumps":
                offences.append(f"line {node.lineno}: {target}.dumps")
            if target == "hashlib":
                offences.append(f"line {node.lineno}: hashlib.{node.attr}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "hashlib"
        ):
            offences.append(f"line {node.lineno}: __import__('hashlib')")
    return offences


def test_only_canonical_py_serialises_or_hashes() -> None:
    modules = list(package_modules())
    assert PACKAGE / "core" / "canonical.py" in modules
    assert len(modules) > 5
    offenders = {}
    for path in modules:
        if path == PACKAGE / "core" / "canonical.py":
            continue
        found = serialisation_offences(path.read_text(encoding="utf-8"))
        if found:
            offenders[str(path.relative_to(PACKAGE.parent))] = found
    assert offenders == {}, "only contextmesh/core/canonical.py may call orjson.dumps/json.dumps or use hashlib"


def test_canonical_py_is_the_module_that_does_use_them() -> None:
    found = serialisation_offences((PACKAGE / "core" / "canonical.py").read_text(encoding="utf-8"))
    assert any("hashlib" in f for f in found)
    assert any("orjson.dumps" in f for f in found)


@pytest.mark.parametrize(
    "source",
    [
        "import hashlib\n",
        "import hashlib as h\n",
        "from hashlib import sha256\n",
        "import json\njson.dumps({})\n",
        "import json as j\ndef f():\n    return j.dumps({})\n",
        "from orjson import dumps\n",
        "from json import dumps as d\n",
        "import orjson\nwrite = orjson.dumps\n",
        "h = __import__('hashlib')\n",
    ],
)
def test_the_serialisation_scan_catches_each_way_of_writing_it(source: str) -> None:
    assert serialisation_offences(source)


def test_the_serialisation_scan_allows_loading_and_the_canonical_api() -> None:
    source = (
        "import orjson\nimport json\nfrom contextmesh.core.canonical import digest\n"
        "orjson.loads(b'1')\njson.loads('1')\n"
    )
    assert serialisation_offences(source) == []


def test_rfc8785_library_is_what_canonical_bytes_uses() -> None:
    value = {"z": [0.1, 2], "a": "é"}
    assert canonical_bytes(value) == rfc8785.dumps(value)


_JSON_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(_JSON_VALUES)
def test_canonical_bytes_equal_the_rfc8785_encoders_for_any_accepted_value(value: Any) -> None:
    # The orjson fast path must never change a digest: same bytes as the RFC 8785 encoder, always.
    assert canonical_bytes(value) == rfc8785.dumps(value)


def test_float_free_data_with_bmp_keys_is_written_without_the_rfc8785_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    value = {"\u20ac": ["\x01\u2028", 2**53 - 1, None, True], "a": {"k": "\U0001f600 in a value"}}
    expected = rfc8785.dumps(value)

    def slow(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("the RFC 8785 encoder ran on data orjson writes identically")

    monkeypatch.setattr(canonical.rfc8785, "dumps", slow)
    assert canonical_bytes(value) == expected
