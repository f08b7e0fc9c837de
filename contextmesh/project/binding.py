"""From ``module:attribute`` to the project's own objects: its registry, its plan, its flat baseline.

A reference names code in the project (ADR 0009 §2). It is imported with the project root first on
``sys.path`` for the import only, and the module it reaches must live under that root: a module of
the same name from elsewhere (an installed package, another project imported earlier in this
process) is never taken for the project's. Nothing a session, a flow parameter or a request holds
names a module; only the operator's ``contextmesh.toml`` does.

A registry built here carries its recipe, ``bind_registry(<root>, <overrides>)``: a Dask or Ray
worker that receives it re-reads the same ``contextmesh.toml`` and imports the same code, so the
table is rebuilt from the project and no callable travels (:mod:`contextmesh.execution.task_registry`,
invariants 6 and 7).

Importing a project's module runs the operator's code, exactly as ``prefect deploy`` does. Any
exception it raises — at import, in the registry factory, in the plan declaration — is one
:class:`~contextmesh.project.config.ProjectError` naming the reference and the key it came from.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from contextmesh.execution.task_registry import RegistryError, TaskRegistry
from contextmesh.project.config import PROJECT_FILE, ProjectError

if TYPE_CHECKING:
    from contextmesh.execution.plan import Plan
    from contextmesh.knowledge.flat_baseline import FlatBaseline
    from contextmesh.project.project import Project
    from contextmesh.session.session import Session

__all__ = ["bind_registry", "build_registry", "declare_plan", "flat_baseline", "import_reference"]

Overrides = tuple[tuple[str, str], ...]


@contextlib.contextmanager
def _project_first(root: Path) -> Iterator[None]:
    entry = str(root)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)  # the first occurrence: the one inserted above


def _file_of(module: ModuleType) -> Path | None:
    name = getattr(module, "__file__", None)
    return None if not isinstance(name, str) else Path(name).resolve()


def _inside(module: ModuleType, root: Path) -> bool:
    found = _file_of(module)
    return found is not None and found.is_relative_to(root)


def _of_another_project(module: ModuleType, root: Path) -> bool:
    """True for a module imported earlier from another project's folder (one holding a contextmesh.toml)."""
    found = _file_of(module)
    if found is None:
        paths = getattr(module, "__path__", None)
        found = Path(next(iter(paths))).resolve() if paths else None
    if found is None or found.is_relative_to(root):
        return False
    return any((folder / PROJECT_FILE).exists() for folder in found.parents)


def _forget_other_projects(module_name: str, root: Path) -> None:
    """Drop a package tree another project left in ``sys.modules``, so this project's is imported.

    Only another project's code is dropped: never the standard library, an installed package or
    ContextMesh itself, which a reference outside the root cannot displace.
    """
    top = module_name.split(".", maxsplit=1)[0]
    cached = sys.modules.get(top)
    if cached is None or not _of_another_project(cached, root):
        return
    for name in [n for n in sys.modules if n == top or n.startswith(f"{top}.")]:
        del sys.modules[name]


def _import(module_name: str, root: Path, where: str) -> ModuleType:
    _forget_other_projects(module_name, root)
    try:
        with _project_first(root):
            module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:
        raise ProjectError(
            where,
            f"importing {module_name!r} raised {type(exc).__name__}: {exc or 'no message'}",
            "the module is importable from the project root and runs without raising",
        ) from None
    if not _inside(module, root):
        raise ProjectError(
            where,
            f"module {module_name!r} is {_file_of(module) or 'not a file'}, outside the project root {root}",
            "a reference names the project's own code; rename the module if an installed one has its name",
        )
    return module


def import_reference(root: Path, reference: str, where: str) -> Any:
    """The object ``module:attribute`` names in the project at ``root`` (``where``: the key, for errors)."""
    module_name, _, attribute = reference.partition(":")
    module = _import(module_name, root, where)
    if not hasattr(module, attribute):
        raise ProjectError(where, f"module {module_name!r} has no attribute {attribute!r}", "the attribute exists")
    return getattr(module, attribute)


def _call(where: str, what: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except ProjectError:
        raise
    except RegistryError as exc:
        raise ProjectError(
            where,
            f"{what} raised RegistryError: {exc}",
            "every key the plan names is registered in the project's registry ([project] registry)",
        ) from None
    except (Exception, SystemExit) as exc:
        raise ProjectError(
            where, f"{what} raised {type(exc).__name__}: {exc or 'no message'}", "it runs without raising"
        ) from None


def _with_recipe(made: TaskRegistry, recipe: tuple[Callable[..., TaskRegistry], tuple[Any, ...]]) -> TaskRegistry:
    """The same keys, callables, timeouts and retries (and what each auditor watches) in a registry
    that carries ``recipe``."""
    bound = TaskRegistry(recipe=recipe)
    keys = made.describe()
    for key in keys["workers"]:
        worker = made.lookup_worker(key)
        bound.register_worker(key, worker.fn, timeout=worker.timeout, retries=worker.retries)
    for key in keys["auditors"]:
        auditor = made.lookup_auditor(key)
        bound.register_auditor(
            key,
            auditor.fn,
            timeout=auditor.timeout,
            retries=auditor.retries,
            watches=auditor.watches,
            reads=auditor.reads,
        )
    return bound


def build_registry(project: Project) -> TaskRegistry:
    """The project's registry (its ``[project] registry`` attribute), carrying its recipe."""
    where = f"{project.file}:project.registry"
    found = import_reference(project.root, project.config.registry, where)
    if not isinstance(found, TaskRegistry):
        if not callable(found):
            raise ProjectError(
                where, f"{project.config.registry} is a {type(found).__name__}", "it is a TaskRegistry or f(project)"
            )
        found = _call(where, f"{project.config.registry}(project)", found, project)
        if not isinstance(found, TaskRegistry):
            raise ProjectError(
                where,
                f"{project.config.registry}(project) returned a {type(found).__name__}",
                "the registry factory returns a TaskRegistry",
            )
    return _with_recipe(found, (bind_registry, (str(project.root), project.overrides)))


def bind_registry(root: str, overrides: Overrides = ()) -> TaskRegistry:
    """Rebuild a project's registry in this process from its root (the recipe of :func:`build_registry`)."""
    from contextmesh.project.project import load_project  # noqa: PLC0415 - project.py imports this module

    return load_project(Path(root)).with_settings(**dict(overrides)).registry()


def declare_plan(project: Project, plan: Plan) -> None:
    """Declare the project's tasks on ``plan`` (its ``[project] plan`` attribute, ``f(plan)``)."""
    where = f"{project.file}:project.plan"
    declare = import_reference(project.root, project.config.plan, where)
    if not callable(declare):
        raise ProjectError(where, f"{project.config.plan} is a {type(declare).__name__}", "it is a function f(plan)")
    _call(where, f"{project.config.plan}(plan)", declare, plan)


def flat_baseline(project: Project, session: Session) -> FlatBaseline | None:
    """The project's flat baseline for ``session`` (its ``[project] flat`` attribute), or None."""
    if project.config.flat is None:
        return None
    where = f"{project.file}:project.flat"
    make = import_reference(project.root, project.config.flat, where)
    if not callable(make):
        raise ProjectError(where, f"{project.config.flat} is a {type(make).__name__}", "it is f(project, session)")
    made: FlatBaseline | None = _call(where, f"{project.config.flat}(project, session)", make, project, session)
    return made
