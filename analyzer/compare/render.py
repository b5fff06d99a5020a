"""Markdown and HTML of a :class:`Comparison`."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from analyzer.compare.comparison import Comparison
from analyzer.compare.verdicts import threshold_rule
from ndval.core import render

# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.3f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    return str(v)


SIDE_KEYS = ("label", "source_format", "event_count", "window_us", "step_count", "bottleneck", "totals_source",
             "phase_override", "sampled", "device_names", "world_size", "ranks")
_OPERATOR_HEADERS = ["operator", "before µs", "after µs", "delta µs", "before n", "after n", "before mean µs",
                     "after mean µs"]


def _operator_rows(rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    return [[r["name"], r["before_total_us"], r["after_total_us"], r["delta_us"], r["before_count"],
             r["after_count"], r["before_mean_us"], r["after_mean_us"]] for r in rows]


def tables(d: Mapping[str, Any]) -> dict[str, render.Table]:
    """The comparison's tables, one model for both renderers (same columns in Markdown and HTML)."""
    before, after = d["sides"]["before"], d["sides"]["after"]
    return {
        "sides": render.Table(["", "before", "after"], [[k, before.get(k), after.get(k)] for k in SIDE_KEYS]),
        "metrics": render.Table(
            ["metric", "direction", "before", "after", "abs change", "rel change %", "improvement %", "status"],
            [[r["id"], r["direction"], r["before"], r["after"], r["abs_change"], r["rel_change_pct"],
              r["improvement_pct"], r["status"]] for r in d["metrics"]]),
        "categories": render.Table(
            ["category", "before µs", "after µs", "before %", "after %", "change µs"],
            [[r["category"], r["before_us"], r["after_us"], r["before_share_pct"], r["after_share_pct"],
              r["abs_change_us"]] for r in d["categories"]]),
        "saved": render.Table(_OPERATOR_HEADERS, _operator_rows(d["operators"]["saved"])),
        "added": render.Table(_OPERATOR_HEADERS, _operator_rows(d["operators"]["added"])),
        "bottleneck": render.Table(["kind", "before", "after", "delta"],
                                   [[s["kind"], s["before"], s["after"], s["delta"]] for s in d["bottleneck"]["scores"]]),
        "recommendations": render.Table(
            ["id", "verdict", "primary metric", "observed %", "expected gain %", "threshold %", "still listed after"],
            [[r["id"], r["verdict"], r["primary_metric"], r["observed_improvement_pct"], r["expected_gain_pct"],
              r["threshold_pct"], r["still_listed_after"]] for r in d["recommendations"]]),
        "findings": render.Table(["finding", "phase", "subject", "verdict", "before share %", "after share %",
                                  "change pt"],
                                 [[r["id"], r.get("phase", "overall"), r.get("subject", "—"), r["verdict"],
                                   r["before_share_pct"], r["after_share_pct"], r["change_pt"]]
                                  for r in d.get("findings", [])]),
    }


#: section titles and what an empty table says instead
OPERATOR_SECTIONS = (("saved", "Operators that saved the most time"), ("added", "Operators that added the most time"))
EMPTY = {"saved": "none", "added": "none", "recommendations": "none in the before analysis",
         "findings": "no advisor finding on either side"}


def _md(t: dict[str, render.Table], key: str) -> str:
    table = t[key]
    if not table.rows and key in EMPTY:
        return EMPTY[key]
    return render.markdown_table(table.headers, table.rows, _fmt)


def render_markdown(comparison: Comparison) -> str:
    """Human report of a comparison in Markdown, one section per seed §7.4 output section."""
    d = comparison.to_dict()
    t = tables(d)
    md = render.md_text  # every string from the profiles: HTML-escaped
    out = ["# Before/after comparison", "", f"**{md(d['headline']['sentence'])}**", ""]
    comp = d["comparability"]
    out += ["## Comparability", "",
            f"- comparable: **{str(comp['comparable']).lower()}** (level `{comp['level']}`)"]
    out += [f"- {md(r)}" for r in comp["reasons"]] or ["- no check fired"]
    out += ["", "## Sides", "", _md(t, "sides"), "", "## Metrics", "", _md(t, "metrics"),
            "", "## Categories (device time)", "", _md(t, "categories")]
    for key, title in OPERATOR_SECTIONS:
        out += ["", f"## {title}", "", _md(t, key)]
    b = d["bottleneck"]
    out += ["", "## Bottleneck", "",
            f"{md(b['before'] or 'none')} -> {md(b['after'] or 'none')} ({'changed' if b['changed'] else 'unchanged'})", ""]
    out += [_md(t, "bottleneck"), "", "## Recommendations", "", _md(t, "recommendations")]
    out += ["", "## Advisor findings (resolved = gone after the change)", "", _md(t, "findings")]
    out += ["", f"Threshold rule: `{threshold_rule(comparison.rules)}` (seed §7.2).", "", "## Warnings", ""]
    out += [f"- {md(w)}" for w in d["warnings"]] or ["none"]
    return "\n".join(out) + "\n"


def _html(t: dict[str, render.Table], key: str) -> str:
    table = t[key]
    if not table.rows and key in EMPTY:
        return f"<p>{html.escape(EMPTY[key])}</p>"
    return render.html_table(table.headers, table.rows, _fmt)


def render_html(comparison: Comparison) -> str:
    """Self-contained HTML page of a comparison: the Markdown sections and the same tables, no scripts."""
    d = comparison.to_dict()
    t = tables(d)
    comp = d["comparability"]
    colour = {"comparable": "#1a7f37", "comparable_with_caveats": "#9a6700", "not_comparable": "#cf222e"}
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>ndval compare</title><style>"
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;"
        "text-align:right}td:first-child,th:first-child{text-align:left}</style></head><body>",
        "<h1>Before/after comparison</h1>",
        f"<p><strong>{html.escape(d['headline']['sentence'])}</strong></p>",
        f"<h2>Comparability</h2><p style='color:{colour[comp['level']]}'>comparable: "
        f"<strong>{str(comp['comparable']).lower()}</strong> ({html.escape(comp['level'])})</p><ul>"
        + "".join(f"<li>{html.escape(r)}</li>" for r in comp["reasons"]) + "</ul>",
        "<h2>Sides</h2>" + _html(t, "sides"),
        "<h2>Metrics</h2>" + _html(t, "metrics"),
        "<h2>Categories (device time)</h2>" + _html(t, "categories"),
    ]
    parts += [f"<h2>{html.escape(title)}</h2>" + _html(t, key) for key, title in OPERATOR_SECTIONS]
    b = d["bottleneck"]
    parts.append(f"<h2>Bottleneck</h2><p>{html.escape(str(b['before']))} → {html.escape(str(b['after']))}</p>"
                 + _html(t, "bottleneck"))
    parts.append("<h2>Recommendations</h2>" + _html(t, "recommendations"))
    parts.append("<h2>Advisor findings (resolved = gone after the change)</h2>" + _html(t, "findings"))
    parts.append("<h2>Warnings</h2><ul>" + "".join(f"<li>{html.escape(w)}</li>" for w in d["warnings"]) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)
