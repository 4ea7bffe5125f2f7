"""CONTRIBUTING.md's module tables list every module of the package, and only those.

A new module without a row (or a row left behind by a move) fails here, so
the map a contributor reads stays the package they check out.
"""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dpsklearn"


def _listed_modules():
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(?:dpsklearn/)?([\w/]+\.py)` \|", text, flags=re.M)
    return set(rows)


def _package_modules():
    return {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if "__pycache__" not in path.parts
    }


def test_every_module_has_a_row():
    missing = sorted(_package_modules() - _listed_modules())
    assert not missing, f"modules without a row in CONTRIBUTING.md: {missing}"


def test_every_row_is_a_module():
    stale = sorted(_listed_modules() - _package_modules())
    assert not stale, f"rows of CONTRIBUTING.md naming no module: {stale}"
