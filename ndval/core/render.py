"""Tables and simple documents rendered twice: compact Markdown and HTML through Jinja2 templates.

A table is headers plus rows of cells already formatted as text (the caller owns number formats).
Markdown cells escape ``|`` and fold newlines; HTML is autoescaped by the templates in
``ndval/core/templates``. A :class:`Section` holds paragraphs, :class:`Table`, :class:`Image` and
:class:`Details` blocks, so one document model gives the Markdown file and a self-contained HTML
page (images embedded as base64 PNG).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
from markupsafe import Markup, escape

from ndval.core import cache

Formatter = Callable[[Any], str]


def plain(value: Any) -> str:
    """Default cell text: ``str(value)``, ``—`` for None."""
    return "—" if value is None else str(value)


@cache.memoize("core.jinja_environment", bound=1, key="()", holds="the templates' jinja2 environment")
def _env() -> jinja2.Environment:
    loader = jinja2.PackageLoader("ndval.core", "templates")
    return jinja2.Environment(loader=loader, autoescape=True, keep_trailing_newline=False)


def md_text(text: Any) -> str:
    """``text`` safe inside Markdown: ``&``, ``<`` and ``>`` as HTML entities, so a name taken from a profile
    (``deviceProperties.name``, an event name) is shown as text and never becomes raw HTML in the rendered page."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _md_cell(text: str) -> str:
    return md_text(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], fmt: Formatter = plain) -> str:
    """A compact GitHub-flavoured Markdown table (cells not padded, so a changed value changes one
    line of a report diff); cells are formatted by ``fmt``."""
    lines = ["| " + " | ".join(_md_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_md_cell(fmt(c)) for c in row) + " |" for row in rows]
    return "\n".join(lines)



#: after these characters a long token (node id, path, checksum list) may wrap: words stay whole, never letter
#: by letter, and a table of long ids still fits the page
_BREAK_AFTER = re.compile(r"([/_:,=\]\[.;|)-])")
#: tokens shorter than this never get a break opportunity
_LONG_TOKEN = 12


def breakable(text: str) -> Markup:
    """``text`` HTML-escaped, with ``<wbr>`` after the separators of every token longer than ``_LONG_TOKEN``."""
    parts = []
    for token in re.split(r"(\s+)", text):
        if len(token) > _LONG_TOKEN and not token.isspace():
            parts.append(Markup("<wbr>").join(escape(p) for p in _BREAK_AFTER.sub("\\1\x00", token).split("\x00")))
        else:
            parts.append(escape(token))
    return Markup("").join(parts)


def html_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], fmt: Formatter = plain,
               classed: bool = False, break_long: bool = False) -> str:
    """An HTML table (template ``table.html.j2``); ``classed`` also puts each cell's text in its class
    attribute (so a stylesheet can colour PASS / FAIL cells); ``break_long`` gives long tokens break
    opportunities (:func:`breakable`)."""
    body = [[(fmt(c), breakable(fmt(c)) if break_long else fmt(c)) for c in row] for row in rows]
    return _env().get_template("table.html.j2").render(headers=list(headers), rows=body, classed=classed).strip()


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Any]]


@dataclass
class Image:
    title: str
    png: bytes
    filename: str


@dataclass
class Details:
    """A collapsed block (HTML ``<details>``; the same tag in Markdown), e.g. long per-row evidence."""

    summary: str
    blocks: list[str | Table] = field(default_factory=list)


Block = str | Table | Image | Details


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)


def _md_image(b: Image, image_dir: str | None) -> str:
    """A Markdown image: linked from ``image_dir``, or inline as a ``data:`` URI when there is no folder
    (the document goes to standard output)."""
    if image_dir is None:
        return f"![{b.title}](data:image/png;base64,{base64.b64encode(b.png).decode('ascii')})"
    return f"![{b.title}]({image_dir}/{b.filename})"


def _md_blocks(blocks: Sequence[Block], image_dir: str | None, fmt: Formatter) -> list[str]:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Table):
            out += [markdown_table(b.headers, b.rows, fmt) if b.rows else "(none)", ""]
        elif isinstance(b, Image):
            out += [_md_image(b, image_dir), ""]
        elif isinstance(b, Details):  # GitHub-flavoured Markdown renders the tag; blank lines around the table
            out += ["<details>", f"<summary>{escape(b.summary)}</summary>", "",
                    *_md_blocks(b.blocks, image_dir, fmt), "</details>", ""]
        else:
            out += [b, ""]
    return out


def anchor(title: str) -> str:
    """The anchor id of a section title (lowercase words joined by ``-``)."""
    return "-".join(re.findall(r"[a-z0-9]+", title.lower())) or "section"


def document_markdown(title: str, sections: Sequence[Section], image_dir: str | None,
                      fmt: Formatter = plain, toc: bool = False, lead: Sequence[str] = ()) -> str:
    """The document as Markdown; images are linked from ``image_dir`` (the caller writes the PNGs), inline
    when it is None. ``lead``: paragraphs under the title (a headline); ``toc``: a table of contents linking
    each section's anchor."""
    out = [f"# {title}", ""]
    for para in lead:
        out += [para, ""]
    if toc:
        out += ["Contents: " + " · ".join(f"[{s.title}](#{anchor(s.title)})" for s in sections), ""]
    for sec in sections:
        out += [f'<a id="{anchor(sec.title)}"></a>', "", f"## {sec.title}", ""] if toc else [f"## {sec.title}", ""]
        out += _md_blocks(sec.blocks, image_dir, fmt)
    return "\n".join(out)


def _html_block(b: Block, fmt: Formatter, classed: bool, break_long: bool = False) -> Markup:
    if isinstance(b, Table):
        return Markup(html_table(b.headers, b.rows, fmt, classed, break_long) if b.rows else "<p>(none)</p>")
    if isinstance(b, Image):
        data = base64.b64encode(b.png).decode("ascii")
        return Markup('<figure><img alt="{0}" src="data:image/png;base64,{1}"><figcaption>{0}</figcaption>'
                      "</figure>").format(b.title, data)
    if isinstance(b, Details):
        inner = Markup("").join(_html_block(x, fmt, classed, break_long) for x in b.blocks)
        return Markup("<details><summary>{}</summary>{}</details>").format(b.summary, inner)
    return Markup("<p>{}</p>").format(b)


def document_html(title: str, sections: Sequence[Section], css: str, fmt: Formatter = plain,
                  classed: bool = False, toc: bool = False, lead: Sequence[str] = (), break_long: bool = False) -> str:
    """The document as one self-contained HTML page (template ``document.html.j2``); ``lead`` and ``toc`` as in
    :func:`document_markdown` (every section heading carries its anchor id either way)."""
    rendered = [{"title": s.title, "id": anchor(s.title),
                 "blocks": [_html_block(b, fmt, classed, break_long) for b in s.blocks]} for s in sections]
    return _env().get_template("document.html.j2").render(title=title, css=Markup(css), sections=rendered, toc=toc,
                                                           lead=list(lead))
