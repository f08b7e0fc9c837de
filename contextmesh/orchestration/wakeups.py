"""A run created in this process wakes the process's reactors at once, instead of at their next look.

A recheck that disproves something creates its resume from inside the serving process (it runs
there warm, ADR 0017); the reactor that will claim that resume would otherwise find it only at its
next look, ``CONTEXTMESH_REACT_SECONDS`` later (0.5 s by default) plus the queries of the look in
progress. :func:`wake` cuts the wait short: every reactor of the process listens with its own
event (:func:`listen`) and looks again as soon as it is set. Runs created elsewhere (the CLI, MCP,
another process) are still found at the next look. This module does not import Prefect.
"""

from __future__ import annotations

import threading

__all__ = ["forget", "listen", "wake"]

_LISTENERS: set[threading.Event] = set()
_LOCK = threading.Lock()


def listen() -> threading.Event:
    """A new event that :func:`wake` sets (a reactor clears it when it looks)."""
    event = threading.Event()
    with _LOCK:
        _LISTENERS.add(event)
    return event


def forget(event: threading.Event) -> None:
    """Stop ``event`` from being woken (a reactor that stopped)."""
    with _LOCK:
        _LISTENERS.discard(event)


def wake() -> None:
    """Wake every listening reactor of this process: a run it may claim was just created here."""
    with _LOCK:
        listeners = list(_LISTENERS)
    for event in listeners:
        event.set()
