"""``contextmesh init DIR [--name NAME]``: a runnable project, in the manner of Prefect's and Dagster's.

:func:`init_project` writes ``contextmesh.toml``, a plan module (three tasks, their workers and an
auditor reading ``world.json`` through ``[settings] world``), the world file, two example documents
and their entities file (Markdown with front matter, docs/formats/documents.md), three thin
``flows/`` entrypoints bound to the project, a ``.gitignore`` and a README. The files are the
templates beside this module, with the project's name and its code's package name filled in.

It never overwrites anything. The target must be absent, empty, or hold nothing but files ``init``
writes (byte for byte what it would write) and entries whose names start with ``.`` (``.git``,
``.venv``): then it writes the files that are missing, so an ``init`` that stopped half way can
simply be run again. Anything else there is refused, naming it, before a byte is written; each
file is created exclusively, so a file that appears in the meantime is not clobbered either.
"""

from __future__ import annotations

import importlib.util
import keyword
import os
import re
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contextmesh.project.config import NAME_RULE, PROJECT_FILE, ProjectError, check_name

__all__ = ["Scaffold", "init_project", "module_name", "planned_files"]

TEMPLATES = Path(__file__).resolve().parent / "templates"
# (where the file goes, its template); "{module}" is the package of the project's code.
_FILES = (
    ("contextmesh.toml", "contextmesh.toml.tmpl"),
    ("README.md", "README.md.tmpl"),
    (".gitignore", "gitignore.tmpl"),
    ("world.json", "world.json.tmpl"),
    ("{module}/__init__.py", "package/__init__.py.tmpl"),
    ("{module}/plan.py", "package/plan.py.tmpl"),
    ("docs/weekly-report.md", "docs/weekly-report.md.tmpl"),
    ("docs/pricing.md", "docs/pricing.md.tmpl"),
    ("docs/entities.json", "docs/entities.json.tmpl"),
    ("flows/__init__.py", "flows/__init__.py.tmpl"),
    ("flows/plan.py", "flows/plan.py.tmpl"),
    ("flows/recheck.py", "flows/recheck.py.tmpl"),
    ("flows/repair.py", "flows/repair.py.tmpl"),
)
_RULE = (
    "the rule is an absent or empty folder, or one holding only files `init` writes (it adds the missing "
    "ones and never overwrites a file)"
)


@dataclass(frozen=True)
class Scaffold:
    """What :func:`init_project` made: the project's root, name and code package, and the files."""

    root: Path
    name: str
    module: str
    written: tuple[Path, ...]
    kept: tuple[Path, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "root": str(self.root),
            "name": self.name,
            "module": self.module,
            "written": [str(p.relative_to(self.root)) for p in self.written],
            "kept": [str(p.relative_to(self.root)) for p in self.kept],
        }


def _derived_name(directory: Path) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", directory.absolute().name.lower()).strip("-")[:63].rstrip("-")
    try:
        return check_name(base, "--name")
    except ProjectError:
        raise ProjectError(
            "--name",
            f"the folder name {directory.absolute().name!r} makes no project name",
            f"{NAME_RULE}; give one with --name NAME",
        ) from None


def _taken(module: str, root: Path) -> bool:
    if keyword.iskeyword(module) or module in sys.stdlib_module_names or module in {"contextmesh", "flows"}:
        return True
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return True
    if spec is None:
        return False
    origin = spec.origin or next(iter(spec.submodule_search_locations or []), None)
    if origin is None:
        return True
    found = Path(origin).resolve()
    # The project's own code is not taken; nor is another project's, imported earlier in this
    # process: the binding never takes it for this project's (binding._forget_other_projects).
    return not found.is_relative_to(root) and not any((p / PROJECT_FILE).is_file() for p in found.parents)


def module_name(name: str, root: Path | None = None) -> str:
    """The package name of a project's code: its name as an identifier no module outside ``root`` has."""
    base = name.replace("-", "_")
    if base[0].isdigit():
        base = f"project_{base}"
    inside = (root or Path.cwd()).resolve()
    for candidate in (base, f"{base}_project", f"{base}_plan"):
        if not _taken(candidate, inside):
            return candidate
    raise ProjectError("--name", repr(name), "its package name is taken by an installed module; choose another name")


def planned_files(name: str, module: str) -> dict[Path, bytes]:
    """Every file ``init`` writes for ``name``, by path relative to the root, with its bytes."""
    files: dict[Path, bytes] = {}
    for target, template in _FILES:
        text = (TEMPLATES / template).read_text(encoding="utf-8")
        text = text.replace("__NAME__", name).replace("__MODULE__", module)
        files[Path(target.format(module=module))] = text.encode("utf-8")
    return files


def _refuse_foreign(root: Path, files: dict[Path, bytes]) -> list[Path]:
    """The planned files already there (identical); refuse anything else in the folder."""
    folders = {parent for relative in files for parent in relative.parents if parent != Path()}
    kept: list[Path] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        for entry in sorted(folder.iterdir()):
            relative = entry.relative_to(root)
            if folder == root and entry.name.startswith("."):
                if relative in files:  # .gitignore is ours
                    kept += _same(entry, relative, files)
                continue
            mode = entry.lstat().st_mode
            if relative in folders and stat.S_ISDIR(mode):
                pending.append(entry)
            elif relative in files and stat.S_ISREG(mode):
                kept += _same(entry, relative, files)
            else:
                raise ProjectError(
                    str(root), f"not empty: it holds {str(relative)!r}, which `init` does not write", _RULE
                )
    return kept


def _same(entry: Path, relative: Path, files: dict[Path, bytes]) -> list[Path]:
    if not stat.S_ISREG(entry.lstat().st_mode) or entry.read_bytes() != files[relative]:
        raise ProjectError(str(entry), "exists and differs from what `init` writes", _RULE)
    return [entry]


def init_project(directory: Path, *, name: str | None = None) -> Scaffold:
    """Write a runnable project into ``directory`` (see the module docstring for what and the rules)."""
    directory = Path(directory)
    chosen = check_name(name, "--name") if name is not None else _derived_name(directory)
    module = module_name(chosen, directory)
    files = planned_files(chosen, module)
    if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
        raise ProjectError(str(directory), "not a folder", _RULE)
    kept = _refuse_foreign(directory, files) if directory.exists() else []
    root = directory.absolute()
    written: list[Path] = []
    for relative, data in files.items():
        target = directory / relative
        if target in kept:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        except FileExistsError:
            raise ProjectError(str(target), "appeared while `init` was writing", _RULE) from None
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        written.append(root / relative)
    return Scaffold(root, chosen, module, tuple(written), tuple(root / p.relative_to(directory) for p in kept))
