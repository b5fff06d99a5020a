"""Markdown and HTML of a comparison come from one table model: same tables, same columns, same cells
(synthetic pair from ``compare_synthetic``)."""

from __future__ import annotations

import re
from html import unescape

import analyzer.compare as cmp
from analyzer.compare import render as cmp_render
from tests.analyzer.compare_synthetic import synthetic_pair


def _md_headers(md: str) -> list[list[str]]:
    lines = md.splitlines()
    return [[c.strip() for c in lines[i].strip("|").split(" | ")] for i in range(len(lines) - 1)
            if lines[i].startswith("| ") and lines[i + 1].startswith("|---")]


def _html_headers(page: str) -> list[list[str]]:
    return [[unescape(h) for h in re.findall(r"<th>(.*?)</th>", head)]
            for head in re.findall(r"<thead><tr>(.*?)</tr></thead>", page)]


def test_both_renderings_show_every_table_with_every_column() -> None:
    result = cmp.compare_sides(*synthetic_pair())
    model = cmp_render.tables(result.to_dict())
    expected = [t.headers for t in model.values() if t.rows]
    md, page = cmp.render_markdown(result), cmp.render_html(result)
    assert _md_headers(md) == [[h.strip() for h in hs] for hs in expected]
    assert _html_headers(page) == expected
    assert "abs change" in _html_headers(page)[1] and "before n" in _html_headers(page)[3]


def test_both_renderings_show_the_same_cells() -> None:
    result = cmp.compare_sides(*synthetic_pair())
    md, page = cmp.render_markdown(result), cmp.render_html(result)
    md_cells = [c.strip() for line in md.splitlines() if line.startswith("| ") for c in line.strip("|").split(" | ")]
    html_cells = [unescape(c) for c in re.findall(r"<t[dh](?: [^>]*)?>(.*?)</t[dh]>", page)]
    assert [c for c in md_cells if c] == [c.strip() for c in html_cells if c.strip()]
