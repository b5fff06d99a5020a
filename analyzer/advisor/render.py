"""The advisor findings and HTA's breakdowns of one rank (``RankAnalysis.to_dict()``) as Markdown lines and HTML.

Called by :mod:`analyzer.report` once per rank; reads only plain data. Long cells (shape lists) are cut to
:data:`CELL_CHARS` characters in the rendered tables (the JSON keeps them whole).
"""

from __future__ import annotations

import html
from typing import Any

from ndval.core import render

CELL_CHARS = 80


def _cell(v: Any) -> Any:
    if isinstance(v, str) and len(v) > CELL_CHARS:
        return v[: CELL_CHARS - 1] + "…"
    return v


def _finding_rows(findings: list[dict[str, Any]]) -> list[list[Any]]:
    return [[f.get("scope", "overall"), f["severity"], f["id"], f["summary"], f["share_pct"],
             None if not f["expected_gain"] else f"{f['expected_gain']['low_pct']:.1f}–{f['expected_gain']['high_pct']:.1f}"]
            for f in findings]


_HEAD = ["phase", "priority", "finding", "summary", "share of window %", "expected gain %"]


def _phase_lines(adv: dict[str, Any]) -> list[str]:
    """Per phase scope: its findings (ranked by share of the phase) and the rules without one."""
    out: list[str] = []
    for name, ph in (adv.get("phases") or {}).items():
        out += [f"#### Phase `{name}` ({ph['windows']} window(s), {ph['window_us']} µs): findings ranked by share of "
                "the phase", ""]
        if ph["findings"]:
            out += [render.markdown_table(_HEAD, _finding_rows(ph["findings"])), ""]
            for f in ph["findings"]:
                out += [f"`{f['id']}` in `{name}`: {f['summary']}", "",
                        render.markdown_table(f["columns"], [[_cell(v) for v in row] for row in f["rows"]]), ""]
        out += [f"Rules without a finding in `{name}`: " + "; ".join(
            f"`{k}` {v}" for k, v in ph["rules_without_finding"].items()), ""]
    return out


def markdown(rank: dict[str, Any]) -> list[str]:
    """Markdown lines: the ranked findings, each with evidence, recommendation, verification and risk; the rules
    without a finding; HTA's breakdowns (Kineto)."""
    adv = rank.get("advisor")
    out: list[str] = []
    if adv:
        out += ["### Advisor findings (beside the verdict; not part of the bottleneck scores)", "",
                f"Ranked by {adv['ranking']}.", ""]
        if adv["findings"]:
            out += [render.markdown_table(_HEAD, _finding_rows(adv["findings"])), ""]
        for f in adv["findings"]:
            r = f["rule"]
            out += [f"#### {f['id']} — {f['title']}", "", f["summary"], "",
                    render.markdown_table(f["columns"], [[_cell(v) for v in row] for row in f["rows"]]), "",
                    f"- recommendation: {r['recommendation']}", f"- verify: {r['verification']}", f"- risk: {r['risk']}",
                    f"- inputs: {'; '.join(r['inputs'])}; thresholds: {', '.join(r['thresholds'])}",
                    f"- source: {r['source']}; phases: {', '.join(r['applicable_phases'])}", ""]
        out += ["Rules without a finding: " + "; ".join(f"`{k}` {v}" for k, v in adv["rules_without_finding"].items()), ""]
        out += _phase_lines(adv)
    return out + _hta_markdown(rank.get("hta_breakdowns"))


def _hta_markdown(hb: dict[str, Any] | None) -> list[str]:
    if not hb:
        return []
    out = [f"### Holistic Trace Analysis breakdowns ({hb['definitions']})", ""]
    for label in ("hta", "capture"):
        w = hb[label]
        out += [f"Window `{label}`: {hb['windows'][label]}; GPU span {w['gpu_span_us']} µs.", "",
                render.markdown_table(["stream", "host wait µs", "host wait %", "kernel wait µs", "kernel wait %",
                                       "other µs", "other %"],
                                      [[s["stream"], s["host_wait_us"], s["host_wait_pct"], s["kernel_wait_us"],
                                        s["kernel_wait_pct"], s["other_us"], s["other_pct"]] for s in w["idle_by_stream"]]),
                ""]
        if w["launch"]:
            lc = w["launch"]
            d = lc["launch_delay_us"]
            out += [f"Launches {lc['launches']}; short kernels (GPU < CPU call) {lc['short_kernels']} = "
                    f"{lc['short_kernel_us']} µs ({lc['short_kernel_share_pct']} % of the span); runtime outliers "
                    f"{lc['runtime_outliers']}; launch-delay outliers {lc['launch_delay_outliers']}; delay µs p50 "
                    f"{d['p50']}, p90 {d['p90']}, p99 {d['p99']}, max {d['max']}.", ""]
        out += [render.markdown_table(["kernel type", "µs", "%"],
                                      [[k["kernel_type"], k["time_us"], k["pct"]] for k in w["kernel_types"]]), ""]
    return out


def _phase_html(name: str, ph: dict[str, Any]) -> str:
    head = (f"<h4>Phase {html.escape(name)} ({ph['windows']} window(s), {ph['window_us']} µs): findings ranked by "
            "share of the phase</h4>")
    evidence = "".join(f"<p>{html.escape(f['id'])} in {html.escape(name)}: {html.escape(f['summary'])}</p>"
                       + render.html_table(f["columns"], [[_cell(v) for v in row] for row in f["rows"]])
                       for f in ph["findings"])
    quiet = html.escape("; ".join(f"{k} {v}" for k, v in ph["rules_without_finding"].items()))
    return head + render.html_table(_HEAD, _finding_rows(ph["findings"])) + evidence + f"<p>Rules without a finding: {quiet}</p>"


def html_section(rank: dict[str, Any]) -> str:
    """The same content as :func:`markdown`, as HTML."""
    adv, parts = rank.get("advisor"), []
    if adv:
        parts.append("<h3>Advisor findings (beside the verdict)</h3>"
                     f"<p>Ranked by {html.escape(adv['ranking'])}.</p>")
        parts.append(render.html_table(_HEAD, _finding_rows(adv["findings"])))
        for f in adv["findings"]:
            r = f["rule"]
            parts.append(f"<h4>{html.escape(f['id'])} — {html.escape(f['title'])}</h4><p>{html.escape(f['summary'])}</p>"
                         + render.html_table(f["columns"], [[_cell(v) for v in row] for row in f["rows"]])
                         + "<ul>" + "".join(f"<li>{html.escape(k)}: {html.escape(str(r[k]))}</li>"
                                            for k in ("recommendation", "verification", "risk", "source")) + "</ul>")
        parts.append("<p>Rules without a finding: " + html.escape("; ".join(
            f"{k} {v}" for k, v in adv["rules_without_finding"].items())) + "</p>")
        parts += [_phase_html(name, ph) for name, ph in (adv.get("phases") or {}).items()]
    hb = rank.get("hta_breakdowns")
    if hb:
        parts.append(f"<h3>Holistic Trace Analysis breakdowns</h3><p>{html.escape(hb['definitions'])}</p>")
        for label in ("hta", "capture"):
            w = hb[label]
            parts.append(f"<p>Window <code>{label}</code>: {html.escape(hb['windows'][label])}</p>" + render.html_table(
                ["stream", "host wait %", "kernel wait %", "other %", "idle µs"],
                [[s["stream"], s["host_wait_pct"], s["kernel_wait_pct"], s["other_pct"], s["idle_us"]]
                 for s in w["idle_by_stream"]])
                + render.html_table(["kernel type", "µs", "%"], [[k["kernel_type"], k["time_us"], k["pct"]]
                                                                 for k in w["kernel_types"]]))
    return "".join(parts)
