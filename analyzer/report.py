"""Renderers of an :class:`analyzer.analysis.Analysis`: JSON (stable), Markdown, self-contained HTML.

Rendering is separate from analysis and reads only ``Analysis.to_dict()``. The HTML page has no scripts and
no external resources: tables plus two inline SVG pictures per scope (candidate scores against the trigger
line; the time breakdown of the scope's wall time).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from analyzer import confidence
from analyzer.advisor import render as advisor_render
from ndval.core import atomic, render, strictjson

#: time-breakdown segments: (label, colour); values come from the scope's indicators (µs).
SEGMENTS: tuple[tuple[str, str], ...] = (
    ("compute", "#4f7cff"), ("exposed communication", "#f2994a"), ("other device work", "#9b59b6"),
    ("device idle", "#c8ccd4"),
)
KIND_COLOURS: dict[str, str] = {"host": "#9b59b6", "compute": "#4f7cff", "communication": "#f2994a", "copy": "#27ae60"}


def write_report(path: Path, text: str) -> None:
    """Write a rendered report atomically (temp file in the same folder, then ``os.replace``), so an
    interrupted run never leaves a half-written report where the previous one was."""
    atomic.write_text(path, text)


def to_json(analysis: Any) -> str:
    """Stable JSON text (sorted keys, 2-space indent)."""
    return strictjson.dumps(analysis.to_dict(), indent=2, sort_keys=True, default=str) + "\n"


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(v)


def _md_cluster_comm(c: dict[str, Any]) -> list[str]:
    """Slowest ranks, slowest links and per-rank wait vs transfer (Markdown lines)."""
    out = ["Slowest ranks: " + ", ".join(f"{r['rank']} ({r['step_us']} µs/step)" for r in c["slowest_ranks"]), ""]
    if c["slowest_links"]:
        out += ["Slowest links (lowest bandwidth):", "",
                _md_table(["link", "transport", "size MB", "time ms", "GB/s"],
                          [[x["link"], x["transport"], x["size_mb"], x["time_ms"], x["bandwidth_gbps"]]
                           for x in c["slowest_links"]]), ""]
    if c["comm_split"]:
        out += ["Communication time per rank, wait vs transfer (µs):", "",
                _md_table(["rank", "elapse", "transfer", "wait", "idle", "wait %", "source"],
                          [[x["rank"], x["elapse_us"], x["transfer_us"], x["wait_us"], x["idle_us"], x["wait_pct"],
                            x["source"]] for x in c["comm_split"]]), ""]
    if c["comm_note"]:
        out += [f"Communication detail: {c['comm_note']}", ""]
    return out


def shares_text(s: dict[str, float]) -> str:
    """The device activity of a Kineto rank in HTA's terms (one line)."""
    return (f"device activity (Holistic Trace Analysis' temporal breakdown, default window): device span "
            f"{s['gpu_span_us']:,.1f} µs — idle {s['idle_pct']:.2f} %, compute {s['compute_pct']:.2f} %, "
            f"non-compute {s['non_compute_pct']:.2f} %")


def comm_group_rows(cg: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Headers and rows of the communication-by-group table (one row per group, mean over steps)."""
    rows = []
    for g in cg["groups"]:
        exp, tot = list(g["exposed_s_per_step"].values()), list(g["comm_s_per_step"].values())
        rows.append([g["name"] or g["group"], g["dimension"] or "unattributed", g["attributed_by"] or "—",
                     ", ".join(map(str, g["ranks"])) if g["ranks"] else "—",
                     sum(exp) / len(exp) if exp else None, sum(tot) / len(tot) if tot else None])
    return ["group", "dimension", "attributed by", "ranks", "exposed s/step", "communication s/step"], rows


def _md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    return render.markdown_table(headers, rows, _fmt)


def breakdown_us(ind: dict[str, Any]) -> dict[str, float] | None:
    """Scope wall time split into :data:`SEGMENTS` (µs): compute, exposed comm, other device work, idle."""
    v = {k: ind[k]["value"] for k in ("wall_us", "device_busy_us", "compute_us", "comm_exposed_us")}
    if v["wall_us"] is None or v["device_busy_us"] is None:
        return None
    compute, exposed = v["compute_us"] or 0.0, v["comm_exposed_us"] or 0.0
    other = max(0.0, v["device_busy_us"] - compute - exposed)
    idle = max(0.0, v["wall_us"] - v["device_busy_us"])
    return dict(zip([s[0] for s in SEGMENTS], (compute, exposed, other, idle), strict=True))


# ----------------------------------------------------------------------------------------------- Markdown


def _verdict_tail(v: dict[str, Any]) -> str:
    """`` — score s, sub-type t`` after the label; a scope that is not evaluable names its reasons instead."""
    if not v.get("evaluable", True):
        return " — no score: " + "; ".join(v["not_evaluable_reasons"])
    return f" — score {_fmt(v['score'], 1)}" + (f", sub-type {v['subtype']}" if v["subtype"] else "")


def _scope_md(name: str, sc: dict[str, Any]) -> list[str]:
    v = sc["verdict"]
    out = [f"### Scope `{name}`" + (f" (read as {sc['phase']})" if sc["phase"] and sc["phase"] != name else ""), "",
           f"**Verdict: {v['label']}**" + _verdict_tail(v), "", v["summary"], ""]
    out.append(_md_table(["candidate", "score", "triggered", "sub-type", "gates not reached"],
                         [[c["kind"], c["score"], c["triggered"], c["subtype"], "; ".join(c["not_reached"]) or "—"]
                          for c in v["candidates"]]))
    for k, why in v["excluded"].items():
        out.append(f"\n- `{k}` excluded: {why}")
    for c in v["candidates"]:
        out += ["", f"#### Evidence — {c['kind']}", ""]
        out.append(_md_table(["metric", "value", "unit", "threshold", "passed", "comparison", "source", "basis"],
                             [[e["metric"], e["value"], e["unit"],
                               None if e["threshold_id"] is None else f"{e['threshold_id']} {e['relation']} {e['threshold']:g}",
                               e["passed"], e["comparison"], e["source"], e["basis"] or "—"] for e in c["evidence"]]))
    if sc["hypotheses"]:
        out += ["", "#### Root-cause hypotheses", ""]
        for h in sc["hypotheses"]:
            out.append(f"- **{h['id']}** — {h['mechanism']} *Framework:* {h['framework_behaviour']} "
                       f"*Triggers:* {'; '.join(h['triggers'])}. *Check:* {' '.join(h['checks'])}")
    if sc["recommendations"]:
        out += ["", "#### Recommendations", ""]
        out.append(_md_table(["id", "priority", "priority score", "expected gain %", "range %", "confidence", "version check",
                              "phases"],
                             [[r["id"], r["priority"], r["priority_score"], r["expected_gain_pct"],
                               None if not r["expected_gain"] else f"{r['expected_gain']['low_pct']:.1f}–{r['expected_gain']['high_pct']:.1f}",
                               None if not r["expected_gain"] else r["expected_gain"]["confidence"],
                               r["needs_version_confirmation"], ", ".join(r["applicable_phases"])]
                              for r in sc["recommendations"]]))
        for r in sc["recommendations"]:
            g = r["expected_gain"]
            out.append(f"\n- **{r['id']}** — {r['title']}. Actions: "
                       + "; ".join(f"[{a['kind']}] {a['text']}" for a in r["actions"])
                       + f" Validation: {r['validation']}. Risk: {r['risk']}."
                       + (f" Gain basis: {g['basis']}; assumption: {g['assumption']}." if g else " Gain: not derivable from this dataset.")
                       + (f" *{r['version_note']}*" if r["version_note"] else ""))
        cg = sc["combined_gain"]
        out += ["", f"Combined gain: conservative {cg['conservative_pct']:.1f} %, optimistic {cg['optimistic_pct']:.1f} % "
                f"(cap {cg['cap_pct']:g} %) — {cg['note']}."]
    out += ["", "#### Indicators", ""]
    out.append(_md_table(["indicator", "value", "unit", "definition", "source / reason"],
                         [[i["id"], i["value"], i["unit"], i["definition"],
                           i["source"] if i["available"] else f"unavailable: {i['reason']}"]
                          for i in sc["indicators"]["indicators"].values()]))
    return [*out, ""]


def to_markdown(analysis: Any) -> str:
    """Human report in Markdown."""
    d = analysis.to_dict()
    v = d["verdict"]
    out = ["# ndval analysis", "", f"- input: `{d['path']}` ({d['source_format']})",
           f"- verdict (rank {v['rank']}, overall): **{v['label']}**, "
           + (f"score {_fmt(v['score'], 1)}" if v.get("evaluable", True) else "; ".join(v["not_evaluable_reasons"])),
           f"- thresholds: {d['thresholds_origin']}; phase override: {d['phase_override'] or 'none'}", ""]
    if d["cluster"]:
        c = d["cluster"]
        out += ["## Cluster summary", "", f"Slowest rank by step time: **{c['slowest_rank_by_step_time']}**; "
                f"flag when max exceeds mean by > {c['spread_gate_pct']:g} % ({c['source']}).", ""]
        out.append(_md_table(["metric", "slowest rank", "max µs", "mean µs", "min µs", "spread %", "flagged"],
                             [[s["metric"], s["slowest_rank"], s["max_us"], s["mean_us"], s["min_us"], s["spread_pct"],
                               s["flagged"]] for s in c["spreads"]]))
        out.append("")
        out += _md_cluster_comm(c)
    for r in d["ranks"]:
        p = r["phases"]
        out += [f"## Rank {r['rank']}", "", f"- path: `{r['path']}`; totals source: {r['totals_source']}",
                f"- steps: {len(p['steps'])} ({p['step_source']}); phases: {p['method']}, confidence {p['confidence']} — {p['reason']}",
                f"- graph mode: {'DETECTED — ' + r['graph_mode']['reason'] if r['graph_mode']['detected'] else 'not detected'}",
                "- sync-like ops in the capture: " + (", ".join(f"{k} × {n}" for k, n in r["capture_sync_counts"].items()) or "none")]
        if r.get("hta_window_shares"):
            out.append(f"- {shares_text(r['hta_window_shares'])}")
        if r["hta_window_overlap_pct"] is not None:
            out.append(f"- comm–compute overlap over Holistic Trace Analysis' default window (last ProfilerStep "
                       f"dropped): {r['hta_window_overlap_pct']:.2f} %")
        out.append("")
        if r.get("comm_by_group"):
            cg = r["comm_by_group"]
            out += ["", f"Communication by parallel group ({cg['source']}; {cg['method']}):", "",
                    _md_table(*comm_group_rows(cg)), ""]
        if r["step_breakdown_us"]:
            cols = list(r["step_breakdown_us"][0])
            out += [f"Per-step time breakdown ({r['breakdown_source']}; µs unless the column says %):", ""]
            out += [_md_table(cols, [[row[c] for c in cols] for row in r["step_breakdown_us"]]), ""]
        for name, sc in r["scopes"].items():
            out += _scope_md(name, sc)
        out += advisor_render.markdown(r)
    out += ["## Warnings", ""] + ([f"- {w}" for w in d["warnings"]] or ["none"])
    steps = confidence.markdown_lines(d["ranks"][0]["how_to_raise_confidence"]) if d["ranks"] else []
    out += ["", f"### How to raise confidence (seed §8, rank {d['ranks'][0]['rank']}, best value first)", "", *steps] \
        if steps else []
    out += ["", "## Thresholds in effect", ""]
    out.append(_md_table(["id", "value", "relation", "unit", "source", "rationale"],
                         [[k, t["value"], t["relation"], t["unit"], t["source"], t["rationale"]]
                          for k, t in d["thresholds"].items()]))
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------------- HTML


def score_svg(candidates: Sequence[dict[str, Any]], trigger: float) -> str:
    """Horizontal bars of candidate scores (0–100) with the trigger line."""
    w, row, left = 420, 26, 110
    h = row * len(candidates) + 30
    scale = (w - left - 40) / 100.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" aria-label="candidate scores">']
    for i, c in enumerate(candidates):
        y = 10 + i * row
        bw = max(0.0, float(c["score"])) * scale
        parts.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end" font-size="12">{html.escape(c["kind"])}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{bw:.1f}" height="{row - 8}" fill="{KIND_COLOURS.get(c["kind"], "#888")}"/>')
        parts.append(f'<text x="{left + bw + 4:.1f}" y="{y + 15}" font-size="11">{float(c["score"]):.1f}</text>')
    tx = left + trigger * scale
    parts.append(f'<line x1="{tx:.1f}" y1="4" x2="{tx:.1f}" y2="{h - 14}" stroke="#cf222e" stroke-dasharray="4,3"/>')
    parts.append(f'<text x="{tx:.1f}" y="{h - 2}" font-size="10" text-anchor="middle" fill="#cf222e">trigger {trigger:g}</text>')
    return "".join(parts) + "</svg>"


def breakdown_svg(seg_us: dict[str, float]) -> str:
    """One stacked bar of the scope's wall time with a legend (µs and %)."""
    total = sum(seg_us.values()) or 1.0
    w, left = 520, 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{40 + 18 * len(SEGMENTS)}" role="img" aria-label="time breakdown">']
    x = float(left)
    for (label, colour), val in zip(SEGMENTS, seg_us.values(), strict=True):
        bw = (w - 2 * left) * val / total
        parts.append(f'<rect x="{x:.1f}" y="8" width="{bw:.1f}" height="22" fill="{colour}"><title>{label}</title></rect>')
        x += bw
    for i, ((label, colour), val) in enumerate(zip(SEGMENTS, seg_us.values(), strict=True)):
        y = 44 + 18 * i
        parts.append(f'<rect x="{left}" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{left + 18}" y="{y}" font-size="12">{label}: {val:,.1f} µs ({100 * val / total:.1f} %)</text>')
    return "".join(parts) + "</svg>"


def _h_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    return render.html_table(headers, rows, _fmt)


def _scope_html(name: str, sc: dict[str, Any], trigger: float) -> str:
    v = sc["verdict"]
    seg = breakdown_us(sc["indicators"]["indicators"])
    parts = [f"<h3>Scope {html.escape(name)}</h3>",
             f"<p class='verdict'><b>{html.escape(v['label'])}</b>{html.escape(_verdict_tail(v))}</p><p>{html.escape(v['summary'])}</p>",
             "<div class='charts'>", score_svg(v["candidates"], trigger),
             breakdown_svg(seg) if seg else "<p>time breakdown unavailable (no device events)</p>", "</div>"]
    for c in v["candidates"]:
        parts.append(f"<h4>Evidence — {html.escape(c['kind'])} (score {c['score']:.1f})</h4>")
        parts.append(_h_table(["metric", "value", "unit", "threshold", "passed", "comparison", "source", "basis"],
                              [[e["metric"], e["value"], e["unit"],
                                None if e["threshold_id"] is None else f"{e['threshold_id']} {e['relation']} {e['threshold']:g}",
                                e["passed"], e["comparison"], e["source"], e["basis"]] for e in c["evidence"]]))
    if sc["hypotheses"]:
        parts.append("<h4>Root-cause hypotheses</h4><ul>" + "".join(
            f"<li><b>{html.escape(h['id'])}</b>: {html.escape(h['mechanism'])} <i>Triggers:</i> "
            f"{html.escape('; '.join(h['triggers']))}</li>" for h in sc["hypotheses"]) + "</ul>")
    if sc["recommendations"]:
        parts.append("<h4>Recommendations</h4>")
        parts.append(_h_table(["id", "title", "priority score", "expected gain %", "basis", "version check", "phases"],
                              [[r["id"], r["title"], r["priority_score"], r["expected_gain_pct"],
                                r["expected_gain"]["basis"] if r["expected_gain"] else "not derivable",
                                r["version_note"] or "—", ", ".join(r["applicable_phases"])]
                               for r in sc["recommendations"]]))
        cg = sc["combined_gain"]
        parts.append(f"<p>Combined gain: conservative {cg['conservative_pct']:.1f} %, optimistic "
                     f"{cg['optimistic_pct']:.1f} % (cap {cg['cap_pct']:g} %). {html.escape(cg['note'])}.</p>")
    parts.append("<h4>Indicators</h4>")
    parts.append(_h_table(["indicator", "value", "unit", "definition", "source / reason"],
                          [[i["id"], i["value"], i["unit"], i["definition"],
                            i["source"] if i["available"] else f"unavailable: {i['reason']}"]
                           for i in sc["indicators"]["indicators"].values()]))
    return "".join(parts)


CSS = ("body{font-family:system-ui,sans-serif;margin:24px;color:#1f2328}table{border-collapse:collapse;margin:6px 0 14px;"
       "font-size:12px}td,th{border:1px solid #d0d7de;padding:3px 6px;text-align:left;vertical-align:top}"
       "th{background:#f6f8fa}.charts{display:flex;gap:24px;flex-wrap:wrap}.verdict{font-size:16px}"
       ".warn{color:#9a6700}")


def to_html(analysis: Any) -> str:
    """Self-contained HTML page (no scripts, no external resources)."""
    d = analysis.to_dict()
    trigger = float(d["thresholds"]["triggerScore"]["value"])
    v = d["verdict"]
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>ndval analysis</title>",
             f"<style>{CSS}</style></head><body><h1>ndval analysis</h1>",
             f"<p>Input <code>{html.escape(d['path'])}</code> ({html.escape(d['source_format'])}). "
             f"Verdict (rank {v['rank']}, overall): <b>{html.escape(v['label'])}</b>, score {v['score']:.1f}.</p>"]
    if d["cluster"]:
        c = d["cluster"]
        parts.append(f"<h2>Cluster summary</h2><p>Slowest rank by step time: <b>{c['slowest_rank_by_step_time']}</b></p>")
        parts.append(_h_table(["metric", "slowest rank", "max µs", "mean µs", "spread %", "flagged"],
                              [[s["metric"], s["slowest_rank"], s["max_us"], s["mean_us"], s["spread_pct"], s["flagged"]]
                               for s in c["spreads"]]))
    for r in d["ranks"]:
        p = r["phases"]
        parts.append(f"<h2>Rank {r['rank']}</h2><p>Steps: {len(p['steps'])} ({html.escape(p['step_source'])}); phases: "
                     f"{html.escape(p['method'])}, confidence {html.escape(p['confidence'])} — {html.escape(p['reason'])}</p>")
        if r["graph_mode"]["detected"]:
            parts.append(f"<p class='warn'>Graph mode detected: {html.escape(r['graph_mode']['reason'])}</p>")
        if r.get("hta_window_shares"):
            parts.append(f"<p>{html.escape(shares_text(r['hta_window_shares']))}</p>")
        if r["hta_window_overlap_pct"] is not None:
            parts.append(f"<p>Comm–compute overlap over Holistic Trace Analysis' default window (last ProfilerStep "
                         f"dropped): {r['hta_window_overlap_pct']:.2f} %</p>")
        if r.get("comm_by_group"):
            cg = r["comm_by_group"]
            parts.append(f"<h3>Communication by parallel group</h3><p>{html.escape(cg['source'])}; "
                         f"{html.escape(cg['method'])}</p>" + _h_table(*comm_group_rows(cg)))
        if r["step_breakdown_us"]:
            cols = list(r["step_breakdown_us"][0])
            parts.append(f"<h3>Per-step time breakdown</h3><p>{html.escape(r['breakdown_source'])}</p>")
            parts.append(_h_table(cols, [[row[c] for c in cols] for row in r["step_breakdown_us"]]))
        for name, sc in r["scopes"].items():
            parts.append(_scope_html(name, sc, trigger))
        parts.append(advisor_render.html_section(r))
    parts.append("<h2>Warnings</h2><ul>" + "".join(f"<li class='warn'>{html.escape(w)}</li>" for w in d["warnings"]) + "</ul>")
    steps = [s for s in (d["ranks"][0]["how_to_raise_confidence"] if d["ranks"] else []) if s["applies"]]
    if steps:
        parts.append("<h3>How to raise confidence (seed §8, best value first)</h3><ol>" + "".join(
            f"<li value='{s['rank']}'>{html.escape(s['action'])} — {html.escape(s['settles'])} "
            f"({html.escape(s['reason'])})</li>" for s in steps) + "</ol>")
    parts.append("<h2>Thresholds in effect</h2>" + _h_table(
        ["id", "value", "relation", "unit", "source", "rationale"],
        [[k, t["value"], t["relation"], t["unit"], t["source"], t["rationale"]] for k, t in d["thresholds"].items()]))
    return "".join(parts) + "</body></html>\n"
