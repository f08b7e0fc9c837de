"""The compact ``i8:<base64>`` embedding encoding."""

from __future__ import annotations

import base64
import math

import pytest

from contextmesh.core.vectors import MAX_DIMENSIONS, PREFIX, check, decode, dot, encode, quantize


def stored(raw: bytes) -> str:
    return PREFIX + base64.b64encode(raw).decode("ascii")


@pytest.mark.parametrize(
    "values",
    [[1.0, 0.0, 0.0], [0.6, -0.8], [0.1 * i - 1.0 for i in range(256)], [3.0], [0.0, 0.0]],
    ids=["axis", "pair", "256-dims", "one-dim", "zero"],
)
def test_encode_then_decode_returns_the_quantised_bytes(values: list[float]) -> None:
    text = encode(values)
    assert text.startswith(PREFIX)
    assert check(text) is None
    assert decode(text) == quantize(values)


def test_quantize_scales_to_unit_length_times_127() -> None:
    assert list(quantize([3.0, 4.0])) == [76, 102]  # 0.6*127 = 76.2, 0.8*127 = 101.6
    assert list(quantize([-2.0])) == [-127]
    assert list(quantize([0.0, 0.0])) == [0, 0]


def test_a_256_dimension_vector_fits_in_344_characters() -> None:
    assert len(encode([1.0] * 256)) == len(PREFIX) + 344


def test_check_refuses_a_missing_prefix() -> None:
    text = encode([1.0, 2.0])[len(PREFIX) :]
    assert check(text) == f"a stored vector starts with {PREFIX!r}"
    assert check("f32:" + text) is not None


@pytest.mark.parametrize(
    "body", ["AQ", "A Q==", "AQ=!", "***", "AQ==AQ=="], ids=["no-padding", "space", "bang", "junk", "padding-inside"]
)
def test_check_refuses_bad_base64(body: str) -> None:
    problem = check(PREFIX + body)
    assert problem is not None
    assert "base64" in problem


def test_check_refuses_non_canonical_base64() -> None:
    assert base64.b64decode("AR==", validate=True) == b"\x01"  # decodes, with stray low bits
    problem = check(PREFIX + "AR==")
    assert problem is not None
    assert "canonical" in problem
    assert check(PREFIX + "AQ==") is None


def test_check_refuses_a_minus_128_component() -> None:
    problem = check(stored(bytes([1, 0x80, 2])))
    assert problem is not None
    assert "-128" in problem
    assert check(stored(bytes([1, 0x81, 2]))) is None  # -127 is fine


def test_check_refuses_an_empty_vector() -> None:
    problem = check(PREFIX)
    assert problem is not None
    assert "1 to 4096 dimensions" in problem


def test_check_refuses_too_many_dimensions() -> None:
    assert check(stored(bytes(MAX_DIMENSIONS))) is None
    problem = check(stored(bytes(MAX_DIMENSIONS + 1)))
    assert problem is not None
    assert str(MAX_DIMENSIONS + 1) in problem


def test_dot_of_identical_unit_vectors_is_about_127_squared() -> None:
    for values in ([1.0, 0.0], [0.6, 0.8], [math.sin(i) for i in range(64)]):
        vector = decode(encode(values))
        assert dot(vector, vector) == pytest.approx(127**2, rel=0.02)
    axis = decode(encode([0.0, 5.0, 0.0]))
    assert dot(axis, axis) == 127**2


def test_dot_is_exact_integer_arithmetic() -> None:
    left, right = quantize([1.0, 0.0]), quantize([0.0, 1.0])
    assert dot(left, right) == 0
    assert dot(left, quantize([-1.0, 0.0])) == -(127**2)
    assert isinstance(dot(left, left), int)


def test_dot_of_vectors_of_different_lengths_is_zero() -> None:
    assert dot(quantize([1.0]), quantize([1.0, 0.0])) == 0
