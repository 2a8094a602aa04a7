"""Imports run one way: common ← collection ← scoring ← metrics, with no cycle and no task imported by a
service.

Every import of the project's modules counts, those inside functions too (an import moved into a
function to dodge a cycle is still a cycle). An app may use a lower app's modules, and any app may use
another app's PURE modules (``tests/test_pure_modules.py``), which import nothing of the apps.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

from tests.test_pure_modules import PURE_NAMES

ROOT = Path(__file__).resolve().parent.parent
LAYERS = {"common": 0, "collection": 1, "scoring": 2, "metrics": 3}
PACKAGES = (*LAYERS, "config")


def project_modules() -> dict[str, Path]:
    """Every module of the project's packages, by dotted name."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def imports_of(name: str, source: str, modules: Iterable[str]) -> set[str]:
    """The project modules that the module ``name`` imports, anywhere in its source."""
    modules = set(modules)
    package = name if name in PACKAGES else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from .celery import app
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # "from collection import arrays" imports the module collection.arrays.
            candidates = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for candidate in candidates:
            while candidate and candidate not in modules:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                found.add(candidate)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imports_of(name, path.read_text(), modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def upward_imports(graph: dict[str, set[str]], pure: set[str]) -> list[tuple[str, str]]:
    """(importer, imported) where an app imports a non-pure module of an app above it."""
    return sorted(
        (importer, imported)
        for importer, targets in graph.items()
        for imported in targets
        if importer.split(".")[0] in LAYERS
        and imported.split(".")[0] in LAYERS
        and LAYERS[imported.split(".")[0]] > LAYERS[importer.split(".")[0]]
        and imported not in pure
    )


def task_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, tasks module) where anything but a tasks module imports one: services start tasks
    by name (``common.tasks``), tasks import services."""
    return sorted(
        (importer, imported)
        for importer, targets in graph.items()
        for imported in targets
        if imported.endswith(".tasks") and imported != "common.tasks" and not importer.endswith(".tasks")
    )


# --- the project ---------------------------------------------------------------------------------


def test_no_import_cycle_counting_imports_inside_functions():
    assert cycles(import_graph()) == []


def test_apps_import_downward_only_or_pure_modules():
    assert upward_imports(import_graph(), PURE_NAMES) == []


def test_no_module_but_a_task_imports_a_tasks_module():
    assert task_imports(import_graph()) == []


def test_pure_modules_import_no_app_module_that_is_not_pure():
    graph = import_graph()
    assert {name: sorted(graph[name] - PURE_NAMES) for name in PURE_NAMES if graph[name] - PURE_NAMES} == {}


# --- the checks catch what they look for --------------------------------------------------------

MODULES = {"common.errors", "collection.services", "collection.tasks", "scoring.models", "scoring.borda"}


def test_the_scan_sees_imports_inside_functions_and_from_package_imports():
    source = "from collection import services\n\ndef f():\n    from scoring.models import ItemScore\n"
    assert imports_of("collection.tasks", source, MODULES) == {"collection.services", "scoring.models"}


def test_the_checks_catch_a_cycle_an_upward_import_and_a_service_importing_a_task():
    graph = {
        "collection.services": {"collection.tasks", "scoring.models", "scoring.borda", "common.errors"},
        "collection.tasks": {"collection.services"},
        "scoring.models": set(),
        "scoring.borda": set(),
        "common.errors": set(),
    }
    assert cycles(graph) == [["collection.services", "collection.tasks"]]
    assert upward_imports(graph, {"scoring.borda"}) == [("collection.services", "scoring.models")]
    assert task_imports(graph) == [("collection.services", "collection.tasks")]
