"""Durable sessions: a directory of content-addressed companions committed by immutable manifests.

See ``docs/formats/session-v3.md``. Modules: :mod:`~contextmesh.session.layout` (names and the
manifest format), :mod:`~contextmesh.session.lock` (the writer lock),
:mod:`~contextmesh.session.commit` (compare-and-swap commit, crash points, sweep),
:mod:`~contextmesh.session.load` (untrusted load with cross-file checks) and
:mod:`~contextmesh.session.session` (the Session and its checkpoint policies).
"""
