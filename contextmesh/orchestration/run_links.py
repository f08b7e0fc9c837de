"""Addresses in the Prefect UI of the configured server: a flow run's page, an artifact's page.

Run pages, receipts and round tables link to each other with these (ADR 0016). The UI is the API's
address without its ``/api`` suffix (``PREFECT_UI_URL`` when set, which Prefect derives the same way).
"""

from __future__ import annotations

from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL

__all__ = ["artifact_url", "configured_api", "flow_run_url", "ui_base"]


def configured_api() -> str:
    """The Prefect API this process talks to (empty when none is configured)."""
    return str(PREFECT_API_URL.value() or "")


def ui_base(api_url: str | None = None) -> str:
    """The UI's root for ``api_url`` (default: the configured API, or ``PREFECT_UI_URL``)."""
    if api_url:
        return api_url.removesuffix("/").removesuffix("/api")
    named = PREFECT_UI_URL.value()
    return str(named).removesuffix("/") if named else configured_api().removesuffix("/").removesuffix("/api")


def flow_run_url(flow_run_id: str, api_url: str | None = None) -> str:
    """Where a person watches a flow run in the UI."""
    return f"{ui_base(api_url)}/runs/flow-run/{flow_run_id}"


def artifact_url(key: str, api_url: str | None = None) -> str:
    """The UI page of the newest artifact under ``key`` (a receipt, a round table)."""
    return f"{ui_base(api_url)}/artifacts/key/{key}"
