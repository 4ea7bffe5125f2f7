"""The README's Python blocks are there to be run.

``tests/test_readme_fresh_env.py`` (slow; ``.ci/run`` runs it) runs the
README's set-up commands in a new environment, then every
```` ```python ```` block verbatim, checking what each prints against the
```` ```text ```` block that follows it. This quick check only makes sure
there are blocks for it to run, each followed by the output it promises.
"""

from __future__ import annotations

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"```python\n(.*?)```(?:\n+```text\n(.*?)```)?", re.DOTALL)


def test_the_readme_has_python_blocks_with_their_output():
    blocks = _BLOCK.findall(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 2
    assert all(expected.strip() for _code, expected in blocks)
