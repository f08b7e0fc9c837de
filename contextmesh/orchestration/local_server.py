"""The managed local Prefect server: one per ContextMesh home, started, checked, reused and stopped.

``start(home)`` runs ``prefect server start --host 127.0.0.1 --port P`` as a subprocess in its own
session, with its own ``PREFECT_HOME`` under ``home`` (default ``$CONTEXTMESH_HOME``, else the XDG
state directory ``~/.local/state/contextmesh``) and the environment of
:func:`~contextmesh.orchestration.settings.server_environment`; the files it keeps there are listed
in :mod:`~contextmesh.orchestration.server_files`.

Invariants (``tests/orchestration/test_orch_server.py``):

1. A server is reused only when its identity holds: the pid file's process is alive and is
   ``prefect server start`` on the recorded port with this home's ``PREFECT_HOME``, and the API on
   that port answers ``/api/admin/version`` with the recorded version and reads back the identity
   token stored in *its* database (a variable written at start). Whatever else answers on a port is
   never adopted: ``start`` on a port held by anything else refuses, naming the port.
2. Starting and stopping happen under the home's file lock, so two commands never start two
   servers over one database, and the first start (which creates and migrates the database) happens
   once.
3. ``stop`` signals only a process whose command line and ``PREFECT_HOME`` prove it is this home's
   server, and its whole process group; it waits, escalates to SIGKILL, and leaves nothing running.
4. ``ensure_server`` stops a server it started for a command only after the command's runs are
   recorded and the client's log and event workers are drained, and only when no other command
   holds a lease on it; a server started with ``contextmesh server start`` (``keep``) is never
   stopped by a command.

The server's parts, one concept each: its home's files (:mod:`~contextmesh.orchestration.server_files`),
its process and identity (:mod:`~contextmesh.orchestration.server_process`), starting and stopping it
(:mod:`~contextmesh.orchestration.server_lifecycle`) and a server for one command
(:mod:`~contextmesh.orchestration.command_server`). This module is their one public face. Prefect is
imported only inside :func:`ensure_server` (for the client settings and the worker drain);
``start``/``status``/``stop`` need only ``httpx``.
"""

from __future__ import annotations

from contextmesh.core.home import contextmesh_home
from contextmesh.orchestration.command_server import (
    ServerHandle,
    configured_api_url,
    drain_workers,
    ensure_server,
    wait_recorded,
)
from contextmesh.orchestration.server_files import ServerError, ServerInfo, prefect_home
from contextmesh.orchestration.server_lifecycle import DEFAULT_PORT, ServerStatus, start, status, stop
from contextmesh.orchestration.server_process import free_port, process_alive

__all__ = [
    "DEFAULT_PORT",
    "ServerError",
    "ServerHandle",
    "ServerInfo",
    "ServerStatus",
    "configured_api_url",
    "contextmesh_home",
    "drain_workers",
    "ensure_server",
    "free_port",
    "prefect_home",
    "process_alive",
    "start",
    "status",
    "stop",
    "wait_recorded",
]
