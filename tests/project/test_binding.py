"""A project's registry, plan and flat baseline come from its own code, imported from its root only.

The root is first on ``sys.path`` while importing and nowhere after; a module of the same name from
somewhere else (another project imported earlier, an installed package) is never taken for the
project's; anything the project's code raises is one ``ProjectError`` naming the key; the registry
carries a recipe, so another process (a Dask worker) rebuilds the same table from the project.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from contextmesh import ContextGraph, Plan, ProjectError, TaskRegistry, load_project

PLAN = """
from contextmesh import TaskRegistry

def declare(plan):
    plan.task("only", worker_key="{key}", assumes="the world is round")

def build_registry(project):
    registry = TaskRegistry()
    registry.register_worker("{key}", lambda ctx: {{"from": {tag!r}, "setting": project.settings.get("tag")}})
    return registry

instance = TaskRegistry()
instance.register_worker("{key}", lambda ctx: {{"from": "instance"}}, timeout=5, retries=2)
"""


def project(
    root: Path, *, module: str = "jobs", key: str = "jobs.v1", tag: str = "", registry: str = "build_registry"
) -> Path:
    (root / module).mkdir(parents=True)
    (root / module / "__init__.py").write_text("")
    (root / module / "plan.py").write_text(PLAN.format(key=key, tag=tag or str(root)))
    (root / "contextmesh.toml").write_text(
        f'[project]\nname = "p"\nregistry = "{module}.plan:{registry}"\nplan = "{module}.plan:declare"\n'
    )
    return root


def worker_output(registry: TaskRegistry, key: str) -> object:
    return registry.lookup_worker(key).fn(None)


def test_the_registry_and_plan_are_the_projects_and_sys_path_is_left_as_it_was(tmp_path: Path) -> None:
    before = list(sys.path)
    loaded = load_project(project(tmp_path / "a"))
    registry = loaded.registry()
    assert sys.path == before
    assert registry.describe() == {"workers": ["jobs.v1"], "auditors": []}
    assert worker_output(registry, "jobs.v1") == {"from": str(tmp_path / "a"), "setting": None}
    plan = loaded.new_plan(ContextGraph())
    assert plan.name == "p" and list(plan.tasks) == ["only"] and plan.registry is registry


def test_two_projects_with_the_same_module_name_each_bind_their_own_code(tmp_path: Path) -> None:
    first = load_project(project(tmp_path / "one", module="shared", key="k.v1", tag="one")).registry()
    second = load_project(project(tmp_path / "two", module="shared", key="k.v1", tag="two")).registry()
    again = load_project(tmp_path / "one").registry()
    assert [worker_output(r, "k.v1")["from"] for r in (first, second, again)] == ["one", "two", "one"]  # type: ignore[index]


def test_a_module_that_resolves_outside_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "contextmesh.toml").write_text('[project]\nname = "p"\nregistry = "json:dumps"\nplan = "json:loads"\n')
    with pytest.raises(ProjectError) as caught:
        load_project(root).registry()
    assert caught.value.path.endswith("contextmesh.toml:project.registry")
    assert "outside the project root" in caught.value.found and "json" in caught.value.found
    assert sys.modules["json"].__file__ and "json" in sys.modules  # the standard library was not disturbed


def test_a_registry_instance_is_copied_with_its_timeouts_and_retries(tmp_path: Path) -> None:
    registry = load_project(project(tmp_path / "p", registry="instance")).registry()
    entry = registry.lookup_worker("jobs.v1")
    assert (entry.timeout, entry.retries) == (5.0, 2) and registry.recipe is not None


@pytest.mark.parametrize(
    ("source", "attribute", "words"),
    [
        ("def broken(:\n", "build_registry", ["importing 'jobs.plan' raised SyntaxError"]),
        ("raise RuntimeError('no database')\n", "build_registry", ["raised RuntimeError: no database"]),
        ("import sys\nsys.exit(3)\n", "build_registry", ["raised SystemExit: 3"]),
        ("x = 1\n", "build_registry", ["has no attribute 'build_registry'"]),
        ("build_registry = 42\ndeclare = 1\n", "build_registry", ["is a int", "a TaskRegistry or f(project)"]),
        ("def build_registry(project):\n    return {}\n", "build_registry", ["returned a dict"]),
        ("def build_registry(project):\n    raise KeyError('world')\n", "build_registry", ["raised KeyError: 'world'"]),
    ],
)
def test_what_the_projects_code_does_wrong_is_one_project_error_naming_the_key(
    tmp_path: Path, source: str, attribute: str, words: list[str]
) -> None:
    root = project(tmp_path / "p")
    (root / "jobs" / "plan.py").write_text(source)
    with pytest.raises(ProjectError) as caught:
        load_project(root).registry()
    assert caught.value.path == f"{root / 'contextmesh.toml'}:project.registry"
    for word in words:
        assert word in str(caught.value), caught.value
    assert "\n" not in str(caught.value)


def test_a_plan_declaration_that_raises_names_the_plan_key(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    plan = root / "jobs" / "plan.py"
    plan.write_text(
        plan.read_text() + "\ndef declare(plan):\n    plan.task('x', worker_key='absent.v1', assumes='a')\n"
    )
    with pytest.raises(ProjectError) as caught:
        load_project(root).new_plan(ContextGraph())
    assert caught.value.path.endswith(":project.plan") and "absent.v1" in str(caught.value)


def test_the_registry_pickles_as_its_recipe_and_another_process_rebuilds_it(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    registry = load_project(root).with_settings(tag="override").registry()
    data = pickle.dumps(registry)
    assert b"build_registry" not in data or b"bind_registry" in data  # named by reference, never by value
    code = textwrap.dedent(
        """
        import pickle, sys
        registry = pickle.loads(sys.stdin.buffer.read())
        print(registry.describe()["workers"], registry.lookup_worker("jobs.v1").fn(None)["setting"])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=data, capture_output=True, timeout=60, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["['jobs.v1']", "override"]


def test_a_changed_project_is_refused_on_rebuild_naming_the_difference(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    data = pickle.dumps(load_project(root).registry())
    (root / "jobs" / "plan.py").write_text(PLAN.format(key="jobs.v2", tag="x"))
    code = "import pickle, sys\npickle.loads(sys.stdin.buffer.read())\n"
    done = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, timeout=60, check=False)
    assert done.returncode != 0 and b"jobs.v1" in done.stderr and b"missing here" in done.stderr


def test_plan_from_the_public_api_accepts_the_project_registry(tmp_path: Path) -> None:
    registry = load_project(project(tmp_path / "p")).registry()
    plan = Plan("direct", ContextGraph(), registry=registry)
    plan.task("t", worker_key="jobs.v1", assumes="anything")
    assert plan.run().executed == ["t"]
