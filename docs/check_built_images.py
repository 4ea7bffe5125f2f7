"""Check that the built HTML shows every picture it should (run by .ci/run).

After ``sphinx-build -b html docs docs/_build/html``:

* every ``<img src=...>`` in every page resolves to a file in the build;
* every PNG the benchmark scripts wrote into ``docs/benchmarks/`` is shown on
  some page (the benchmark results page shows them all);
* the gallery examples ran: each ``docs/examples/plot_*.py`` produced at least
  one figure that a page shows.

Usage::

    python docs/check_built_images.py [docs/_build/html]
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

DOCS = Path(__file__).resolve().parent
_IMG = re.compile(r"<img\b[^>]*\bsrc=\"([^\"]+)\"", re.IGNORECASE)


def shown_images(build):
    """Map each image file in the build to the pages that show it."""
    shown, broken = {}, []
    for page in sorted(build.rglob("*.html")):
        for src in _IMG.findall(page.read_text(encoding="utf-8", errors="replace")):
            parts = urlsplit(src)
            if parts.scheme or src.startswith("data:"):
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if target.is_file():
                shown.setdefault(target.name, []).append(page.relative_to(build))
            else:
                broken.append(f"{page.relative_to(build)}: {src}")
    return shown, broken


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    build = Path(argv[0]) if argv else DOCS / "_build" / "html"
    shown, problems = shown_images(build)
    problems = [f"broken image {item}" for item in problems]
    benchmark_images = sorted((DOCS / "benchmarks").glob("*.png"))
    for image in benchmark_images:
        if image.name not in shown:
            problems.append(f"benchmark image {image.name} is on no page")
    examples = sorted((DOCS / "examples").glob("plot_*.py"))
    for example in examples:
        prefix = f"sphx_glr_{example.stem}_"
        if not any(n.startswith(prefix) and "thumb" not in n for n in shown):
            problems.append(f"gallery example {example.name} shows no figure")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print(
        f"images ok: {len(shown)} shown, {len(benchmark_images)} benchmark "
        f"picture(s), {len(examples)} gallery example(s) with figures"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
