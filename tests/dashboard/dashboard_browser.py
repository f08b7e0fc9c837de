"""Headless Chromium through Selenium and Debian's chromedriver, for the dashboard's browser tests.

Nothing is downloaded: the browser is Debian's ``chromium``, the driver Debian's
``chromium-driver``, both installed by ``scripts/install-browser``. A missing piece FAILS the test
that asked for it (``pytest.fail``), never skips it: a dashboard nobody looked at is not tested.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# Without the background-networking flags Chromium keeps trying to reach the network.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
INSTALL = "run `bash scripts/install-browser` (Debian chromium + chromium-driver, selenium in the venv)"


def require_browser() -> None:
    """Fail (not skip) when the browser, its driver or selenium is missing."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("the selenium package")
    if missing:
        pytest.fail(f"the dashboard's browser tests need {', '.join(missing)}: {INSTALL}", pytrace=False)


@contextmanager
def chromium(profile: Path, *, width: int = 1440, height: int = 1000, dark: bool = False) -> Iterator[Any]:
    """A headless Chromium with a fresh profile directory, quit on exit."""
    require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    if dark:
        options.add_argument("--blink-settings=preferredColorScheme=0")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        driver.set_page_load_timeout(60)
        yield driver
    finally:
        driver.quit()


def open_rendered(driver: Any, page: Path, *, timeout: float = 30.0) -> None:
    """Open ``page`` from ``file://`` and wait until the dashboard says it has rendered."""
    driver.get(page.resolve().as_uri())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = driver.execute_script("return document.body && document.body.dataset.rendered")
        if state:
            return
        time.sleep(0.05)
    raise AssertionError(f"{page} did not finish rendering within {timeout} s")


def severe_console_entries(driver: Any) -> list[dict[str, Any]]:
    """Browser-log entries at SEVERE level (console errors, uncaught exceptions, failed loads)."""
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


def full_page_screenshot(driver: Any, target: Path, *, width: int = 1440) -> None:
    """A PNG of the whole page at ``width`` CSS pixels."""
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )
    time.sleep(0.3)
    target.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(target))
