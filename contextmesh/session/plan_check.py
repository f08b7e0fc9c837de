"""The one refusal for "this session holds no execution plan", wherever a command needs a plan.

A session saved without a plan (``session save`` of a graph alone) can be asked questions but not
rechecked, resumed or repaired. Every place that needs the plan asks :func:`plan_of` (a loaded
session) or raises :class:`NoPlanError` itself (a directory read without a full load), so the
refusal is one sentence everywhere: ``<where> holds no execution plan[; <what to do>]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextmesh.core.errors import ExecutionError

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan
    from contextmesh.session.session import Session

__all__ = ["NoPlanError", "plan_of"]


class NoPlanError(ExecutionError):
    """A session holds no execution plan, and what was asked needs one."""

    def __init__(self, where: object, then: str = "") -> None:
        self.where = str(where)
        super().__init__(f"{where} holds no execution plan" + (f"; {then}" if then else ""))


def plan_of(session: Session, then: str = "", *, where: object | None = None) -> Plan:
    """The session's plan, or :class:`NoPlanError` naming ``where`` (default: its directory)."""
    if session.runner is None:
        raise NoPlanError(where if where is not None else (session.directory or "this session"), then)
    return session.runner
