"""How many of the entities a person listed an ingested folder resolves, and which never-merge pairs it merged.

    .venv/bin/python bench/entities.py FOLDER ENTITIES_MD

``ENTITIES_MD`` is a hand-written list in the corpora's convention (``tests/data/corpora/README.md``):
numbered lines ``N. Canonical — form, form *(note)*``, and a section whose heading holds "never"
listing pairs as ``- A and B`` / ``- A ≠ B``. The folder is ingested into an empty graph
(:func:`contextmesh.belief.ingestion.ingest`, its own ``entities.json`` if it has one); a listed
entity is *resolved* when its canonical name, or failing that one of its listed forms, resolves to
a graph entity. A never-merge pair is *merged* when both sides resolve to the same entity.
Printed: every miss, every merge, the share resolved and the load average.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from entity_lists import measure  # the acceptance tests count the same way


def main() -> None:
    folder, listed = Path(sys.argv[1]), Path(sys.argv[2])
    hits, total, misses, merges = measure(folder, listed)
    for name in misses:
        print(f"unresolved: {name}")
    for line in merges:
        print(f"merged: {line}")
    print(f"resolved {hits}/{total} = {hits / total:.1%}; never-merge pairs merged: {len(merges)}")
    print("load average: " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
