"""How refusals show a client's value (quoting.py), which request ids are impossible, and the one-line log.

The transports are exercised in ``test_mcp_protocol.py``; here the same rules run in-process, through
the SDK's in-memory client in both protocol eras, with the 10-million-character value of the issue.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Annotated

import pytest
from mcp import Client, MCPError
from mcp_helpers import served_session
from pydantic import Field, TypeAdapter, ValidationError

from contextmesh.mcp.http_guard import invalid_request_id
from contextmesh.mcp.log_lines import OneLineHandler
from contextmesh.mcp.quoting import (
    MESSAGE_CHARS,
    QUOTE_CHARS,
    argument_refusal,
    clip,
    long_strings,
    quote,
    scrub,
    unknown_arguments,
)
from contextmesh.mcp.server import build_server
from contextmesh.mcp.stdio_guard import refusal_for_line

LENGTH = re.compile(r"… \((\d+) characters\)")
TEN_MILLION = "q" * 10_000_000


# -- quote, clip, scrub --------------------------------------------------------------------------------


def test_quote_shows_a_short_value_whole_and_a_long_one_as_a_prefix_and_its_length() -> None:
    assert quote("claim:x") == "'claim:x'"
    long = quote(TEN_MILLION)
    assert long == f"'{'q' * QUOTE_CHARS}'… (10000000 characters)"
    assert quote("a\nb\x00") == "'a\\nb\\x00'"  # control characters escaped: the message stays one line
    assert quote(["x" * 1000] * 1000).endswith("(a list of 1000 items)") and len(quote(["x" * 1000] * 1000)) < 150
    assert quote({"k": 1}) == "{'k': 1} (a dict of 1 entry)"
    assert quote(10**4000) == "1" + "0" * (QUOTE_CHARS - 1) + "… (4001 digits)"
    assert quote(None) == "None" and quote(1.5) == "1.5"


def test_clip_bounds_a_message_and_keeps_it_on_one_line() -> None:
    assert clip("fine") == "fine"
    assert clip("two\nlines") == "two lines"
    clipped = clip("x" * (MESSAGE_CHARS * 3))
    assert len(clipped) < MESSAGE_CHARS + 40 and clipped.endswith(f"… ({MESSAGE_CHARS * 3} characters)")


def test_scrub_replaces_a_request_value_inside_someone_elses_message() -> None:
    uri = "contextmesh://node/" + TEN_MILLION
    values = long_strings("resources/read", {"uri": uri, "nested": [{TEN_MILLION: "short"}]})
    assert values == [uri, TEN_MILLION]  # longest first, keys included, short strings ignored
    said = scrub(f"Unknown resource: {uri}", values)
    assert said == f"Unknown resource: {quote(uri)}" and len(said) < 150


def test_argument_refusal_names_the_argument_the_value_and_the_rule_in_one_line() -> None:
    question = TypeAdapter(dict[str, Annotated[str, Field(max_length=2000)]])
    with pytest.raises(ValidationError) as caught:
        question.validate_python({"question": TEN_MILLION, "other": "x" * 3000, "third": 5})
    text = argument_refusal("mesh_ask", caught.value)
    assert text.startswith("mesh_ask refused its arguments: question 'qqq")
    assert "(10000000 characters): String should have at most 2000 characters" in text
    assert "third 5: Input should be a valid string" in text
    assert "\n" not in text and len(text) < 500
    many = unknown_arguments("mesh_ask", [f"bad{i}" for i in range(10)], {"question"})
    assert many == "mesh_ask takes no argument 'bad0', 'bad1', 'bad2' and 7 more; it takes ['question']"


# -- request ids ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("ident", ["seven", "", 0, -1, 7, 2**70])
def test_a_string_or_integer_id_is_fine(ident: object) -> None:
    assert invalid_request_id({"jsonrpc": "2.0", "id": ident, "method": "ping"}) is None


@pytest.mark.parametrize(
    ("ident", "said"),
    [
        ({}, "id {} is an object"),
        (float("nan"), "id NaN is not a finite number"),
        (float("-inf"), "id -Infinity is not a finite number"),
        (1.5, "id 1.5 is not an integer"),
        (1.0, "id 1.0 is not an integer"),
        (True, "id true is a boolean"),
        (None, "id null is null"),
        ([1], "id [1] is an array"),
        ({"k": "v" * 500}, "id " + ('{"k": "' + "v" * 500)[:QUOTE_CHARS] + "… (509 characters) is an object"),
    ],
)
def test_an_impossible_id_is_refused_naming_it(ident: object, said: str) -> None:
    refusal = invalid_request_id({"jsonrpc": "2.0", "id": ident, "method": "tools/list"})
    assert refusal == f"Invalid Request: {said}; a request id is a string or an integer"


def test_notifications_responses_and_non_json_lines_are_not_judged_here() -> None:
    assert invalid_request_id({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert invalid_request_id({"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "m"}}) is None
    assert invalid_request_id([{"id": {}, "method": "ping"}]) is None  # a batch: the SDK refuses it
    assert refusal_for_line("this is not json\n") is None
    assert refusal_for_line("[" * 100_000) is None  # too deep for json: the SDK's parse error, not a crash
    assert refusal_for_line('{"jsonrpc": "2.0", "id": NaN, "method": "ping"}\n') is not None


# -- the log -------------------------------------------------------------------------------------------


def test_a_log_record_is_one_clipped_line_without_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    handler = OneLineHandler("contextmesh-mcp")
    try:
        raise ValueError(f"Unknown prompt: {TEN_MILLION}")
    except ValueError:
        record = logging.LogRecord("mcp", logging.ERROR, __file__, 1, "handler for %r raised", ("prompts/get",), None)
        record.exc_info = sys.exc_info()
    handler.emit(record)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and len(err) < MESSAGE_CHARS + 80
    assert err.startswith("contextmesh-mcp: error: handler for 'prompts/get' raised: ValueError: Unknown prompt: qqq")


# -- in-process, both eras -----------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_refusal_of_a_ten_million_character_value_is_short(
    session_dir: Path, feed: Path, mode: str
) -> None:
    served = served_session(session_dir, feed)
    texts = []
    async with Client(build_server(served), mode=mode) as client:
        for name, arguments in (
            ("mesh_ask", {"question": TEN_MILLION}),
            ("mesh_lineage", {"assumption_id": TEN_MILLION}),
            ("mesh_repair", {"task": TEN_MILLION, "worker_key": "k", "assumes": "a"}),
            (TEN_MILLION, {}),
            ("mesh_health", {TEN_MILLION: 1}),
        ):
            result = await client.call_tool(name, arguments)
            assert result.is_error
            texts.append(str(result.content[0].text))  # type: ignore[union-attr]
        for uri in ("contextmesh://node/" + TEN_MILLION[:5000], "contextmesh://" + TEN_MILLION):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            texts.append(refused.value.error.message)
        with pytest.raises(MCPError) as no_prompt:
            await client.get_prompt(TEN_MILLION)
        texts.append(no_prompt.value.error.message)
        assert (await client.call_tool("mesh_health", {})).is_error is False  # still serving
    for text in texts:
        found = LENGTH.search(text)
        assert len(text) < 600 and "\n" not in text and found is not None, text[:300]
