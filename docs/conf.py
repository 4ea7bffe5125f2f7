"""Sphinx configuration for the dpsklearn documentation.

Build (the gallery examples run during the build)::

    pip install ".[docs]"
    sphinx-build -W -b html docs docs/_build/html
"""

from __future__ import annotations

import os
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

# -- autosummary: names re-exported by the package --------------------------
# Names that ``dpsklearn`` re-exports are documented once, at the top level
# (autodoc records their module path as the canonical alias); the module pages
# link to them instead of documenting them a second time.
_reexported = {}
for _name in dpsklearn.__all__:
    _obj = getattr(dpsklearn, _name)
    _module = getattr(_obj, "__module__", None)
    if _module not in (None, "dpsklearn") and callable(_obj):
        _reexported.setdefault(_module, []).append(_name)
autosummary_context = {"reexported": _reexported}
autosummary_ignore_module_all = False
