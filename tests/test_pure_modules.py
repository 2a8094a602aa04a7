"""The math modules stay pure: numpy, scipy, the standard library and each other only."""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE_MODULES = [
    "common/numbers.py",
    "collection/schedule.py",
    "collection/pairs.py",
    "collection/split.py",
    "scoring/borda.py",
    "scoring/plan.py",
    "scoring/simulation.py",
    "scoring/plots.py",
    "scoring/agreement.py",
    "scoring/quality.py",
    "scoring/fragility.py",
    "scoring/plan_search.py",
    "scoring/elimination.py",
    "scoring/protocol_comparison.py",
    "scoring/model_agreement.py",
    "scoring/bradley_terry.py",
    "scoring/score_models.py",
    "metrics/correlation.py",
    "metrics/ir.py",
    "metrics/metrology.py",
    "metrics/card.py",
    "metrics/card_render.py",
    "metrics/evaluation.py",
    "metrics/kernels.py",
    "metrics/judging.py",
    "metrics/score_model_replicates.py",
]
# numba compiles the row kernels of the bootstrap and the chance level (1000 rankings of 10^4 items in
# well under a second; whole-array numpy took about 11 s). It is a compiler, not I/O or a framework,
# and it is allowed in that one module, which the others import only inside the functions that use it.
ALLOWED_EXTRA = {"metrics/kernels.py": {"numba"}}
PURE_NAMES = {path.removesuffix(".py").replace("/", ".") for path in PURE_MODULES}
ALLOWED_TOP_LEVEL = {"numpy", "scipy", "__future__"} | set(sys.stdlib_module_names)
FORBIDDEN_CALLS = {"open", "print", "input"}


def imported_modules(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module


@pytest.mark.parametrize("path", PURE_MODULES)
def test_pure_modules_import_only_numpy_scipy_and_the_standard_library(path):
    tree = ast.parse((ROOT / path).read_text())
    offending = [
        name
        for name in imported_modules(tree)
        if name not in PURE_NAMES
        and name.split(".")[0] not in ALLOWED_TOP_LEVEL | ALLOWED_EXTRA.get(path, set())
    ]
    assert offending == []


@pytest.mark.parametrize("path", PURE_MODULES)
def test_pure_modules_do_no_io_and_draw_no_global_randomness(path):
    tree = ast.parse((ROOT / path).read_text())
    calls = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert calls & FORBIDDEN_CALLS == set()
    source = (ROOT / path).read_text()
    assert "np.random.seed" not in source and "np.random.rand" not in source and "import random" not in source


def test_the_scan_catches_a_forbidden_import(tmp_path):
    tree = ast.parse("import numpy\nfrom django.db import models\nimport pandas as pd\n")
    assert [n for n in imported_modules(tree) if n.split(".")[0] not in ALLOWED_TOP_LEVEL] == [
        "django.db",
        "pandas",
    ]
