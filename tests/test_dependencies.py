"""A clean install is the product: every third-party import is declared in pyproject.toml.

The instrument card once imported a package that only the developer's machine had; its test skipped,
and every finished study's card answered 500 after a fresh install. This test reads the imports of
every module and fails on one whose distribution ``pyproject.toml`` does not name: the platform's code
may use ``[project.dependencies]`` only, the tests the ``test`` extra too, ``examples/`` its extra, and the
client in ``client/`` only what ``client/pyproject.toml`` declares (httpx): no Django, no numpy.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SKIPPED_DIRECTORIES = {".venv", "venv", "build", "node_modules", "migrations", "var", "staticfiles"}


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


CORE = _names(PROJECT["dependencies"])
EXTRAS = {name: _names(requirements) for name, requirements in PROJECT["optional-dependencies"].items()}
CLIENT = _names(tomllib.loads((ROOT / "client" / "pyproject.toml").read_text())["project"]["dependencies"])
ALLOWED = {
    "": CORE,  # the platform: config, common, collection, scoring, metrics, manage.py
    "tests": CORE | EXTRAS["test"],
    "benchmarks": CORE | EXTRAS["test"],
    "examples": CORE | EXTRAS["examples"],
    "client": CLIENT,  # yardstick-client, a distribution of its own: httpx and the standard library only
}
LOCAL = (
    {path.name for path in ROOT.iterdir() if (path / "__init__.py").exists()}
    | {path.stem for path in ROOT.glob("*.py")}
    | {"yardstick_client"}  # client/'s package, this repository's own
)


def _modules(root: Path) -> list[Path]:
    return sorted(
        path
        for path in root.rglob("*.py")
        if not SKIPPED_DIRECTORIES & set(path.relative_to(root).parts[:-1])
    )


def _top_level_imports(path: Path) -> set[str]:
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            tops |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
    return tops - set(sys.stdlib_module_names) - LOCAL - {"__future__"}


def _undeclared(root: Path = ROOT) -> list[str]:
    providers = metadata.packages_distributions()
    problems = []
    for path in _modules(root):
        relative = path.relative_to(root)
        allowed = ALLOWED.get(relative.parts[0] if len(relative.parts) > 1 else "", CORE)
        for top in sorted(_top_level_imports(path)):
            distributions = {name.lower().replace("_", "-") for name in providers.get(top, [])}
            if not distributions:
                if top.lower().replace("_", "-") not in allowed:
                    problems.append(f"{relative}: {top!r} is neither installed nor declared")
            elif not distributions & allowed:
                problems.append(
                    f"{relative}: {top!r} (from {', '.join(sorted(distributions))}) is not declared"
                )
    return problems


def test_every_import_of_the_project_is_declared_in_pyproject():
    assert _undeclared() == []


def test_the_check_finds_an_undeclared_import(tmp_path):
    (tmp_path / "metrics").mkdir()
    # pytest is installed here (the test extra) but the platform may not rely on it; numpy it may.
    (tmp_path / "metrics" / "probe.py").write_text("import numpy\nimport pytest\nimport no_such_package\n")
    assert _undeclared(tmp_path) == [
        "metrics/probe.py: 'no_such_package' is neither installed nor declared",
        "metrics/probe.py: 'pytest' (from pytest) is not declared",
    ]


@pytest.mark.parametrize("package", sorted(CORE))
def test_every_declared_dependency_is_installed(package):
    metadata.distribution(package)


def test_the_client_imports_only_httpx_and_the_standard_library():
    imports = set().union(*(_top_level_imports(path) for path in _modules(ROOT / "client")))

    assert imports - {"yardstick_client"} == {"httpx"}
