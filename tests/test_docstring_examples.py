"""Every docstring example in the package runs, against the installed package.

The examples are collected with :mod:`doctest` from the imported modules
rather than with ``pytest --doctest-modules`` on the source tree: the
README's test command installs the package (not in editable mode), and
collecting the source files would import a second copy of every module
beside the installed one. Importing through the package tests what users
run, whichever way it was installed.
"""

from __future__ import annotations

import doctest
import importlib
import io
import pkgutil

import pytest

import dpsklearn

# ``__main__`` runs the command line when imported; it has no examples.
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(dpsklearn.__path__, "dpsklearn.")
    if not info.name.endswith("__main__")
)
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def test_every_module_is_collected():
    # A package that failed to import or a renamed folder would silently
    # shrink the list below; the subpackages must all be there.
    for sub in (
        "accounting",
        "ensemble",
        "linear_model",
        "mechanisms",
        "naive_bayes",
        "noise",
        "preprocessing",
        "serving",
    ):
        assert any(name.startswith(f"dpsklearn.{sub}.") for name in MODULES), sub


@pytest.mark.parametrize("module_name", ["dpsklearn", *MODULES])
def test_docstring_examples_run(module_name):
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    report = io.StringIO()
    for test in finder.find(module, module_name):
        runner.run(test, out=report.write)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, report.getvalue()
