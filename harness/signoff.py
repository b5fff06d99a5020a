"""Release sign-off report (spec §6): Markdown + self-contained HTML rendered from ``summary.json``.

One document model (sections of paragraphs, tables and images) renders to both formats; the HTML
embeds the plots as base64 PNG so it travels as one file. Sections: identity and provenance,
environment, scope, gate table, seed acceptance criteria, statistics, plots, results, regressions,
golden drift, waivers and known issues, broken input, artifacts with checksums, reproduction,
approval.
"""

from __future__ import annotations

import base64
import hashlib
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import atomic
from harness.plots import band_of, estimate_vs_measured_png

MAX_PLOTS = 24


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
class Section:
    title: str
    blocks: list[str | Table | Image] = field(default_factory=list)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if v is None:
        return "—"
    return str(v)


def _status_mark(status: str) -> str:
    return {"pass": "PASS", "fail": "FAIL", "waived": "WAIVED", "not evaluable": "NOT EVALUABLE"}.get(status, status.upper())


def _correlations(summary: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for c in summary["cases"]:
        for a in c["assertions"]:
            if a["type"] in ("pearson_r_gt", "spearman_rho_gt", "mape_le"):
                st = a.get("stats", {})
                ci = st.get("ci95")
                rows.append([c["case_id"] + (f"[{c['point']}]" if c["point"] else ""), a["id"], a.get("criterion") or "",
                             a["target"], _fmt(a.get("observed")), st.get("n"), f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "—",
                             _fmt(st.get("p_value")), a["expected"], "pass" if a["passed"] else ("waived" if a["waived"] else "fail")])
    return rows


def _plots(summary: dict[str, Any]) -> list[Image]:
    """One estimate-vs-measured plot per (case, ratio_within assertion), rows of all its points merged."""
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in summary["cases"]:
        for a in c["assertions"]:
            if a["type"] == "ratio_within" and a.get("rows"):
                g = groups.setdefault((c["file"], c["case_id"], a["id"]), {"a": a, "rows": [], "n_pass": 0, "n": 0})
                g["rows"] += a["rows"]
                g["n"] += len(a["rows"])
                g["n_pass"] += sum(1 for r in a["rows"] if r.get("passed"))
    out = []
    for (_, case_id, aid), g in sorted(groups.items()):
        if len(out) >= MAX_PLOTS:
            break
        a = g["a"]
        png = estimate_vs_measured_png(g["rows"], f"{case_id} / {aid}: {a['target']}", band_of(a))
        if png:
            safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{case_id}-{aid}")
            out.append(Image(f"{case_id} / {aid} — {a['target']}: {g['n_pass']}/{g['n']} rows within {a['expected']}",
                             png, f"{safe}.png"))
    return out


def _artifacts(reports: Path) -> list[list[Any]]:
    rows = []
    for name in ("summary.json", "junit.xml"):
        p = reports / name
        if p.is_file():
            rows.append([name, p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest()])
    allure = reports / "allure-results"
    if allure.is_dir():
        files = sorted(allure.iterdir())
        digest = hashlib.sha256(b"".join(f.name.encode() for f in files)).hexdigest()
        rows.append([f"allure-results/ ({len(files)} files)", sum(f.stat().st_size for f in files), f"names: {digest}"])
    return rows


def build(summary: dict[str, Any], reports: Path) -> tuple[str, list[Section]]:
    """Title and sections of the sign-off report."""
    prov, gate, counts = summary["provenance"], summary["gate"], summary["counts"]
    sha = prov["git"]["sha"]
    title = f"ndval release sign-off — {sha[:12]} — gate {gate['verdict']}"
    secs = [Section("1. Release identity and provenance", [Table(["item", "value"], [
        ["git commit", sha], ["working tree dirty (tracked files)", prov["git"]["dirty"]],
        ["run started (UTC)", summary["run"].get("started")], ["command", " ".join(summary["run"].get("argv", []))],
        ["golden mode", summary["run"].get("golden_mode")], ["gate verdict", f"{gate['verdict']} (exit {gate['exit_code']})"]])])]
    secs.append(Section("2. Environment", [Table(["component", "version"],
                        [["python", prov["python"]], ["platform", prov["platform"]]] +
                        [[k, v or "not installed"] for k, v in prov["packages"].items()])]))
    kinds: dict[str, int] = {}
    for c in summary["cases"]:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    secs.append(Section("3. Scope", [
        f"{counts['items']} case items from {len(summary['case_files'])} case files; {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['waived']} waived, {counts['error']} broken, {counts['skipped']} skipped; "
        f"{counts['collection_errors']} collection error(s).",
        Table(["kind", "items"], [[k, v] for k, v in sorted(kinds.items())]),
        Table(["case file", "sha256"], [[k, v] for k, v in sorted(summary["case_files"].items())])]))
    secs.append(Section("4. Gate", [Table(["rule", "threshold", "actual", "status", "items"],
                        [[r["rule"], r["threshold"], r["actual"], _status_mark(r["status"]), ", ".join(r["items"][:8])]
                         for r in gate["rules"]])]))
    secs.append(Section("5. Seed acceptance criteria (sapp-nd validation issue §7)", [
        "Status per criterion: FAIL = evidence fails unwaived; WAIVED = fails with an unexpired waiver (a known "
        "finding, shown not hidden); PASS; NOT EVALUABLE = no evidence could be computed (reason given).",
        Table(["criterion", "what", "threshold", "status", "reason and data"],
              [[c["id"], c["title"], c["threshold"], _status_mark(c["status"]), c["reason"][:900]] for c in summary["criteria"]])]))
    stats = [[s["group"], s["type"], s["n"], _fmt(s["min"]), _fmt(s["median"]), _fmt(s["max"]), _fmt(s["mean"])]
             for s in summary["statistics"]]
    secs.append(Section("6. Per-criterion statistics", [
        "Row-wise checks (ratio = estimate/measured; rel_error = signed (estimate − measured)/measured): "
        "the signed distribution shows systematic under- or over-estimation that a band alone hides.",
        Table(["criterion / kind", "check", "n", "min", "median", "max", "mean"], stats),
        "Correlations and MAPE (with n, 95 % CI, p-value):",
        Table(["case", "assertion", "criterion", "target", "observed", "n", "95% CI", "p", "rule", "status"], _correlations(summary))]))
    secs.append(Section("7. Plots (estimate vs measured)", list(_plots(summary))))
    secs.append(Section("8. Results by case", [Table(["case", "kind", "severity", "status", "failing / waived assertions", "message"],
                        [[c["nodeid"].split("::", 1)[-1], c["kind"], c["severity"], c["status"].upper(),
                          ", ".join(a["id"] for a in c["assertions"] if not a["passed"]), (c.get("message") or "")[:200]]
                         for c in summary["cases"]])]))
    reg = summary.get("regressions")
    secs.append(Section("9. Regressions against the baseline", [
        "No baseline summary was given (--baseline); regressions not evaluated." if reg is None else
        (Table(["case", "assertion", "was", "now"], [[r["nodeid"], r["assertion"], r["was"], r["now"]] for r in reg]) if reg
         else "None: everything that passed in the baseline still passes.")]))
    drift = summary["golden"]["drift"]
    secs.append(Section("10. Golden drift", [
        Table(["case", "status", "golden", "review files"], [[d["nodeid"], d["status"], d["path"], ", ".join(d["artifacts"])] for d in drift])
        if drift else "No golden drift.",
        ("Unused golden files (listed, never deleted): " + ", ".join(summary["golden"]["unused"])) if summary["golden"]["unused"]
        else "No unused golden files."]))
    secs.append(Section("11. Waivers and known issues", [Table(["case", "status", "reason", "owner", "expires", "issue"],
                        [[w["nodeid"], w["status"], w["reason"], w["owner"], w["expires"], w["issue"]] for w in summary["waivers"]])]))
    errs = summary["collection_errors"] + [{"nodeid": c["nodeid"], "file": c["file"], "line": c["line"], "field": "-",
                                            "message": c["message"]} for c in summary["cases"] if c["status"] == "error"]
    secs.append(Section("12. Broken input", [Table(["node", "file:line", "field", "message"],
                        [[e["nodeid"], f"{e['file']}:{e['line']}", e.get("field"), (e["message"] or "")[:300]] for e in errs])
                        if errs else "None."]))
    secs.append(Section("13. Artifacts", [Table(["artifact", "bytes", "sha256"], _artifacts(reports))]))
    secs.append(Section("14. How to reproduce", [f"git checkout {sha} && make validate   "
                        "(equivalently: .venv/bin/ndval validate; reports under reports/)"]))
    secs.append(Section("15. Approval", [Table(["role", "name", "decision (approve / reject)", "date", "signature"],
                        [["validation lead", "", "", "", ""], ["estimator owner", "", "", "", ""], ["release manager", "", "", "", ""]])]))
    return title, secs


def _md_cell(v: Any) -> str:
    return _fmt(v).replace("|", "\\|").replace("\n", " ")


def render_markdown(title: str, sections: list[Section], image_dir: str) -> str:
    out = [f"# {title}", ""]
    for sec in sections:
        out += [f"## {sec.title}", ""]
        for b in sec.blocks:
            if isinstance(b, Table):
                if not b.rows:
                    out += ["(none)", ""]
                    continue
                out.append("| " + " | ".join(b.headers) + " |")
                out.append("|" + "---|" * len(b.headers))
                out += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in b.rows]
                out.append("")
            elif isinstance(b, Image):
                out += [f"![{b.title}]({image_dir}/{b.filename})", ""]
            else:
                out += [b, ""]
    return "\n".join(out)


_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1300px}table{border-collapse:collapse;margin:.5em 0 1.2em}"
        "td,th{border:1px solid #ccc;padding:3px 6px;font-size:12px;vertical-align:top;text-align:left}th{background:#f2f2f2}"
        ".PASS{background:#dff5df}.FAIL{background:#fbdada}.WAIVED{background:#fff1c6}.NOT.EVALUABLE,.BROKEN{background:#e8e8f8}"
        "figure{display:inline-block;margin:6px;max-width:520px}figcaption{font-size:11px}")


def render_html(title: str, sections: list[Section]) -> str:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    for sec in sections:
        parts.append(f"<h2>{html.escape(sec.title)}</h2>")
        for b in sec.blocks:
            if isinstance(b, Table):
                if not b.rows:
                    parts.append("<p>(none)</p>")
                    continue
                head = "".join(f"<th>{html.escape(h)}</th>" for h in b.headers)
                body = "".join("<tr>" + "".join(f"<td class='{html.escape(_fmt(v))}'>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
                               for row in b.rows)
                parts.append(f"<table><tr>{head}</tr>{body}</table>")
            elif isinstance(b, Image):
                data = base64.b64encode(b.png).decode("ascii")
                parts.append(f"<figure><img alt='{html.escape(b.title)}' src='data:image/png;base64,{data}'>"
                             f"<figcaption>{html.escape(b.title)}</figcaption></figure>")
            else:
                parts.append(f"<p>{html.escape(b)}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write(summary: dict[str, Any], md_path: Path, reports: Path) -> tuple[Path, Path]:
    """Write ``md_path`` (+ PNGs in ``<stem>_plots/``) and the self-contained ``.html`` beside it."""
    title, sections = build(summary, reports)
    img_dir = md_path.parent / f"{md_path.stem}_plots"
    for sec in sections:
        for b in sec.blocks:
            if isinstance(b, Image):
                atomic.write_bytes(img_dir / b.filename, b.png)
    atomic.write_text(md_path, render_markdown(title, sections, img_dir.name))
    html_path = md_path.with_suffix(".html")
    atomic.write_text(html_path, render_html(title, sections))
    return md_path, html_path
