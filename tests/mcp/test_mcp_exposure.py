"""Who may reach the HTTP server (issue 15, item 10).

``--host 0.0.0.0`` used to bind every interface without a word, and a request carrying
``Host: 127.0.0.1:PORT`` was then answered — the only guard on unauthenticated write tools was a
header any non-browser client sets. Now a bind beyond loopback needs ``--allow-remote`` and a bearer
token (``--token-file`` or ``$CONTEXTMESH_MCP_TOKEN``), the server refuses to start otherwise in one
line, and every request must carry the token. The HTTP tests bind a real non-loopback address of
this machine (the first global IPv4 address, or a dummy interface made for the test when there is
none and the test runs as root).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import LAUNCHER, PYTHON, QUESTIONS, ROOT, ServerProcess, free_port
from test_mcp_inspector import check_answer, check_listing, inspector, npx  # noqa: F401 - npx is a fixture

from contextmesh.mcp.exposure import TOKEN_ENV, ExposureError, check_exposure, is_loopback, load_token

TOKEN = "cm-test-token-" + "7" * 40
DUMMY = ("cmtest0", "198.18.0.7")  # RFC 2544 benchmarking space: never routed anywhere real


def _global_ipv4() -> str | None:
    if shutil.which("ip") is None:
        return None
    shown = subprocess.run(["ip", "-j", "-4", "addr", "show", "scope", "global"], capture_output=True, check=False)
    for link in json.loads(shown.stdout or b"[]"):
        for address in link.get("addr_info", []):
            if address.get("local") and "UP" in link.get("flags", []):
                return str(address["local"])
    return None


@pytest.fixture(scope="module")
def outside_address() -> Iterator[str]:
    """A non-loopback IPv4 address of this machine that this machine can reach."""
    found = _global_ipv4()
    if found is not None:
        yield found
        return
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.fail("no non-loopback address here, and no root to make a dummy interface with `ip`")
    name, address = DUMMY
    for command in (
        ["ip", "link", "add", name, "type", "dummy"],
        ["ip", "addr", "add", f"{address}/32", "dev", name],
        ["ip", "link", "set", name, "up"],
    ):
        subprocess.run(command, check=True)
    try:
        yield address
    finally:
        subprocess.run(["ip", "link", "del", name], check=False)


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


def env(feed: Path, **extra: str) -> dict[str, str]:
    return {"CONTEXTMESH_DEMO_FEED": str(feed), **extra}


def request(
    address: str, port: int, headers: dict[str, str], method: str = "POST"
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(address, port, timeout=30)
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
        sent = {"Content-Type": "application/json", "Accept": "application/json", **headers}
        connection.request(method, "/mcp", body=body, headers=sent)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def start(args: list[str], *, environ: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the server expecting it to refuse to start (60 s: it must not be serving)."""
    return subprocess.run(
        [PYTHON, str(LAUNCHER), *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, **(environ or {})},
        check=False,
    )


# -- over a real non-loopback address --------------------------------------------------------------


@pytest.mark.integration
def test_a_non_loopback_bind_answers_only_requests_with_the_token(
    session_dir: Path, feed: Path, token_file: Path, outside_address: str
) -> None:
    args = ["--session", str(session_dir), "--host", outside_address, "--allow-remote", "--token-file", str(token_file)]
    with ServerProcess(args, env=env(feed)) as server:
        assert server.url == f"http://{outside_address}:{server.port}/mcp"
        port = server.port
        status, headers, body = request(outside_address, port, {})
        assert status == 401 and headers["www-authenticate"] == 'Bearer realm="contextmesh-mcp"'
        assert json.loads(body)["error"]["code"] == -32600 and "Bearer" in json.loads(body)["error"]["message"]
        status, headers, _ = request(outside_address, port, {"Authorization": f"Bearer {TOKEN}x"})
        assert status == 401 and headers["www-authenticate"] == 'Bearer realm="contextmesh-mcp", error="invalid_token"'
        assert request(outside_address, port, {"Authorization": f"Basic {TOKEN}"})[0] == 401
        # The Host header that used to be the only guard buys nothing without the token.
        assert request(outside_address, port, {"Host": f"127.0.0.1:{port}"})[0] == 401
        assert request(outside_address, port, {"Host": f"127.0.0.1:{port}"}, method="GET")[0] == 401
        status, _, body = request(outside_address, port, {"Authorization": f"Bearer {TOKEN}"})
        assert status == 200 and len(json.loads(body)["result"]["tools"]) == 13
        assert request(outside_address, port, {"Authorization": f"bearer {TOKEN}"})[0] == 200  # scheme: any case
    assert any("beyond loopback" in line for line in server.stderr)


@pytest.mark.integration
@pytest.mark.anyio
async def test_the_sdk_client_asks_over_a_non_loopback_bind_with_the_token(
    session_dir: Path, feed: Path, outside_address: str
) -> None:
    port = free_port()
    # Every interface: clients reach it by names the server cannot know, so each is allowed by name.
    args = [
        "--session",
        str(session_dir),
        "--host",
        "0.0.0.0",
        "--allow-remote",
        "--allow-host",
        f"{outside_address}:{port}",
    ]
    with ServerProcess(args, env=env(feed, **{TOKEN_ENV: TOKEN}), port=port) as server:
        url = f"http://{outside_address}:{port}/mcp"
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool("mesh_ask", {"question": QUESTIONS[0]})
            assert not result.is_error and result.structured_content is not None
            assert result.structured_content["answered"] is True
        async with httpx2.AsyncClient() as bare:  # the same client without the token is turned away
            with pytest.raises(BaseExceptionGroup) as turned_away:
                async with Client(streamable_http_client(url, http_client=bare)):
                    pass
        assert any(
            isinstance(error, MCPError) and error.message.startswith("Unauthorized: this server needs Authorization")
            for error in leaves(turned_away.value)
        ), turned_away.value
        # Loopback is served too on 0.0.0.0, and needs the token as well.
        assert request("127.0.0.1", server.port, {})[0] == 401
        assert request("127.0.0.1", server.port, {"Authorization": f"Bearer {TOKEN}"})[0] == 200


@pytest.mark.integration
def test_the_inspector_lists_and_asks_over_a_non_loopback_bind_with_the_token(
    npx: str,  # noqa: F811 - the fixture
    session_dir: Path,
    feed: Path,
    token_file: Path,
    outside_address: str,
    tmp_path: Path,
) -> None:
    args = ["--session", str(session_dir), "--host", outside_address, "--allow-remote", "--token-file", str(token_file)]
    with ServerProcess(args, env=env(feed)) as server:
        assert server.url is not None
        target = [server.url, "--transport", "http", "--header", f"Authorization: Bearer {TOKEN}"]
        check_listing(inspector(npx, tmp_path / "home", *target, "--method", "tools/list"))
        ask = ["--method", "tools/call", "--tool-name", "mesh_ask", "--tool-arg", f"question={QUESTIONS[0]}"]
        check_answer(inspector(npx, tmp_path / "home", *target, *ask))


@pytest.mark.integration
def test_a_token_on_loopback_is_required_too(session_dir: Path, feed: Path, token_file: Path) -> None:
    with ServerProcess(["--session", str(session_dir), "--token-file", str(token_file)], env=env(feed)) as server:
        assert request("127.0.0.1", server.port, {})[0] == 401
        assert request("127.0.0.1", server.port, {"Authorization": f"Bearer {TOKEN}"})[0] == 200
    assert not any("beyond loopback" in line for line in server.stderr)


# -- refusing to start ------------------------------------------------------------------------------


def refused_in_one_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1 and done.stdout == "", done.stderr
    assert "Traceback" not in done.stderr and "listening" not in done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.integration
def test_every_interface_without_the_opt_in_refuses_to_start_in_one_line(session_dir: Path, feed: Path) -> None:
    base = ["--session", str(session_dir), "--transport", "http", "--port", "0"]
    line = refused_in_one_line(start([*base, "--host", "0.0.0.0"], environ=env(feed)), "0.0.0.0", "--allow-remote")
    assert line.startswith("contextmesh-mcp: --host: 0.0.0.0 is beyond loopback")
    # A token alone is not the opt-in, and the opt-in alone is not a token.
    refused_in_one_line(start([*base, "--host", "::"], environ=env(feed, **{TOKEN_ENV: TOKEN})), "--allow-remote")
    refused_in_one_line(start([*base, "--host", "0.0.0.0", "--allow-remote"], environ=env(feed)), "no bearer token")


@pytest.mark.integration
@pytest.mark.slow  # starts a server process per refused configuration
def test_bad_tokens_hosts_and_ports_refuse_to_start_in_one_line(session_dir: Path, feed: Path, tmp_path: Path) -> None:
    base = ["--session", str(session_dir), "--transport", "http", "--port", "0", "--host", "0.0.0.0", "--allow-remote"]
    short = tmp_path / "short"
    short.write_text("secret\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for token, said in ((short, "a token of 6 characters"), (fifo, "not a regular file"), (tmp_path, "not a regular")):
        refused_in_one_line(start([*base, "--token-file", str(token)], environ=env(feed)), said)
    refused_in_one_line(start([*base, "--token-file", str(tmp_path / "none")], environ=env(feed)), "No such file")
    spaced = env(feed, **{TOKEN_ENV: "x" * 20 + " " + "y" * 20})
    refused_in_one_line(start(base, environ=spaced), f"${TOKEN_ENV}", "spaces")
    named = ["--session", str(session_dir), "--transport", "http", "--host", "example.invalid"]
    refused_in_one_line(start(named, environ=env(feed)), "'example.invalid'", "an IP address")
    with ServerProcess(["--session", str(session_dir), "--checkpoint", "never"], env=env(feed)) as server:
        taken = ["--session", str(session_dir), "--transport", "http", "--port", str(server.port)]
        refused_in_one_line(start(taken, environ=env(feed)), f"127.0.0.1 port {server.port}", "in use")
    usage = start(
        ["--session", str(session_dir), "--allow-remote"], environ=env(feed)
    )  # argparse: usage, then the error
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
    assert usage.stderr.splitlines()[-1] == "contextmesh-mcp: error: --allow-remote works with --transport http only"


# -- the rule itself --------------------------------------------------------------------------------


def test_the_exposure_rule(tmp_path: Path) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("127.8.9.10") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("192.0.2.2")
    with pytest.raises(ExposureError, match=r"--host: 'my\.host'; an IP address"):
        is_loopback("my.host")
    assert check_exposure("127.0.0.1", allow_remote=False, token=None) is False
    assert check_exposure("::1", allow_remote=False, token=TOKEN) is False
    assert check_exposure("0.0.0.0", allow_remote=True, token=TOKEN) is True
    with pytest.raises(ExposureError, match="--allow-remote"):
        check_exposure("10.1.2.3", allow_remote=False, token=TOKEN)
    with pytest.raises(ExposureError, match="no bearer token"):
        check_exposure("10.1.2.3", allow_remote=True, token=None)
    path = tmp_path / "token"
    path.write_text(TOKEN + "\r\n")
    assert load_token(path, {}) == TOKEN and load_token(None, {TOKEN_ENV: TOKEN}) == TOKEN
    assert load_token(None, {}) is None
    link = tmp_path / "link"
    link.symlink_to(path)
    with pytest.raises(ExposureError, match="--token-file"):
        load_token(link, {})  # a token is read from the file named, never through a link
    assert sys.platform.startswith("linux")  # the fifo and dummy-interface cases above assume Linux
