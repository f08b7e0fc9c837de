"""The bundled demo: a corpus written for this project, its decisions and assumptions, and a plan.

The corpus tells an engineering story (an Index Builder that runs out of memory, a Partitioned
Rebuild, a sharding rule keyed on corpus position that should have keyed on tenant). The sidecar
lists the decisions and assumptions the story made; ``break.json`` is the demo's own scenario, the
postmortem observation that disproves the sizing assumption. :mod:`contextmesh.demo.knowledge`
builds the graph, records the sidecar through the belief APIs, runs the walk rounds and breaks the
sizing assumption.

The demo is an ordinary user of the public API: its modules import names from ``contextmesh`` and
from each other, never a module of the engine (``tests/demo/test_demo_uses_public_api.py``).
"""

from pathlib import Path

__all__ = ["BREAK_PATH", "CORPUS_PATH", "QUESTIONS_PATH", "SIDECAR_PATH"]

_HERE = Path(__file__).resolve().parent
CORPUS_PATH = _HERE / "corpus.json"
SIDECAR_PATH = _HERE / "sidecar.json"
QUESTIONS_PATH = _HERE / "questions.json"
BREAK_PATH = _HERE / "break.json"
