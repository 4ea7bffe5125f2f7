"""No import cycle anywhere in the package.

Two modules that import each other (directly or through others) can only
load in one order, which one of them has to arrange with an import inside a
function; the dependency drawing of ``docs/architecture.rst`` then has a
loop. This test reads every ``dpsklearn/**/*.py`` with :mod:`ast`, resolves
relative imports, draws an edge from a module to each module it imports --
at the top, inside a function or under ``TYPE_CHECKING`` alike -- and fails
on any cycle. ``from package import name`` points at the submodule ``name``
when there is one, else at the package (its ``__init__``); a package's
``__init__`` importing its own modules is an edge like any other.

Run alone: ``python -m pytest tests/test_import_cycles.py``.
"""

from __future__ import annotations

import ast
import pathlib

import dpsklearn

ROOT = pathlib.Path(dpsklearn.__file__).parent


def _module_name(path):
    parts = ["dpsklearn", *path.relative_to(ROOT).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _package_of(name, path):
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imported(name, path):
    """The package's modules that ``name`` imports, anywhere in its body."""
    package = _package_of(name, path)
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target not in MODULES:
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                yield submodule if submodule in MODULES else target


def _graph():
    return {
        name: sorted(set(_imported(name, path)) - {name})
        for name, path in MODULES.items()
    }


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
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
    return found


def test_the_graph_resolves_relative_imports():
    graph = _graph()
    # A relative import two levels up, one of a name, one of a submodule.
    assert "dpsklearn._validation" in graph["dpsklearn.accounting._split"]
    assert "dpsklearn.accounting._composer" in graph["dpsklearn.accounting._split"]
    assert "dpsklearn.accounting" in graph["dpsklearn.mechanisms._repeat_select"]
    assert "dpsklearn.accounting._split" in graph["dpsklearn.accounting"]


def test_the_cycle_finder_finds_a_loop():
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [
        ["a", "b", "c"]
    ]
    assert _cycles({"a": ["b"], "b": []}) == []


def test_no_import_cycle():
    cycles = _cycles(_graph())
    assert not cycles, "modules that import each other:\n" + "\n".join(
        " <-> ".join(component) for component in cycles
    )
