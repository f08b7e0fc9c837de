"""What a round and a recheck report: plain records the plan fills in as it writes the ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contextmesh.belief.invalidation import InvalidationReport

__all__ = ["RecheckReport", "RoundReport"]


@dataclass
class RoundReport:
    """What one ``run()`` did."""

    round: int
    layers: list[list[str]] = field(default_factory=list)
    executed: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)
    invalidations: list[InvalidationReport] = field(default_factory=list)
    runs: dict[str, dict[str, str | None] | None] = field(default_factory=dict)
    # Early cutoff (ADR 0018): the stale tasks whose inputs came back unchanged, each with why; they
    # are in ``cached`` too, because their previous result stands.
    revalidated: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "round": self.round,
            "layers": self.layers,
            "executed": self.executed,
            "cached": self.cached,
            "blocked": self.blocked,
            "failed": self.failed,
            "stale": self.stale,
            "invalidations": [r.to_dict() for r in self.invalidations],
        }


@dataclass
class RecheckReport:
    """What one ``recheck()`` found."""

    round: int
    audited: list[str] = field(default_factory=list)
    audit_errors: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    invalidations: list[InvalidationReport] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    # The standing tasks whose auditors were not run: nothing they watch changed (ADR 0019).
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "round": self.round,
            "audited": self.audited,
            "audit_errors": self.audit_errors,
            "failed": self.failed,
            "stale": self.stale,
            "skipped": self.skipped,
            "invalidations": [r.to_dict() for r in self.invalidations],
        }
