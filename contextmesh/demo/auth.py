"""The demo plan: secure authentication, its workers and auditor, and the advisory feed.

The plan has five tasks — ``schema``, ``hashing`` (Argon2 at first), ``tokens``, ``routes`` (needs
hashing and tokens) and ``rate_limit`` (needs routes). Each assumes something about the world;
``hashing`` assumes its library has no open advisory.

The advisory feed lives outside the graph and outside the process: a small JSON file the
deployment names (``{"advisories": [{"package": …, "text": …}]}``), so a recheck in another
process sees what was published. The advisory auditor reads the feed, and also accepts an
advisory that arrived as submitted evidence (metadata ``{"kind": "advisory", "package": …}`` or
text naming the package with "advisory"/"CVE"), citing that evidence's id.

:func:`register_demo` is the one registration function: the CLI's in-process registry and the
repository's ``registry/`` package both call it, each under its own keys.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from contextmesh import (
    AuditContext,
    InputError,
    Plan,
    RunContext,
    TaskRegistry,
    Verdict,
    contextmesh_home,
    json_bytes,
    parse_json,
)

__all__ = [
    "ADVISORY_TEXT",
    "DEFAULT_KEYS",
    "PLAN_NAME",
    "FeedError",
    "declare_plan",
    "default_feed",
    "publish",
    "read_feed",
    "register_demo",
    "withdraw",
]

PLAN_NAME = "secure-authentication"
ADVISORY_TEXT = "CVE-2026-9999: memory-hard parameters silently downgraded"
DEFAULT_KEYS = {
    "schema": "auth.schema.v1",
    "argon2": "auth.hash.argon2.v1",
    "bcrypt": "auth.hash.bcrypt.v1",
    "tokens": "auth.tokens.v1",
    "routes": "auth.routes.v1",
    "rate_limit": "auth.ratelimit.v1",
    "advisory_audit": "auth.audit.advisory.v1",
}


class FeedError(InputError):
    """The advisory feed file is not what the demo wrote."""


# -- the feed ---------------------------------------------------------------------------------


def default_feed() -> Path:
    """The demo's advisory feed when none is named: under ``$CONTEXTMESH_HOME`` (XDG state by default)."""
    return contextmesh_home() / "demo-feed.json"


def read_feed(feed: Path) -> list[dict[str, str]]:
    """The advisories in a feed file (none when the file does not exist yet)."""
    if not feed.exists():
        return []
    data = parse_json(feed.read_bytes())
    if type(data) is not dict or set(data) != {"advisories"} or type(data["advisories"]) is not list:
        raise FeedError(str(feed), "an unexpected document", 'a feed is {"advisories": [...]}')
    out = []
    for index, item in enumerate(data["advisories"]):
        if type(item) is not dict or set(item) != {"package", "text"} or not all(type(v) is str for v in item.values()):
            raise FeedError(f"advisories[{index}]", repr(item)[:60], 'an advisory is {"package": text, "text": text}')
        out.append(item)
    return out


def _write_feed(feed: Path, advisories: list[dict[str, str]]) -> None:
    feed.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".feed-", dir=feed.parent)
    with os.fdopen(handle, "wb") as out:
        out.write(json_bytes({"advisories": advisories}))
    Path(tmp).replace(feed)


def publish(feed: Path, package: str, text: str) -> list[dict[str, str]]:
    """Publish an advisory for ``package`` (idempotent) and return the feed."""
    if not package.strip() or not text.strip():
        raise FeedError("advisory", repr((package, text)), "a package and a text are both required")
    advisories = read_feed(feed)
    entry = {"package": package, "text": text}
    if entry not in advisories:
        advisories.append(entry)
    _write_feed(feed, advisories)
    return advisories


def withdraw(feed: Path, package: str) -> list[dict[str, str]]:
    """Withdraw every advisory for ``package`` and return the feed."""
    advisories = [a for a in read_feed(feed) if a["package"] != package]
    _write_feed(feed, advisories)
    return advisories


# -- workers ----------------------------------------------------------------------------------


def _schema(ctx: RunContext) -> dict[str, Any]:
    return {"tables": ["users", "sessions"], "attempt": ctx.attempt}


def _argon2(ctx: RunContext) -> dict[str, Any]:
    return {"package": "argon2-cffi", "algorithm": "argon2id", "time_cost": 3, "memory_kib": 65536}


def _bcrypt(ctx: RunContext) -> dict[str, Any]:
    return {"package": "bcrypt", "algorithm": "bcrypt", "rounds": 12}


def _tokens(ctx: RunContext) -> dict[str, Any]:
    return {"algorithm": "EdDSA", "ttl_minutes": 15}


def _routes(ctx: RunContext) -> dict[str, Any]:
    hasher = ctx.inputs["hashing"]["algorithm"]
    return {"routes": ["/signup", "/login"], "hasher": hasher, "tokens": ctx.inputs["tokens"]["algorithm"]}


def _rate_limit(ctx: RunContext) -> dict[str, Any]:
    return {"limit_per_minute": 10, "routes": ctx.inputs["routes"]["routes"]}


def _advisory_auditor(feed: Path) -> Any:
    def audit(ctx: AuditContext) -> Verdict:
        package = ctx.output.get("package") if isinstance(ctx.output, dict) else None
        if package is None:
            return ctx.ok("no third-party package to check")
        for evidence in ctx.evidence:
            meta = evidence.metadata
            named = meta.get("kind") == "advisory" and meta.get("package") == package
            mentioned = package in evidence.text and ("advisory" in evidence.text.lower() or "CVE-" in evidence.text)
            if named or mentioned:
                return ctx.disproved(f"{package} has an open advisory — {evidence.text}", cite=evidence.id)
        for advisory in read_feed(feed):
            if advisory["package"] == package:
                return ctx.disproved(f"{package} has an open advisory — {advisory['text']}")
        return ctx.ok(f"no open advisory for {package}")

    return audit


def register_demo(registry: TaskRegistry, *, feed: Path, keys: dict[str, str] | None = None) -> dict[str, str]:
    """Register the demo's workers and auditor under ``keys`` (default :data:`DEFAULT_KEYS`)."""
    table = {**DEFAULT_KEYS, **(keys or {})}
    registry.register_worker(table["schema"], _schema)
    registry.register_worker(table["argon2"], _argon2)
    registry.register_worker(table["bcrypt"], _bcrypt)
    registry.register_worker(table["tokens"], _tokens)
    registry.register_worker(table["routes"], _routes)
    registry.register_worker(table["rate_limit"], _rate_limit)
    registry.register_auditor(table["advisory_audit"], _advisory_auditor(feed))
    return table


def declare_plan(runner: Plan, keys: dict[str, str] | None = None) -> None:
    """Declare the five tasks of the secure-authentication plan on ``runner``."""
    table = {**DEFAULT_KEYS, **(keys or {})}
    audit = table["advisory_audit"]
    runner.task(
        "schema",
        worker_key=table["schema"],
        auditor_key=audit,
        assumes="Postgres 15 is the user store",
        produces=["user schema"],
    )
    runner.task(
        "hashing",
        worker_key=table["argon2"],
        auditor_key=audit,
        assumes="argon2-cffi has no open advisory",
        produces=["password hasher", "argon2 parameters"],
    )
    runner.task(
        "tokens",
        worker_key=table["tokens"],
        auditor_key=audit,
        assumes="EdDSA signing keys are rotated monthly",
        produces=["token signer"],
    )
    runner.task(
        "routes",
        worker_key=table["routes"],
        auditor_key=audit,
        needs=["hashing", "tokens"],
        assumes="clients send credentials only over TLS",
        produces=["signup route", "login route"],
    )
    runner.task(
        "rate_limit",
        worker_key=table["rate_limit"],
        auditor_key=audit,
        needs=["routes"],
        assumes="one Redis instance can hold the login counters",
        produces=["login rate limiter"],
    )
