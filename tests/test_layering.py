"""The package's layers: imports point down, and only at public names.

Every subpackage (and every top-level module) of ``dpsklearn`` has a rank;
a module may import from its own unit or from a unit of lower rank, never
from one of the same or a higher rank, so the dependency drawing of
``docs/architecture.rst`` has no arrow running back up. Across units a
module imports public names from the unit's public module: no underscore
module (``from ..accounting._split import ...``) and no underscore name
(``from ..accounting import _kov_epsilon``). Nothing private of
scikit-learn is imported.

Run alone: ``python -m pytest tests/test_layering.py``.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import dpsklearn

ROOT = pathlib.Path(dpsklearn.__file__).parent

#: Bottom to top. Units of one rank never import each other.
RANKS = {
    "exceptions": 0,
    "_param_validation": 0,
    "_config": 0,
    "_progress": 0,
    "_warn": 0,
    "_monotone": 0,
    "baselines": 0,
    "datasets": 0,
    "_validation": 1,
    "_dask_input": 1,
    "noise": 2,
    "accounting": 2,
    "metrics": 2,
    "_released": 2,
    "serving": 3,
    "mechanisms": 3,
    "_base": 4,
    "teachers": 4,
    "preprocessing": 3,
    "planning": 5,
    "ensemble": 6,
    "kernel_ridge": 6,
    "erm": 6,
    "linear_model": 6,
    "naive_bayes": 6,
    "decomposition": 6,
    "statistics": 6,
    "queries": 6,
    "model_selection": 7,
    "pipeline": 7,
    "audit": 8,
    "demo": 8,
    "__init__": 9,
    "__main__": 10,
}


def _modules():
    return sorted(ROOT.rglob("*.py"))


def _unit(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return parts[0]


def _imports(path):
    """``(target unit, module path after the unit, names, line)`` of each import."""
    package = list(path.relative_to(ROOT).with_suffix("").parts[:-1])
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "dpsklearn":
                module = node.module.split(".")[1:]
            else:
                continue
            names = [alias.name for alias in node.names]
            if not module:  # ``from . import x`` at the top: a unit, or a name
                for name in names:  # of the package's ``__init__``
                    if name in RANKS:
                        yield name, [], [], node.lineno
                    else:
                        yield "__init__", [], [name], node.lineno
            else:
                yield module[0], module[1:], names, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "dpsklearn" and len(parts) > 1:
                    yield parts[1], parts[2:], [], node.lineno


def test_every_unit_has_a_rank():
    units = {_unit(path) for path in _modules()}
    assert units <= set(RANKS), sorted(units - set(RANKS))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_down_at_public_names(path):
    unit = _unit(path)
    problems = []
    for target, rest, names, line in _imports(path):
        if target == unit:
            continue
        where = f"{path.relative_to(ROOT)}:{line}"
        if RANKS[target] >= RANKS[unit]:
            problems.append(
                f"{where} imports {target} (rank {RANKS[target]}) from {unit} "
                f"(rank {RANKS[unit]})"
            )
        if any(part.startswith("_") for part in rest):
            private_module = ".".join([target, *rest])
            problems.append(f"{where} imports a private module {private_module}")
        private = [n for n in names if n.startswith("_") and n != "__version__"]
        if private:
            problems.append(f"{where} imports private names {private} from {target}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_scikit_learn_import(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] == "sklearn" and any(p.startswith("_") for p in parts[1:]):
                private.append(f"line {node.lineno}: {module}")
    assert not private, private
