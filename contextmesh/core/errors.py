"""Every error ContextMesh raises, in one tree.

::

    ContextMeshError
    ├── OntologyError          GRAPH.md is malformed, or a write breaks its tables
    ├── IdentityError          an id already names a different node or edge (GRAPH.md rule 9)
    ├── NotFoundError          an id, key or name that does not exist (may suggest near misses)
    ├── InputError             untrusted input refused; carries .path, .found and .rule
    │   ├── CanonicalError     a value with no single JSON form, or JSON that is not strict
    │   ├── SnapshotError      a file in one of our formats that cannot be restored faithfully
    │   └── ProofError         a Merkle proof, signed checkpoint, key or proof bundle that does not verify
    ├── BeliefError            assumptions, decisions and evidence refuse an operation
    ├── ExecutionError         the plan engine refuses or a task's code failed
    └── SessionError           a session directory cannot be loaded or committed

Untrusted-input errors say where the problem is (``path``, e.g. ``nodes[3].invalidated``), what was
found there and what the rule wants, so a person fixing a file or a program reading the error does
not have to guess. Later layers add subclasses under the branch they belong to.
"""

from __future__ import annotations

__all__ = [
    "BeliefError",
    "CanonicalError",
    "ContextMeshError",
    "ExecutionError",
    "IdentityError",
    "InputError",
    "NotFoundError",
    "OntologyError",
    "ProofError",
    "SessionError",
    "SnapshotError",
]


class ContextMeshError(Exception):
    """The root of every error this package raises on purpose."""


class OntologyError(ContextMeshError):
    """GRAPH.md could not be parsed, or a write does not fit its tables."""


class IdentityError(ContextMeshError):
    """An id already names a different node or edge; ids are never merged (rule 9)."""


class NotFoundError(ContextMeshError, KeyError):
    """Something was looked up by id or key and is not there.

    Subclasses ``KeyError`` so ``mapping``-style callers keep working, but the message is a
    sentence rather than a quoted key.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InputError(ContextMeshError):
    """Untrusted input was refused.

    ``path`` names the place (``nodes[3].invalidated``), ``found`` describes what was there and
    ``rule`` says what is required. The message joins the three.
    """

    def __init__(self, path: str, found: str, rule: str) -> None:
        self.path = path
        self.found = found
        self.rule = rule
        super().__init__(f"{path}: {found}; {rule}")


class CanonicalError(InputError):
    """A value has no single JSON form (NaN, a set, bytes) or JSON text is not strict."""


class SnapshotError(InputError):
    """A file in one of ContextMesh's formats cannot be restored faithfully."""


class ProofError(InputError):
    """A Merkle proof, a signed checkpoint, a key or a proof bundle was refused: malformed, or it does not verify.

    Its ``path`` names the place (``checkpoint.line[2]``, ``audit_path[3]``, ``entry.digest``), so a
    refused proof says which part of it an auditor should look at.
    """


class BeliefError(ContextMeshError):
    """An assumption, decision or evidence operation was refused; nothing was changed."""


class ExecutionError(ContextMeshError):
    """The plan engine refused an operation, or user code behind a key failed."""


class SessionError(ContextMeshError):
    """A session directory could not be loaded or a generation could not be committed."""
