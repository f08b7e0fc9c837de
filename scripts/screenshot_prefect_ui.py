"""Photograph a real resume flow run, with its ``Cached`` task runs, in the Prefect UI.

    .venv/bin/python scripts/screenshot_prefect_ui.py [--out docs/img/prefect-resume.png]
    bash scripts/screenshot-prefect-ui                       (the same)

Runs the demo loop of ``docs/deploying.md`` on a managed Prefect server with its UI, in a
temporary ``$CONTEXTMESH_HOME`` on a free loopback port (``bench/deployments.py``'s
:func:`demo_loop`): ``contextmesh session save``, ``deployments/serve.py --interval 5``, the
argon2-cffi advisory published, the scheduled recheck's disproof and the resume it starts,
``contextmesh repair hashing --worker-key auth.hash.bcrypt.v1 --assumes "bcrypt has no open
advisory"``, ``contextmesh resume``. Then it opens that last resume's page,
``http://127.0.0.1:PORT/runs/flow-run/<id>``, in headless Chromium (Debian's, through
chromedriver: ``scripts/install-browser``), waits until the page lists the task runs with a
``Cached`` one, and saves the PNG. serve.py and the server are stopped; nothing is left running.
Not part of CI: it takes a minute or more and the UI's layout changes between Prefect releases.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402

from deployments import Api, demo_loop  # noqa: E402

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
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


def _text(driver: Any) -> str:
    return str(driver.execute_script("return document.body ? document.body.innerText : ''"))


def _wait_text(driver: Any, needles: tuple[str, ...], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = _text(driver)
        if all(needle in text for needle in needles):
            return True
        time.sleep(0.25)
    return False


def _click_tab(driver: Any, label: str) -> bool:
    """Click the first visible tab-like element whose text is ``label``."""
    return bool(
        driver.execute_script(
            """
            const label = arguments[0];
            const nodes = [...document.querySelectorAll('[role=tab], button, a, li')];
            const hit = nodes.find(n => n.offsetParent !== null && n.innerText.trim() === label);
            if (hit) { hit.click(); return true; }
            return false;
            """,
            label,
        )
    )


def photograph(url: str, out: Path, profile: Path, *, width: int = 1600, height: int = 1000) -> None:
    """Open ``url``, wait for its task runs (a ``Cached`` one among them), save a PNG to ``out``."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(60)
        driver.get(url)
        if not _wait_text(driver, ("Cached",), 30):
            # The flow-run page's default tab may show logs: the task runs are on their own tab.
            for label in ("Task Runs", "Task runs"):
                if _click_tab(driver, label):
                    break
            if not _wait_text(driver, ("Cached",), 30):
                raise SystemExit(f"{url} never showed a Cached task run; page text:\n{_text(driver)[:1500]}")
        time.sleep(1.5)  # let the state badges and the timeline settle
        out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(out))
    finally:
        driver.quit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img" / "prefect-resume.png")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="cm-screenshot-"))
    try:
        with demo_loop(workdir, ui=True) as run:
            flow_run_id = run.repaired_resume["id"]
            api = Api(run.info.api_url)
            deadline = time.monotonic() + 60
            while len(api.task_runs(flow_run_id)) < 8 and time.monotonic() < deadline:
                time.sleep(0.5)  # recording is asynchronous: 3 executed, 3 audits, 2 cached in the demo
            url = f"{run.info.ui_url}/runs/flow-run/{flow_run_id}"
            photograph(url, args.out, workdir / "chromium-profile")
            names = [f"{t['name']} ({t['state_name']})" for t in api.task_runs(flow_run_id)]
            sys.stdout.write(f"{args.out}: {url}\n  task runs: {', '.join(names)}\n")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
