"""Sphinx configuration for the dpsklearn documentation.

Build (the gallery examples run during the build)::

    pip install ".[docs]"
    sphinx-build -W -b html docs docs/_build/html
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import dpsklearn  # noqa: E402

project = "dpsklearn"
author = "dpsklearn developers"
copyright = "dpsklearn developers"
release = dpsklearn.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "benchmark_results",
]

templates_path = ["_templates"]
# examples/ holds the gallery's sources; sphinx-gallery renders them into
# auto_examples/. benchmarks/ holds the benchmark scripts' Markdown, read by
# the benchmark_results extension, not by Sphinx.
exclude_patterns = ["_build", "examples", "benchmarks", "Thumbs.db", ".DS_Store"]
root_doc = "index"

# -- autodoc / autosummary / numpydoc ------------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": False, "inherited-members": False}
autodoc_typehints = "none"
# Methods are listed by autosummary in the API reference; numpydoc's own
# member tables would duplicate them (and ask for stubs of inherited ones).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- sphinx-gallery -----------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": "/plot_",
    "abort_on_example_error": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    # Set DPSKLEARN_DOCS_NO_GALLERY=1 to skip running the examples (the
    # gallery pages then have no output); CI always runs them.
    "plot_gallery": "False" if os.environ.get("DPSKLEARN_DOCS_NO_GALLERY") else "True",
}

# -- HTML ---------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"dpsklearn {release}"
html_theme_options = {
    "description": "Differentially private prediction for any scikit-learn estimator",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}

# -- autosummary: names exported by more than one public module -------------
# Every class and function is documented once, on the page of its home: the
# top level for the names ``dpsklearn`` exports, otherwise the public module
# whose private submodule defines it (``dpsklearn.planning`` for
# ``dpsklearn.planning._sample_size.kernel_ridge_schedule``). Autodoc records
# the defining module as the canonical name, so a second description would be
# a duplicate; the other pages that export the name link to its home instead.
_PUBLIC_MODULES = ["dpsklearn"] + sorted(
    f"dpsklearn.{info.name}"
    for info in pkgutil.iter_modules(dpsklearn.__path__)
    if not info.name.startswith("_")
)


def _exported(module_name):
    module = importlib.import_module(module_name)
    return {name: getattr(module, name) for name in getattr(module, "__all__", [])}


def _home(name, obj):
    """The public module whose page documents ``obj``."""
    if dpsklearn.__dict__.get(name) is obj and name in dpsklearn.__all__:
        return "dpsklearn"
    defined_in = getattr(obj, "__module__", "") or ""
    for module_name in _PUBLIC_MODULES[1:]:
        if defined_in == module_name or defined_in.startswith(module_name + "._"):
            if _exported(module_name).get(name) is obj:
                return module_name
    return None


_reexported = {}  # module -> names documented elsewhere
_homes = {}  # module -> {name: the qualified name where it is documented}
for _module_name in _PUBLIC_MODULES:
    for _name, _obj in _exported(_module_name).items():
        if not callable(_obj):
            continue
        _where = _home(_name, _obj)
        if _where not in (None, _module_name):
            _reexported.setdefault(_module_name, []).append(_name)
            _homes.setdefault(_module_name, {})[_name] = f"{_where}.{_name}"
autosummary_context = {"reexported": _reexported, "homes": _homes}
autosummary_ignore_module_all = False
