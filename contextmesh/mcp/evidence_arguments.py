"""The published input schema of ``mesh_submit_evidence``: each argument's type, bounds and wording.

An agent reads these descriptions to decide how to name where an observation came from, so they are
kept together, apart from the tool's logic in :mod:`contextmesh.mcp.write_tools`.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from contextmesh.mcp.models import AnyJson

__all__ = ["DocumentName", "DocumentText", "EvidenceText", "ExternalId", "Metadata", "Origin", "SourceId", "Title"]

EvidenceText = Annotated[
    str, Field(min_length=1, max_length=65536, description="what was observed, in the observer's words")
]
SourceId = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=300,
        description="the source node it came from, 'source:…' (or give origin or document)",
    ),
]
Origin = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=2000,
        description="instead of source_id: where the observation lives (a URL, a path, 'mail:…'); "
        "the source with that origin, or a new one",
    ),
]
Title = Annotated[
    str | None, Field(min_length=1, max_length=300, description="with origin: a new source's title (default: origin)")
]
DocumentText = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=1_048_576,
        description="the text of the document the observation comes from (Markdown or plain text): "
        "ingested as a source, or as a new revision of the document of that name",
    ),
]
DocumentName = Annotated[
    str | None,
    Field(min_length=1, max_length=300, description="the document's name, 'incidents/inc-7.md' (with document)"),
]
ExternalId = Annotated[
    str | None, Field(min_length=1, max_length=300, description="the observation's id where it came from")
]
Metadata = Annotated[
    dict[str, AnyJson] | None, Field(description="plain JSON facts about the observation (≤ 64 KiB, ≤ 8 deep)")
]
