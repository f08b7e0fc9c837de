"""Durable sessions: a directory of content-addressed companions committed by immutable manifests.

See ``docs/formats/session-v5.md``. Modules: :mod:`~contextmesh.session.layout` (names and the
manifest format), :mod:`~contextmesh.session.lock` (the writer lock),
:mod:`~contextmesh.session.commit` (compare-and-swap commit, crash points, sweep),
:mod:`~contextmesh.session.load` (untrusted load with cross-file checks),
:mod:`~contextmesh.session.ledger_tree` (the ledger's Merkle tree: leaves from the digest bytes, the
frontier kept beside the ledger), :mod:`~contextmesh.session.heads` (tree heads and signed
checkpoints: the reader's and the writer's rules), :mod:`~contextmesh.session.journal` (a commit's
choice of snapshot or journal segment), :mod:`~contextmesh.session.replay` (a load's replay of the
journal) and :mod:`~contextmesh.session.session` (the Session and its checkpoint policies).
"""
