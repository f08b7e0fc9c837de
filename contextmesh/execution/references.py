"""What a task rests on and is about: document references checked when declared, resolved when run.

See :mod:`~contextmesh.execution.grounding` for what a decision records of them. A reference is a
:class:`~contextmesh.knowledge.revisions.DocumentRef` (a plain string names a whole document); an
entity is named by its canonical name or an alias. Declaring checks only their shape: what they
name is looked up in the current revisions each time the task could run (:func:`task_grounds`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from contextmesh.core.errors import ExecutionError, InputError
from contextmesh.core.graph import ContextGraph
from contextmesh.knowledge.revisions import DocumentRef, Grounds, Revision, find_entity, resolve_refs

__all__ = ["TaskGrounds", "check_refs", "task_grounds"]


def check_refs(
    task_name: str, rests_on: Iterable[DocumentRef | str], about: Iterable[str]
) -> tuple[tuple[DocumentRef, ...], tuple[str, ...]]:
    """A task's references as records, or an :class:`ExecutionError` naming the first that is not one."""
    refs = []
    for index, given in enumerate(rests_on):
        ref = given
        if isinstance(given, str):
            try:
                ref = DocumentRef(given)
            except InputError as exc:
                raise ExecutionError(f"task '{task_name}': rests_on[{index}] {exc}") from None
        if not isinstance(ref, DocumentRef):
            raise ExecutionError(
                f"task '{task_name}': rests_on[{index}] is {ref!r}; name a document by its name or a sentence "
                "by DocumentRef(doc, quote=...)"
            )
        refs.append(ref)
    names = []
    for index, name in enumerate(about):
        if not isinstance(name, str) or not name.strip():
            raise ExecutionError(
                f"task '{task_name}': about[{index}] is {name!r}; an entity is named by non-empty text"
            )
        names.append(name)
    return tuple(dict.fromkeys(refs)), tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class TaskGrounds:
    """What a task's references name now: the revisions, the claims and the entities."""

    grounds: Grounds
    entities: tuple[str, ...]


def task_grounds(
    graph: ContextGraph,
    rests_on: tuple[DocumentRef, ...],
    about: tuple[str, ...],
    index: Mapping[str, Revision] | None = None,
) -> TaskGrounds | str:
    """The ids a task's references name in ``graph`` now, or why one of them names nothing."""
    if not rests_on and not about:
        return TaskGrounds(Grounds((), ()), ())  # the common case costs no look-up
    grounds = resolve_refs(graph, rests_on, index)
    if isinstance(grounds, str):
        return f"it rests on {grounds}"
    entities = []
    for name in about:
        entity = find_entity(graph, name)
        if entity is None:
            return f"it is about '{name}', which names no one entity of the graph"
        entities.append(entity)
    return TaskGrounds(grounds, tuple(dict.fromkeys(entities)))
