"""The inlined demo page in headless Chromium from file://: every panel drawn, no console error.

Set ``CONTEXTMESH_SCREENSHOT=1`` to (re)write ``docs/img/dashboard.png`` from this run.
These tests FAIL, never skip, when chromium, chromedriver or selenium is missing.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from dashboard_browser import chromium, full_page_screenshot, open_rendered, require_browser, severe_console_entries

from contextmesh.core.canonical import file_bytes, loads
from contextmesh.dashboard.export import export
from contextmesh.dashboard.page import render_page

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "dashboard" / "index.html"
DATA = ROOT / "dashboard" / "data" / "mesh.json"
SCREENSHOT = ROOT / "docs" / "img" / "dashboard.png"
PANELS = ("header", "graph", "hops", "traffic", "tokens", "dead_ends", "build", "execution")


@pytest.fixture(scope="module")
def payload() -> dict[str, Any]:
    return loads(DATA.read_bytes())


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_browser()
    with chromium(tmp_path_factory.mktemp("profile")) as driver:
        open_rendered(driver, PAGE)
        yield driver


def test_inlined_demo_page_renders_every_panel_without_console_errors(demo_page: Any, payload: dict) -> None:
    assert severe_console_entries(demo_page) == []
    assert demo_page.execute_script("return window.__cm.errors") == []
    for panel in PANELS:
        text, children = demo_page.execute_script(
            "const b = document.querySelector(`[data-panel='${arguments[0]}'] .body`);"
            "return [b.textContent.trim(), b.children.length];",
            panel,
        )
        assert children and text, f"panel {panel} is empty"
        assert "no answered walk" not in text and "holds no" not in text
    if os.environ.get("CONTEXTMESH_SCREENSHOT"):
        full_page_screenshot(demo_page, SCREENSHOT)


def test_graph_panel_draws_one_mark_per_payload_node(demo_page: Any, payload: dict) -> None:
    header, panel = payload["header"], payload["graph"]
    count = demo_page.execute_script
    assert count("return document.querySelectorAll('svg.graph circle.node').length") == len(panel["nodes"])
    assert count("return document.querySelectorAll('svg.graph circle.node.live').length") == header["nodes_live"]
    assert count("return document.querySelectorAll('svg.graph circle.invalidated').length") == header["invalidated"]
    assert count("return document.querySelector('svg.graph g.edges').dataset.edges") == str(len(panel["edges"]))
    caption = demo_page.find_element("id", "graph-caption").text
    assert caption.startswith(f"all {len(panel['nodes'])} nodes")


def test_hover_shows_label_and_type_and_click_lists_the_nodes_edges(demo_page: Any, payload: dict) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    nodes, edges = payload["graph"]["nodes"], payload["graph"]["edges"]
    index = max(range(len(nodes)), key=lambda i: (nodes[i]["degree"], -i))
    circle = demo_page.find_element("css selector", f"svg.graph circle[data-i='{index}']")
    ActionChains(demo_page).move_to_element(circle).perform()
    tip = demo_page.find_element("css selector", "#p-graph .tip")
    assert tip.is_displayed()
    assert nodes[index]["label"] in tip.text and nodes[index]["type"] in tip.text.lower()
    circle.click()
    info = demo_page.find_element("css selector", "#p-graph .nodeinfo")
    assert nodes[index]["label"] in info.text
    listed = demo_page.execute_script("return document.querySelectorAll('#p-graph .nodeinfo li').length")
    assert listed == sum(1 for e in edges if index in (e["s"], e["t"])) > 0
    lit = demo_page.execute_script("return document.querySelector('svg.graph path.hl').dataset.count")
    assert lit == str(listed)


def test_execution_panel_shows_rounds_receipt_and_a_verified_head(demo_page: Any, payload: dict) -> None:
    text = demo_page.find_element("id", "p-execution").text
    execution = payload["execution"]
    assert execution["ledger"]["head"] in text and "chain verifies" in text
    for layer in execution["layers"]:
        for task in layer:
            assert task in text
    for state in ("executed", "cached", "disproved", "invalidated"):
        assert state in text
    assert f"{execution['receipt']['preserved_count']} preserved" in text


def test_demo_round_one_shows_the_argon2_key_it_ran_not_the_bcrypt_key_repaired_onto_later(demo_page: Any) -> None:
    def cell(round_number: int) -> str:
        text: str = demo_page.execute_script(
            "return document.querySelector(`#p-execution tr[data-task='hashing'] td[data-round='${arguments[0]}']`)"
            ".textContent",
            round_number,
        )
        return text

    assert "auth.hash.argon2.v1" in cell(1) and "bcrypt" not in cell(1)
    assert "→ auth.hash.bcrypt.v1" in cell(2)
    assert "auth.hash.bcrypt.v1" in cell(3)
    heads = demo_page.execute_script("return [...document.querySelectorAll('#p-execution th[data-round]')].length")
    links = demo_page.execute_script("return document.querySelectorAll('#p-execution th[data-round] a').length")
    assert heads == 3 and links == 0  # the demo's walk-through runs in-process: nothing to link to
    assert "in-process · no Prefect flow run" in demo_page.find_element("id", "p-execution").text


def test_page_is_readable_in_the_dark_scheme(tmp_path: Path) -> None:
    with chromium(tmp_path / "profile") as driver:
        driver.execute_cdp_cmd(
            "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
        )
        open_rendered(driver, PAGE)
        assert severe_console_entries(driver) == []
        background, ink = driver.execute_script(
            "const s = getComputedStyle(document.body); return [s.backgroundColor, s.color];"
        )
    assert _luminance(background) < 0.1
    assert _luminance(ink) > 0.8


def test_a_label_holding_a_script_close_tag_stays_data(tmp_path: Path, payload: dict) -> None:
    hostile = loads(DATA.read_bytes())
    label = "</script><script>window.__pwned = 1</script>\u2028<!--"
    hostile["graph"]["nodes"][0]["label"] = label
    page = tmp_path / "index.html"
    page.write_text(render_page(file_bytes(hostile)), encoding="utf-8")
    with chromium(tmp_path / "profile") as driver:
        open_rendered(driver, page)
        assert severe_console_entries(driver) == []
        assert driver.execute_script("return window.__pwned === undefined")
        parsed = driver.execute_script("return JSON.parse(document.getElementById('mesh-data').textContent)")
        assert parsed["graph"]["nodes"][0]["label"] == label
        assert driver.execute_script("return document.querySelectorAll('svg.graph circle.node').length") == len(
            hostile["graph"]["nodes"]
        )


def test_a_page_exported_without_inline_fetches_its_data_when_served(tmp_path: Path) -> None:
    out = tmp_path / "site"
    export(out, rounds=1, inline=False)
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with chromium(tmp_path / "profile") as driver:
            driver.get(f"http://127.0.0.1:{server.server_address[1]}/index.html")
            _wait_rendered(driver)
            assert severe_console_entries(driver) == []
            assert driver.execute_script("return document.querySelectorAll('svg.graph circle.node').length") > 0
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


def _wait_rendered(driver: Any, timeout: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.execute_script("return document.body && document.body.dataset.rendered") == "true":
            return
        time.sleep(0.05)
    raise AssertionError("the served page did not render")


def _luminance(css: str) -> float:
    red, green, blue = (int(v) / 255 for v in css[css.index("(") + 1 : css.index(")")].split(",")[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue
