"""JSON-RPC details over the real transports (issue 15, item 9).

* A request whose ``id`` is not a string or an integer is answered ``-32600 Invalid Request`` with
  ``id: null`` — over HTTP (it was 202, nothing run) and over stdio (it was no answer at all).
* Media types are compared without case: ``APPLICATION/JSON`` is JSON (it was 415).
* A refusal quotes a client's value as a short prefix and its length: a 10-million-character
  string made a 20 MB line; every place that quotes a value is exercised here.
"""

from __future__ import annotations

import http.client
import json
import queue
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp_helpers import LAUNCHER, PYTHON, QUESTIONS, ROOT, ServerProcess

pytestmark = pytest.mark.integration

IMPOSSIBLE_IDS = ["{}", "NaN", "1.5", "true", "null", "[1]", "1e3", "-Infinity"]
LENGTH = re.compile(r"… \((\d+) characters\)")
BIG = 900_000  # under the 1 MiB body cap, so the value reaches the server over HTTP
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}


def env(feed: Path) -> dict[str, str]:
    return {"CONTEXTMESH_DEMO_FEED": str(feed)}


def post(port: int, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        sent = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        connection.request("POST", "/mcp", body=body, headers=sent)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def message(method: str, params: dict[str, Any] | None = None, ident: Any = 1) -> bytes:
    document: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        document["params"] = params
    return json.dumps(document).encode()


def with_raw_id(ident: str, method: str, params: dict[str, Any]) -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": '
        + ident.encode()
        + b', "method": "'
        + method.encode()
        + b'", "params": '
        + (json.dumps(params).encode() + b"}")
    )


def walks_served(port: int) -> int:
    status, body = post(port, message("resources/read", {"uri": "contextmesh://session"}))
    assert status == 200
    return int(json.loads(json.loads(body)["result"]["contents"][0]["text"])["served"]["walks_in_process"])


def refusal_text(reply: dict[str, Any]) -> str:
    """The human text of a refusal: a JSON-RPC error's message (and data), or a tool error's text."""
    if "error" in reply:
        return json.dumps(reply["error"], ensure_ascii=False)
    result = reply["result"]
    assert result["isError"] is True, result
    return str(result["content"][0]["text"])


def long_value_cases(big: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every place a refusal could quote a client's value, each carrying ``big``."""
    call = "tools/call"
    return {
        "tool argument": (call, {"name": "mesh_ask", "arguments": {"question": big}}),
        "tool argument, pattern": (call, {"name": "mesh_explain_as_of", "arguments": {"question": "x", "as_of": big}}),
        "tool argument, type": (call, {"name": "mesh_get_node", "arguments": {"node_id": [big]}}),
        "unknown argument": (call, {"name": "mesh_ask", "arguments": {big: 1, "question": "x"}}),
        "unknown tool": (call, {"name": big, "arguments": {}}),
        "write argument": (call, {"name": "mesh_submit_evidence", "arguments": {"text": "seen", "source_id": big}}),
        "nested argument key": (
            call,
            {"name": "mesh_submit_evidence", "arguments": {"text": "t", "source_id": "s", "metadata": {big: 1}}},
        ),
        "method": (big, {}),
        "resource": ("resources/read", {"uri": big}),
        "node resource": ("resources/read", {"uri": "contextmesh://node/" + big}),
        "assumption resource": ("resources/read", {"uri": "contextmesh://assumption/assumption:" + big}),
        "prompt": ("prompts/get", {"name": big}),
    }


def check_bounded(name: str, raw: bytes) -> None:
    assert len(raw) < 2048, f"{name}: a {len(raw)}-byte reply"
    text = refusal_text(json.loads(raw))
    assert "\n" not in text, f"{name}: {text}"
    if name == "tool argument, type":  # the value is a list holding the long string: its size is said
        assert "(a list of 1 item)" in text, text
    elif "q" * 20 in text:  # quoted at all: a short prefix, then the length
        found = LENGTH.search(text)
        assert found is not None and int(found.group(1)) >= BIG, f"{name}: {text}"


# -- HTTP ----------------------------------------------------------------------------------------------


def test_http_answers_requests_with_impossible_ids_with_invalid_request_and_runs_nothing(
    session_dir: Path, feed: Path
) -> None:
    with ServerProcess(["--session", str(session_dir), "--checkpoint", "on-exit"], env=env(feed)) as server:
        port = server.port
        before = walks_served(port)
        ask = {"name": "mesh_ask", "arguments": {"question": QUESTIONS[0]}}
        for ident in IMPOSSIBLE_IDS:
            status, body = post(port, with_raw_id(ident, "tools/call", ask))
            reply = json.loads(body)
            assert status == 400, (ident, status, body)
            assert reply["id"] is None and reply["error"]["code"] == -32600, reply
            assert f"id {ident.replace('1e3', '1000.0')} is" in reply["error"]["message"]
        assert walks_served(port) == before  # none of those asks ran
        for ident in ('"seven"', "7", "-0"):
            status, body = post(port, with_raw_id(ident, "tools/call", ask))
            assert status == 200 and json.loads(body)["id"] == json.loads(ident)
        assert walks_served(port) == before + 3


def test_http_media_types_are_case_insensitive(session_dir: Path, feed: Path) -> None:
    with ServerProcess(["--session", str(session_dir), "--checkpoint", "never"], env=env(feed)) as server:
        for content_type in ("APPLICATION/JSON", "Application/Json; Charset=UTF-8", "application/json; charset=utf-8"):
            status, body = post(server.port, message("tools/list"), {"Content-Type": content_type})
            assert status == 200 and len(json.loads(body)["result"]["tools"]) == 13, (content_type, body[:200])
        assert post(server.port, message("ping"), {"Accept": "APPLICATION/JSON"})[0] == 200
        assert post(server.port, message("ping"), {"Content-Type": "APPLICATION/XML"})[0] in {400, 415}
        # Case-folding does not let an impossible id through under an odd spelling either.
        status, body = post(server.port, with_raw_id("{}", "ping", {}), {"Content-Type": "Application/JSON"})
        assert status == 400 and json.loads(body)["error"]["code"] == -32600


def test_http_refusals_quote_a_long_value_short(session_dir: Path, feed: Path) -> None:
    big = "q" * BIG
    with ServerProcess(["--session", str(session_dir), "--checkpoint", "on-exit"], env=env(feed)) as server:
        for name, (method, params) in long_value_cases(big).items():
            status, raw = post(server.port, message(method, params))
            assert status == 200, (name, status, raw[:200])
            check_bounded(name, raw)
        # Ids the graph's lookups see (a template's id; one within the tool schema's 300) are quoted short too.
        for uri in ("contextmesh://node/claim:" + "z" * 5000, "contextmesh://assumption/assumption:" + "z" * 5000):
            reply = json.loads(post(server.port, message("resources/read", {"uri": uri}))[1])
            assert re.search(r"^no (node|assumption) '[^']{60}'… \(5\d{3} characters\)", reply["error"]["message"])
        node = {"name": "mesh_get_node", "arguments": {"node_id": "claim:" + "z" * 250}}
        text = refusal_text(json.loads(post(server.port, message("tools/call", node))[1]))
        assert "no node 'claim:" in text and "… (256 characters) in the graph" in text, text
        assert post(server.port, message("ping"))[0] == 200  # still serving
    log = "\n".join(server.stderr)
    assert "Traceback" not in log and len(log) < 20_000, log[-2000:]


# -- stdio ---------------------------------------------------------------------------------------------


def stdio_exchange(session_dir: Path, feed: Path, lines: list[bytes], replies: int) -> tuple[list[bytes], str]:
    """Write ``lines`` to a stdio server, read ``replies`` reply lines, close stdin; (replies, stderr)."""
    proc = subprocess.Popen(
        [PYTHON, str(LAUNCHER), "--session", str(session_dir), "--feed", str(feed), "--checkpoint", "never"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    opening = [message("initialize", HELLO, 0), b'{"jsonrpc": "2.0", "method": "notifications/initialized"}']
    lines_out: queue.Queue[bytes] = queue.Queue()
    stdout = proc.stdout
    reader = threading.Thread(target=lambda: [lines_out.put(line) for line in stdout], daemon=True)
    reader.start()
    proc.stdin.write(b"\n".join([*opening, *lines]) + b"\n")
    proc.stdin.flush()
    got = []
    try:
        for _ in range(replies + 1):
            got.append(lines_out.get(timeout=60))  # a reply that never comes fails here, not by hanging
    except queue.Empty:
        proc.kill()
        raise AssertionError(f"{len(got)} of {replies + 1} replies in 60 s: {[g[:120] for g in got]}") from None
    proc.stdin.close()
    code, stderr = proc.wait(60), proc.stderr.read().decode()
    reader.join(10)
    proc.stdout.close()
    proc.stderr.close()
    assert code == 0 and lines_out.empty(), stderr
    # Refusals made at the wire may overtake the SDK's answers: order by id, the id-less ones first.
    got.sort(key=lambda line: (json.loads(line)["id"] is not None, json.loads(line)["id"] or 0))
    assert [json.loads(line)["id"] for line in got].count(0) == 1  # the initialize reply
    return [line for line in got if json.loads(line)["id"] != 0], stderr


def test_stdio_answers_requests_with_impossible_ids_instead_of_dropping_them(session_dir: Path, feed: Path) -> None:
    ask = {"name": "mesh_ask", "arguments": {"question": QUESTIONS[0]}}
    lines = [with_raw_id(ident, "tools/call", ask) for ident in IMPOSSIBLE_IDS]
    lines.append(message("resources/read", {"uri": "contextmesh://session"}, 99))
    replies, stderr = stdio_exchange(session_dir, feed, lines, len(lines))
    refused = [json.loads(r) for r in replies[:-1]]
    assert [(r["id"], r["error"]["code"]) for r in refused] == [(None, -32600)] * len(IMPOSSIBLE_IDS)
    assert "id NaN is not a finite number" in refused[1]["error"]["message"]
    session = json.loads(replies[-1])
    assert session["id"] == 99
    assert json.loads(session["result"]["contents"][0]["text"])["served"]["walks_in_process"] == 0  # nothing ran
    assert "Traceback" not in stderr


def test_stdio_refusals_quote_a_ten_million_character_value_short(session_dir: Path, feed: Path) -> None:
    big = "q" * 10_000_000
    cases = long_value_cases(big)
    chosen = ["tool argument", "unknown tool", "unknown argument", "node resource", "prompt", "method"]
    lines = [message(*cases[name], ident=index) for index, name in enumerate(chosen, start=1)]
    replies, stderr = stdio_exchange(session_dir, feed, lines, len(lines))
    by_id = {json.loads(r)["id"]: r for r in replies}
    for index, name in enumerate(chosen, start=1):
        check_bounded(name, by_id[index])
    assert "Traceback" not in stderr and len(stderr) < 20_000
