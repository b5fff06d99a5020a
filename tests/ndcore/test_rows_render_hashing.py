"""ndval.core.rows (the where filter), ndval.core.render (Markdown/HTML tables) and ndval.core.hashing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ndval.core import render, rows
from ndval.core.hashing import first_byte_of_sha256, sha256_bytes, sha256_file, sha256_text

TABLE = [{"id": "a", "kind": "x", "v": 1}, {"id": "b", "kind": "y", "v": 2}, {"id": "c", "kind": "x", "v": 3}]


def test_where_selects_by_value_and_by_list() -> None:
    assert [r["id"] for r in rows.select(TABLE, {"kind": "x"})] == ["a", "c"]
    assert [r["id"] for r in rows.select(TABLE, {"kind": ["x", "y"], "v": [2, 3]})] == ["b", "c"]
    assert rows.select(TABLE, {}) == TABLE
    assert rows.select(TABLE, {"kind": "z"}) == []


def test_where_on_a_missing_column_is_an_error_naming_it() -> None:
    with pytest.raises(rows.RowFilterError, match="'knd' not in the rows"):
        rows.select(TABLE, {"knd": "x"})
    with pytest.raises(rows.RowFilterError, match="'extra'"):
        rows.select([*TABLE, {"id": "d"}], {"kind": "x", "extra": 1})


def test_markdown_table_escapes_pipes_and_newlines() -> None:
    md = render.markdown_table(["a", "b"], [[1, "x|y"], [None, "two\nlines"]])
    assert md.splitlines() == ["| a | b |", "|---|---|", "| 1 | x\\|y |", "| — | two lines |"]


def test_html_table_escapes_and_marks_status_cells() -> None:
    out = render.html_table(["h<1>"], [["<b>&"]], classed=True)
    assert out == ('<table><thead><tr><th>h&lt;1&gt;</th></tr></thead><tbody><tr>'
                   '<td class="&lt;b&gt;&amp;">&lt;b&gt;&amp;</td></tr></tbody></table>')


def test_document_renders_the_same_blocks_in_both_formats() -> None:
    doc = [render.Section("S", ["p <1>", render.Table(["h"], [["PASS"]]), render.Table(["e"], []),
                                render.Details("more", [render.Table(["k"], [["v"]])]),
                                render.Image("plot", b"\x89PNG", "p.png")])]
    md = render.document_markdown("T", doc, "img")
    html = render.document_html("T", doc, css="td{}", classed=True)
    assert "## S" in md and "| PASS |" in md and "(none)" in md and "![plot](img/p.png)" in md
    assert "<details>" in md and "<summary>more</summary>" in md
    assert "<h2 id=\"s\">S</h2>" in html and "<p>p &lt;1&gt;</p>" in html and '<td class="PASS">PASS</td>' in html
    assert "<p>(none)</p>" in html and "<summary>more</summary><table>" in html
    assert "data:image/png;base64,iVBORw==" in html and "<style>td{}</style>" in html


def test_hashes_match_hashlib(tmp_path: Path) -> None:
    f = tmp_path / "f.bin"
    data = bytes(range(256)) * 9000  # 2.3 MB: three 1 MiB read chunks
    f.write_bytes(data)
    assert sha256_file(f) == hashlib.sha256(data).hexdigest() == sha256_bytes(data)
    assert sha256_text("é") == hashlib.sha256("é".encode()).hexdigest()
    assert first_byte_of_sha256("case_1") == hashlib.sha256(b"case_1").digest()[0]
