"""TaskRegistry: two namespaces of durable keys, a strict key grammar, and no route from text to code."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from contextmesh.core.ids import MAX_KEY_LENGTH
from contextmesh.execution import task_registry as registry_module
from contextmesh.execution.task_registry import RegistryError, TaskRegistry

EXECUTION_DIR = Path(registry_module.__file__).resolve().parent
REGISTRY_SOURCE = Path(registry_module.__file__).resolve()


def argon2(ctx: Any) -> dict[str, str]:
    return {"algorithm": "argon2id"}


def bcrypt(ctx: Any) -> dict[str, str]:
    return {"algorithm": "bcrypt"}


def advisory_audit(ctx: Any) -> Any:
    return ctx.ok("no advisory")


# -- namespaces -----------------------------------------------------------------------------------


def test_workers_and_auditors_resolve_from_separate_namespaces() -> None:
    registry = TaskRegistry()
    registry.register_worker("auth.hash.v1", argon2)
    registry.register_auditor("auth.audit.v1", advisory_audit)
    assert registry.lookup_worker("auth.hash.v1").fn is argon2
    assert registry.lookup_auditor("auth.audit.v1").fn is advisory_audit
    assert registry.has_worker("auth.hash.v1") and not registry.has_auditor("auth.hash.v1")
    assert registry.has_auditor("auth.audit.v1") and not registry.has_worker("auth.audit.v1")


def test_the_same_text_in_both_namespaces_names_two_separate_registrations() -> None:
    # The module's invariant 1 is "once per namespace": the two tables never read each other.
    registry = TaskRegistry()
    registry.register_worker("auth.v1", argon2)
    registry.register_auditor("auth.v1", advisory_audit)
    assert registry.lookup_worker("auth.v1").fn is argon2
    assert registry.lookup_auditor("auth.v1").fn is advisory_audit


def test_a_worker_key_looked_up_as_an_auditor_says_it_is_a_worker() -> None:
    registry = TaskRegistry()
    registry.register_worker("auth.hash.v1", argon2)
    with pytest.raises(RegistryError, match=r"'auth\.hash\.v1' is registered as a worker, not an auditor"):
        registry.lookup_auditor("auth.hash.v1")


def test_an_auditor_key_looked_up_as_a_worker_says_it_is_an_auditor() -> None:
    registry = TaskRegistry()
    registry.register_auditor("auth.audit.v1", advisory_audit)
    with pytest.raises(RegistryError, match=r"'auth\.audit\.v1' is registered as an auditor, not a worker"):
        registry.lookup_worker("auth.audit.v1")


# -- registering once -----------------------------------------------------------------------------


def test_a_key_registered_twice_is_refused_even_with_the_same_callable() -> None:
    registry = TaskRegistry()
    registry.register_worker("auth.hash.v1", argon2)
    with pytest.raises(RegistryError, match=r"'auth\.hash\.v1' is already registered"):
        registry.register_worker("auth.hash.v1", argon2)
    assert registry.lookup_worker("auth.hash.v1").fn is argon2


def test_a_key_registered_twice_with_a_different_callable_keeps_the_first() -> None:
    registry = TaskRegistry()
    registry.register_worker("auth.hash.v1", argon2)
    with pytest.raises(RegistryError, match="one implementation for the life of the process"):
        registry.register_worker("auth.hash.v1", bcrypt)
    assert registry.lookup_worker("auth.hash.v1").fn is argon2


def test_an_auditor_key_registered_twice_is_refused() -> None:
    registry = TaskRegistry()
    registry.register_auditor("auth.audit.v1", advisory_audit)
    with pytest.raises(RegistryError, match="already registered"):
        registry.register_auditor("auth.audit.v1", advisory_audit)


def test_a_non_callable_is_refused() -> None:
    registry = TaskRegistry()
    with pytest.raises(RegistryError, match="not callable"):
        registry.register_worker("auth.hash.v1", "contextmesh.demo.auth:_argon2")  # type: ignore[arg-type]
    assert registry.describe() == {"workers": [], "auditors": []}


# -- key grammar ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "auth.hash v1",
        " auth.hash.v1",
        "auth.hash.v1 ",
        "auth\thash",
        "auth\nhash",
        "auth\u00a0hash",  # no-break space
        "auth\u2003hash",  # em space
    ],
    ids=["space", "leading", "trailing", "tab", "newline", "nbsp", "em-space"],
)
def test_a_key_with_whitespace_is_refused_and_the_message_names_it(key: str) -> None:
    registry = TaskRegistry()
    with pytest.raises(RegistryError, match="whitespace") as caught:
        registry.register_worker(key, argon2)
    assert repr(key) in str(caught.value)
    assert registry.describe() == {"workers": [], "auditors": []}


@pytest.mark.parametrize(
    "key",
    ["auth\x00hash", "auth\x1bhash", "auth\x7fhash", "auth\u200bhash", "auth\u202ehash"],
    ids=["nul", "escape", "delete", "zero-width-space", "rtl-override"],
)
def test_a_key_with_control_characters_is_refused_and_the_message_names_it(key: str) -> None:
    registry = TaskRegistry()
    with pytest.raises(RegistryError, match="control characters") as caught:
        registry.register_auditor(key, advisory_audit)
    assert repr(key) in str(caught.value)


@pytest.mark.parametrize(
    ("key", "rule"),
    [("", "empty"), (42, "text"), (None, "text"), ("k" * (MAX_KEY_LENGTH + 1), "at most")],
    ids=["empty", "int", "none", "too-long"],
)
def test_a_key_that_is_not_non_empty_bounded_text_is_refused(key: Any, rule: str) -> None:
    with pytest.raises(RegistryError, match=rule):
        TaskRegistry().register_worker(key, argon2)


@pytest.mark.parametrize("key", ["auth.hash.argon2.v1", "a", "auth/hash:argon2@1", "ключ.v1", "k" * MAX_KEY_LENGTH])
def test_a_key_is_any_text_without_whitespace_or_control_characters(key: str) -> None:
    registry = TaskRegistry()
    registry.register_worker(key, argon2)
    assert registry.lookup_worker(key).key == key


# -- absent keys ----------------------------------------------------------------------------------


def test_an_absent_key_names_itself_and_suggests_a_near_miss_without_falling_back() -> None:
    registry = TaskRegistry()
    registry.register_worker("auth.hash.argon2.v1", argon2)
    with pytest.raises(RegistryError) as caught:
        registry.lookup_worker("auth.hash.argon2.v2")
    message = str(caught.value)
    assert "'auth.hash.argon2.v2'" in message
    assert message.startswith("no worker is registered under")
    assert "auth.hash.argon2.v1" in message  # a suggestion, never a resolution
    assert not registry.has_worker("auth.hash.argon2.v2")


def test_an_absent_key_with_nothing_close_names_only_itself() -> None:
    registry = TaskRegistry()
    registry.register_worker("auth.hash.argon2.v1", argon2)
    with pytest.raises(RegistryError) as caught:
        registry.lookup_worker("billing.invoice.v1")
    assert "'billing.invoice.v1'" in str(caught.value)
    assert "auth.hash.argon2.v1" not in str(caught.value)


def test_an_absent_auditor_is_reported_as_an_absent_auditor() -> None:
    registry = TaskRegistry()
    with pytest.raises(RegistryError, match=r"no auditor is registered under 'auth\.audit\.v9'"):
        registry.lookup_auditor("auth.audit.v9")


# -- describe -------------------------------------------------------------------------------------


def test_describe_returns_sorted_keys_and_nothing_else() -> None:
    registry = TaskRegistry()
    registry.register_worker("b.worker", bcrypt)
    registry.register_worker("a.worker", argon2, timeout=3, retries=2)
    registry.register_auditor("z.audit", advisory_audit)
    described = registry.describe()
    assert described == {"workers": ["a.worker", "b.worker"], "auditors": ["z.audit"]}
    assert all(type(key) is str for keys in described.values() for key in keys)
    text = repr(described)
    for leak in ("function", "<", __name__, "argon2", "bcrypt", "advisory_audit", "timeout", "retries"):
        assert leak not in text


def test_describe_is_a_copy() -> None:
    registry = TaskRegistry()
    registry.register_worker("a.worker", argon2)
    registry.describe()["workers"].append("injected")
    assert registry.describe() == {"workers": ["a.worker"], "auditors": []}


# -- timeout and retries --------------------------------------------------------------------------


def test_timeout_and_retries_are_kept_on_the_registration() -> None:
    registry = TaskRegistry()
    registry.register_worker("w", argon2, timeout=2, retries=3)
    registry.register_auditor("a", advisory_audit)
    worker, auditor = registry.lookup_worker("w"), registry.lookup_auditor("a")
    assert (worker.timeout, worker.retries) == (2.0, 3)
    assert type(worker.timeout) is float
    assert (auditor.timeout, auditor.retries) == (None, 0)


@pytest.mark.parametrize("timeout", [0, -1, -0.5, True, "5"], ids=["zero", "negative", "negative-float", "bool", "str"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout: Any) -> None:
    registry = TaskRegistry()
    with pytest.raises(RegistryError, match="timeout"):
        registry.register_worker("w", argon2, timeout=timeout)
    assert not registry.has_worker("w")


def test_a_nan_timeout_is_refused() -> None:
    with pytest.raises(RegistryError, match="timeout"):
        TaskRegistry().register_worker("w", argon2, timeout=float("nan"))


@pytest.mark.parametrize("retries", [-1, 1.5, True, "2", None], ids=["negative", "float", "bool", "str", "none"])
def test_retries_that_are_not_a_whole_number_from_zero_are_refused(retries: Any) -> None:
    registry = TaskRegistry()
    with pytest.raises(RegistryError, match="retries"):
        registry.register_auditor("a", advisory_audit, retries=retries)
    assert not registry.has_auditor("a")


# -- no route from text to code -------------------------------------------------------------------

LOADER_MODULES = {"importlib", "pkgutil", "runpy", "pickle", "marshal", "imp", "zipimport", "builtins"}
TEXT_TO_CODE_CALLS = {"eval", "exec", "compile", "__import__", "import_module", "globals", "locals", "vars"}


def _imported_modules(tree: ast.AST) -> dict[str, str]:
    """Local name → top-level module, for every import in the tree."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module or "").split(".")[0]
    return names


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _loader_problems(source: Path) -> list[str]:
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    problems: list[str] = []
    imported = _imported_modules(tree)
    for local, module in imported.items():
        if module in LOADER_MODULES or local in LOADER_MODULES:
            problems.append(f"imports {module} as {local}")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name in TEXT_TO_CODE_CALLS for a in node.names):
            problems.append(f"imports {[a.name for a in node.names]} from {node.module}")
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        if name in TEXT_TO_CODE_CALLS:
            problems.append(f"calls {name}() on line {node.lineno}")
        if name in {"getattr", "setattr"} and node.args:
            target, attr = node.args[0], node.args[1] if len(node.args) > 1 else None
            if isinstance(target, ast.Name) and target.id in imported:
                problems.append(f"calls {name}() on the module {target.id} on line {node.lineno}")
            if attr is not None and not isinstance(attr, ast.Constant):
                problems.append(f"calls {name}() with a computed attribute name on line {node.lineno}")
    return problems


def test_the_registry_module_imports_no_loader_and_turns_no_text_into_code() -> None:
    assert _loader_problems(REGISTRY_SOURCE) == []
    tree = ast.parse(REGISTRY_SOURCE.read_text(encoding="utf-8"))
    # Non-vacuous: the walk does see the module's real imports and calls.
    assert "difflib" in _imported_modules(tree).values()
    assert "get_close_matches" in {_called_name(n) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    # Stricter for the registry itself: no getattr at all, no attribute reads by name.
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _called_name(n) in {"getattr", "setattr"}]


@pytest.mark.parametrize("source", sorted(EXECUTION_DIR.glob("*.py")), ids=lambda p: p.name)
def test_no_execution_module_imports_a_loader_or_turns_text_into_code(source: Path) -> None:
    assert _loader_problems(source) == []


def test_the_loader_check_catches_what_it_is_meant_to_catch(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import importlib\nimport pickle as p\nfrom runpy import run_path\nimport os\n"
        "f = importlib.import_module('x')\neval('1')\nexec('x=1')\n__import__('os')\n"
        "getattr(os, 'system')\ngetattr(f, name)\n",
        encoding="utf-8",
    )
    problems = "\n".join(_loader_problems(bad))
    for expected in ("importlib", "pickle", "runpy", "import_module", "eval", "exec", "__import__", "module os"):
        assert expected in problems
    assert "computed attribute" in problems
