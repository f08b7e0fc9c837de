"""``contextmesh.toml``, read strictly: a project's name, its code, its session, documents and settings.

The file (ADR 0009) has four tables::

    [project]                       required
    name = "weekly-report"          [a-z0-9][a-z0-9-]{0,62}: part of deployment names
    registry = "pkg.plan:registry"  module:attribute of the project's own code
    plan = "pkg.plan:declare"       module:attribute: declares the plan's tasks on a Plan
    session = ".contextmesh/session"   optional: the session directory (none: name one with --session)
    documents = ["docs"]            optional: folders of documents
    flat = "pkg.plan:flat"          optional: the flat top-k baseline a walk's tokens are compared with
    extension = "pkg.cli:extension" optional: the project's own commands and setting options (ADR 0023)
    embedder = "hashed"             optional: hashed | hashed-<n> | model:<folder> | package:<name> (ADR 0031)

    [settings]                      optional, free-form: handed to the registry factory
    [deploy]                        optional: prefix, work_pool, recheck_interval
    [run]                           optional: executor = "prefect" | "in-process"

The file is untrusted input: at most 64 KiB, a regular file (a fifo is never opened for a blocking
read), strict UTF-8 TOML (stdlib ``tomllib``). Every table and key not listed is refused, naming it,
the file and the key path (``contextmesh.toml:project.sesion``); every value is checked; every path
is relative, resolved against the project root (the folder holding the file, links followed) and
refused if it leaves it. Nothing here imports the project's code (:mod:`contextmesh.project.binding`
does, when asked).
"""

from __future__ import annotations

import math
import os
import re
import stat
import tomllib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from contextmesh.core.errors import InputError

__all__ = [
    "CONFIG_MAX_BYTES",
    "EXECUTORS",
    "PROJECT_FILE",
    "DeploySettings",
    "ProjectConfig",
    "ProjectError",
    "check_name",
    "load_config",
]

PROJECT_FILE = "contextmesh.toml"
CONFIG_MAX_BYTES = 64 * 1024  # a project file is a few hundred bytes
EXECUTORS = ("prefect", "in-process")
MAX_INTERVAL = 2_592_000  # thirty days of seconds, the CLI's bound on a recheck interval
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
NAME_RULE = "a name is 1 to 63 lower-case letters, digits and '-', starting with a letter or digit"
_POOL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_REFERENCE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")
_SETTING = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,62}")
_TEXT_LIMIT = 4096
_TABLES: dict[str, tuple[str, ...]] = {
    "project": ("name", "registry", "plan", "session", "documents", "flat", "extension", "embedder"),
    "settings": (),  # free-form
    "deploy": ("prefix", "work_pool", "recheck_interval"),
    "run": ("executor",),
}
_REQUIRED = ("name", "registry", "plan")


class ProjectError(InputError):
    """A project (its ``contextmesh.toml``, its code or its layout) was refused; ``path`` says where."""


@dataclass(frozen=True)
class DeploySettings:
    """How ``contextmesh deploy`` names and schedules the project's deployments (ADR 0009 §4)."""

    prefix: str
    work_pool: str = "contextmesh"
    recheck_interval: float = 600.0


@dataclass(frozen=True)
class ProjectConfig:
    """What a ``contextmesh.toml`` says, checked, with its paths resolved against ``root``."""

    file: Path
    root: Path
    name: str
    registry: str
    plan: str
    session: Path | None = None
    documents: tuple[Path, ...] = ()
    flat: str | None = None
    extension: str | None = None
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    deploy: DeploySettings = field(default_factory=lambda: DeploySettings("project"))
    executor: str = "prefect"
    embedder: str = "hashed"


def check_name(name: object, where: str) -> str:
    """``name`` when it is a project name; else :class:`ProjectError` at ``where``."""
    if type(name) is not str or not NAME.fullmatch(name):
        raise ProjectError(where, _shown(name), NAME_RULE)
    return name


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:80]}… ({len(text):,} characters)"


def _read(file: Path) -> bytes:
    """The file's bytes: a regular file (links followed), never a fifo opened for a blocking read, bounded."""
    where = str(file)
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ProjectError(where, "no such file", f"a project is a folder holding {PROJECT_FILE}") from None
    except OSError as exc:
        raise ProjectError(where, f"unreadable ({exc.strerror})", "a project file is a readable regular file") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ProjectError(where, "not a regular file", "a project file is a readable regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(CONFIG_MAX_BYTES + 1)
    except OSError as exc:
        raise ProjectError(where, f"unreadable ({exc.strerror})", "a project file is a readable regular file") from None
    finally:
        os.close(fd)
    if len(data) > CONFIG_MAX_BYTES:
        raise ProjectError(where, f"more than {CONFIG_MAX_BYTES:,} bytes", "a project file is at most 64 KiB")
    return data


def _parse(file: Path, data: bytes) -> dict[str, Any]:
    where = str(file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProjectError(where, f"not UTF-8 (byte {exc.start})", "a project file is UTF-8 TOML") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProjectError(where, f"not TOML ({exc})", "a project file is UTF-8 TOML") from None


class _Reader:
    """Checks one parsed document, each refusal naming ``<file>:<key path>``."""

    def __init__(self, file: Path, root: Path) -> None:
        self.file = file
        self.root = root

    def at(self, *keys: str) -> str:
        return f"{self.file}:{'.'.join(keys)}"

    def tables(self, document: dict[str, Any]) -> dict[str, dict[str, Any]]:
        for name in document:
            if name not in _TABLES:
                raise ProjectError(
                    self.at(name), f"an unknown table or key {name!r}", f"the tables are {', '.join(_TABLES)}"
                )
        if "project" not in document:
            raise ProjectError(self.at("project"), "no [project] table", "a project file has a [project] table")
        found: dict[str, dict[str, Any]] = {}
        for name, allowed in _TABLES.items():
            table = document.get(name, {})
            if type(table) is not dict:
                raise ProjectError(self.at(name), f"a {type(table).__name__}", f"[{name}] is a table")
            if allowed:
                for key in table:
                    if key not in allowed:
                        raise ProjectError(
                            self.at(name, key), f"an unknown key {key!r}", f"[{name}] holds {', '.join(allowed)}"
                        )
            found[name] = table
        for key in _REQUIRED:
            if key not in found["project"]:
                raise ProjectError(self.at("project", key), "nothing", f"[project] needs {key!r}")
        return found

    def text(self, value: object, *keys: str) -> str:
        if type(value) is not str:
            raise ProjectError(self.at(*keys), f"a {type(value).__name__}", "the value is text")
        problem = _text_problem(value)
        if problem is not None:
            raise ProjectError(self.at(*keys), f"{_shown(value)} {problem}", "the value is one line of printable text")
        return value

    def reference(self, value: object, *keys: str) -> str:
        text = self.text(value, *keys)
        if not _REFERENCE.fullmatch(text):
            raise ProjectError(
                self.at(*keys),
                _shown(text),
                "a reference is module:attribute of the project's code (dotted module, a colon, a name)",
            )
        return text

    def path(self, value: object, *keys: str) -> Path:
        text = self.text(value, *keys)
        relative = Path(text)
        if relative.is_absolute() or text.startswith("~"):
            raise ProjectError(self.at(*keys), _shown(text), "a path is relative to the project root")
        resolved = (self.root / relative).resolve()
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise ProjectError(
                self.at(*keys),
                f"{_shown(text)} resolves to {resolved}",
                f"a path stays inside the project root {self.root}",
            )
        return resolved


def _text_problem(value: str) -> str | None:
    if not value.strip():
        return "is empty"
    if len(value) > _TEXT_LIMIT:
        return f"is longer than {_TEXT_LIMIT:,} characters"
    for char in value:
        if unicodedata.category(char) in {"Cc", "Cf", "Cs", "Co", "Cn"}:
            return f"holds the control or unassigned character {char!r}"
    return None


def _setting(reader: _Reader, name: str, value: object) -> object:
    keys = ("settings", name)
    if not _SETTING.fullmatch(name):
        raise ProjectError(
            reader.at(*keys), _shown(name), "a setting's name is a letter or '_', then letters, digits, '_', '-'"
        )
    if type(value) is list:
        return tuple(_scalar(reader, item, *keys, f"[{index}]") for index, item in enumerate(value))
    return _scalar(reader, value, *keys)


def _scalar(reader: _Reader, value: object, *keys: str) -> object:
    if type(value) is str:
        return reader.text(value, *keys)
    if type(value) is bool:
        return value
    if type(value) is int:
        if abs(value) > 2**53:
            raise ProjectError(reader.at(*keys), _shown(value), "a whole number is at most 2**53 in size")
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise ProjectError(reader.at(*keys), _shown(value), "a number is finite")
        return value
    raise ProjectError(
        reader.at(*keys),
        f"a {type(value).__name__}",
        "a setting is text, a number, true or false, or a list of those (no tables, no dates)",
    )


def _interval(reader: _Reader, value: object) -> float:
    keys = ("deploy", "recheck_interval")
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise ProjectError(reader.at(*keys), _shown(value), "the recheck interval is a positive number of seconds")
    if value > MAX_INTERVAL:
        raise ProjectError(reader.at(*keys), _shown(value), f"the recheck interval is at most {MAX_INTERVAL:,} seconds")
    return float(value)


def _deploy(reader: _Reader, table: dict[str, Any], name: str) -> DeploySettings:
    prefix = check_name(table.get("prefix", name), reader.at("deploy", "prefix"))
    pool = reader.text(table.get("work_pool", "contextmesh"), "deploy", "work_pool")
    if not _POOL.fullmatch(pool):
        raise ProjectError(
            reader.at("deploy", "work_pool"), _shown(pool), "a work pool name is 1 to 63 letters, digits, '_', '.', '-'"
        )
    interval = _interval(reader, table.get("recheck_interval", 600))
    return DeploySettings(prefix, pool, interval)


def _documents(reader: _Reader, value: object) -> tuple[Path, ...]:
    if type(value) is not list:
        raise ProjectError(
            reader.at("project", "documents"), f"a {type(value).__name__}", "documents is a list of folders"
        )
    found = [reader.path(item, "project", f"documents[{index}]") for index, item in enumerate(value)]
    if len(set(found)) != len(found):
        raise ProjectError(reader.at("project", "documents"), _shown(value), "each folder is named once")
    return tuple(found)


def load_config(file: Path) -> ProjectConfig:
    """Read and check ``file`` (a ``contextmesh.toml``); paths are resolved against its folder."""
    file = Path(file).absolute()
    document = _parse(file, _read(file))
    root = file.parent.resolve()
    reader = _Reader(file, root)
    tables = reader.tables(document)
    project = tables["project"]
    name = check_name(project["name"], reader.at("project", "name"))
    session = None if "session" not in project else reader.path(project["session"], "project", "session")
    if session == root:
        raise ProjectError(
            reader.at("project", "session"), _shown(project["session"]), "the session is a folder below the root"
        )
    executor = reader.text(tables["run"].get("executor", "prefect"), "run", "executor")
    if executor not in EXECUTORS:
        raise ProjectError(
            reader.at("run", "executor"), _shown(executor), f"the executor is one of {', '.join(EXECUTORS)}"
        )
    settings = {key: _setting(reader, key, value) for key, value in tables["settings"].items()}
    return ProjectConfig(
        file=file,
        root=root,
        name=name,
        registry=reader.reference(project["registry"], "project", "registry"),
        plan=reader.reference(project["plan"], "project", "plan"),
        session=session,
        documents=_documents(reader, project.get("documents", [])),
        flat=None if "flat" not in project else reader.reference(project["flat"], "project", "flat"),
        extension=None
        if "extension" not in project
        else reader.reference(project["extension"], "project", "extension"),
        settings=MappingProxyType(settings),
        deploy=_deploy(reader, tables["deploy"], name),
        executor=executor,
        embedder=_embedder(reader, project.get("embedder", "hashed")),
    )


def _embedder(reader: _Reader, value: object) -> str:
    """The embedder choice; a ``model:`` folder is a path like any other (relative, inside the root)."""
    from contextmesh.project.embedding import check_spec  # noqa: PLC0415 - the session layer only when asked

    keys = ("project", "embedder")
    text = reader.text(value, *keys)
    if text.startswith("model:"):
        reader.path(text[len("model:") :], *keys)
    try:
        return check_spec(text, reader.at(*keys), root=reader.root)
    except InputError as exc:
        raise ProjectError(exc.path, exc.found, exc.rule) from None
