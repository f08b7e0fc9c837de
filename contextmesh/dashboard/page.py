"""The dashboard page: one HTML file assembled from the package's template, script and payload.

``render_page`` puts ``dashboard.js`` into ``page.html`` and, when given payload bytes, embeds them
in ``<script type="application/json" id="mesh-data">`` so the page works from ``file://`` with no
server. Without them the data block stays empty and the page fetches ``data/mesh.json``.

Invariants (``tests/dashboard/test_dashboard_export.py``):

1. Embedded JSON cannot end its script element or start a comment: :func:`script_safe` rewrites
   ``<``, ``>`` and ``&`` on the serialised text as ``\\u003c``, ``\\u003e``, ``\\u0026``. In JSON
   those characters occur only inside strings, where the escapes mean the same characters, so
   ``JSON.parse`` returns exactly the payload. U+2028 and U+2029 are escaped too (older parsers
   treat them as line ends).
2. The page names no network location: no ``http:`` or ``https:`` URL appears in the template or
   the script, and its Content-Security-Policy allows only inline script and style, and fetching
   from its own origin.
"""

from __future__ import annotations

from importlib.resources import files

from contextmesh.core.errors import InputError

__all__ = ["DATA_CLOSE", "DATA_OPEN", "SCRIPT_SLOT", "render_page", "script_safe"]

DATA_OPEN = '<script type="application/json" id="mesh-data">'
DATA_CLOSE = "</script>"
SCRIPT_SLOT = "<!-- contextmesh:script -->"
_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def script_safe(serialized: str) -> str:
    """JSON text made safe to sit inside a ``<script>`` element (see invariant 1)."""
    return serialized.translate(_ESCAPES)


def _asset(name: str) -> str:
    return files("contextmesh.dashboard").joinpath(name).read_text(encoding="utf-8")


def render_page(data: bytes | None = None) -> str:
    """The page; with ``data`` (payload file bytes) embedded, it needs nothing else."""
    template = _asset("page.html")
    script = _asset("dashboard.js")
    if "</script" in script.lower():
        raise InputError("dashboard.js", "the text '</script'", "an inline script must not close its own element")
    if template.count(SCRIPT_SLOT) != 1 or template.count(DATA_OPEN + DATA_CLOSE) != 1:
        raise InputError("page.html", "a template without its two slots", "one script slot and one empty data block")
    embedded = "" if data is None else script_safe(data.decode("utf-8").rstrip("\n"))
    page = template.replace(DATA_OPEN + DATA_CLOSE, DATA_OPEN + embedded + DATA_CLOSE)
    return page.replace(SCRIPT_SLOT, "<script>\n" + script + "</script>")
