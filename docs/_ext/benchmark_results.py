"""Show the benchmark scripts' results (docs/benchmarks/*.md, *.png) in the docs.

The scripts in ``benchmarks/`` write a Markdown table and, where they draw
one, a PNG into ``docs/benchmarks/``. Two directives put them on a page:

``.. benchmark-table:: benchmarks/name.md``
    The Markdown file converted to reStructuredText (headings become
    rubrics, pipe tables become list-tables). With ``:optional:``, a missing
    file shows nothing (the result appears once the script has run).
``.. benchmark-figures:: benchmarks/pattern*.png``
    One figure per matching image, in name order; nothing when none match.
``.. benchmark-results:: benchmarks``
    Every result in the folder: each Markdown file as a section (its first
    heading is the section title), followed by the images whose names start
    with the file's name, then any images left over.

Both are paths relative to the documentation's source directory.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_CODE = re.compile(r"(?<!`)`([^`]+)`(?!`)")


def _plain(text):
    # A bare "|" would start a reStructuredText substitution reference.
    text = text.replace("\\|", "|").replace("|", "\\|")
    return _LINK.sub(r"`\1 <\2>`__", text)


def _inline(text):
    """Markdown inline markup to reStructuredText (code spans and links)."""
    parts = []
    last = 0
    # Code spans first, so that link syntax inside code is left alone.
    for match in _CODE.finditer(text):
        parts.append(_plain(text[last : match.start()]))
        parts.append(f"``{match.group(1).replace(chr(92) + '|', '|')}``")
        last = match.end()
    parts.append(_plain(text[last:]))
    return "".join(parts)


def _cells(line):
    """The cells of a Markdown table row; ``\\|`` is a literal pipe."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip()[1:-1])]


def markdown_to_rst(markdown, title_underline=None):
    """Convert the small Markdown subset the benchmark scripts write.

    Headings become rubrics, except the first level-1 heading, which becomes
    a section title underlined with ``title_underline`` when one is given.
    """
    out = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            # A fenced block (a script's literal output): a literal block.
            i += 1
            out += ["", "::", ""]
            while i < len(lines) and not lines[i].strip().startswith("```"):
                out.append("   " + lines[i] if lines[i].strip() else "")
                i += 1
            out.append("")
            i += 1  # the closing fence
        elif stripped.startswith("#"):
            text = _inline(stripped.lstrip("#").strip())
            if title_underline and stripped.startswith("# "):
                out += ["", text, title_underline * max(len(text), 4), ""]
                title_underline = None
            else:
                out += ["", f".. rubric:: {text}", ""]
            i += 1
        elif stripped.startswith("|"):
            block = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                block.append(lines[i])
                i += 1
            rows = [_cells(row) for row in block]
            has_rule = len(rows) > 1 and all(
                re.fullmatch(r":?-+:?", cell) for cell in rows[1]
            )
            header, body = (rows[0], rows[2:]) if has_rule else (None, rows)
            out += ["", ".. list-table::", "   :class: benchmark-table"]
            if header is not None:
                out.append("   :header-rows: 1")
            out.append("")
            for row in ([header] if header is not None else []) + body:
                for j, cell in enumerate(row):
                    bullet = "   * - " if j == 0 else "     - "
                    out.append(bullet + (_inline(cell) or r"\ "))
            out.append("")
        else:
            out.append(_inline(line))
            i += 1
    return out


def _parse(directive, lines):
    """Parse generated reStructuredText lines into nodes at the directive's place."""
    container = nodes.container()
    source = directive.get_source_info()[0]
    content = StringList(lines, source=source)
    nested_parse_with_titles(directive.state, content, container)
    return container.children


class BenchmarkTable(SphinxDirective):
    required_arguments = 1
    option_spec = {"optional": directives.flag}

    def run(self):
        relative = self.arguments[0]
        path = Path(self.env.srcdir) / relative
        if not path.exists():
            if "optional" in self.options:
                return []
            raise self.error(f"benchmark result {relative} does not exist")
        self.env.note_dependency(str(path))
        rst = markdown_to_rst(path.read_text(encoding="utf-8"))
        return _parse(self, rst)


def _figure_lines(path, srcdir):
    relative = path.relative_to(srcdir).as_posix()
    return [
        f".. figure:: /{relative}",
        "   :width: 100%",
        f"   :alt: {path.stem.replace('_', ' ')}",
        "",
        f"   ``{relative}``",
        "",
    ]


class BenchmarkFigures(SphinxDirective):
    required_arguments = 1

    def run(self):
        srcdir = Path(self.env.srcdir)
        lines = []
        for path in sorted(srcdir.glob(self.arguments[0])):
            self.env.note_dependency(str(path))
            lines += _figure_lines(path, srcdir)
        return _parse(self, lines) if lines else []


class BenchmarkResults(SphinxDirective):
    required_arguments = 1

    def run(self):
        srcdir = Path(self.env.srcdir)
        folder = srcdir / self.arguments[0]
        # Every file in the folder can change the page, added ones included.
        self.env.note_dependency(str(folder))
        images = sorted(folder.glob("*.png"))
        lines = []
        for table in sorted(folder.glob("*.md")):
            self.env.note_dependency(str(table))
            lines += markdown_to_rst(table.read_text(encoding="utf-8"), "-")
            lines.append("")
            for image in [p for p in images if p.stem.startswith(table.stem)]:
                self.env.note_dependency(str(image))
                lines += _figure_lines(image, srcdir)
                images.remove(image)
        if images:
            lines += ["", "Other figures", "-------------", ""]
            for image in images:
                self.env.note_dependency(str(image))
                lines += _figure_lines(image, srcdir)
        return _parse(self, lines) if lines else []


def setup(app):
    app.add_directive("benchmark-table", BenchmarkTable)
    app.add_directive("benchmark-figures", BenchmarkFigures)
    app.add_directive("benchmark-results", BenchmarkResults)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
