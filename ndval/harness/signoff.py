"""Release sign-off report (spec §6): Markdown + self-contained HTML rendered from ``summary.json``.

One document model (sections of paragraphs, tables, images and collapsed ``<details>``) renders to
both formats; the HTML embeds the plots as base64 PNG so it travels as one file. Sections: identity
and provenance, environment, scope, gate table, seed acceptance criteria, statistics, calibration
steps (fitted value, fit and held-out figures), plots, results by case (every assertion with target,
observed, expected, margin and status; per-row evidence collapsed), regressions, golden drift,
waivers and known issues, broken input, artifacts with checksums, reproduction, approval.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ndval.core import atomic
from ndval.core.hashing import sha256_bytes, sha256_file
from ndval.core.render import Details, Image, Section, Table, document_html, document_markdown
from ndval.harness.criteria import WHOSE_EVALUATED, WHOSE_RECORDED
from ndval.harness.plots import axis_label, band_of, columns_of, estimate_vs_measured_png
from ndval.harness.release import GATE_FILE
from ndval.harness.results import EVALUATED

MAX_PLOTS = 24
#: characters of an observed value / message shown in the results table (the summary has the rest)
MAX_CELL = 80
MAX_MESSAGE = 220
#: evidence columns shown first (what the row is) and last (its verdict); the rest alphabetically
_EVIDENCE_FIRST = ("row", "group", "part", "field", "n", "estimate", "measured", "value", "r")
_EVIDENCE_LAST = ("used", "passed", "note")


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
                             _fmt(st.get("p_value")), a["expected"], _whose(a), _assertion_status(a)])
    return rows


def _plots(summary: dict[str, Any]) -> list[Image]:
    """One estimate-vs-measured plot per (case, ratio_within assertion), rows of all its points merged."""
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in summary["cases"]:
        for a in c["assertions"]:
            if a["type"] == "ratio_within" and a.get("rows"):
                g = groups.setdefault((c["file"], c["case_id"], a["id"]), {"a": a, "rows": [], "n_pass": 0, "n": 0})
                # a row outside the band under a waiver is drawn as waived, not as a plain failure
                g["rows"] += [{**r, "waived": bool(a.get("waived")) and not r.get("passed")} for r in a["rows"]]
                g["n"] += len(a["rows"])
                g["n_pass"] += sum(1 for r in a["rows"] if r.get("passed"))
    out: list[Image] = []
    for (_, case_id, aid), g in sorted(groups.items()):
        if len(out) >= MAX_PLOTS:
            break
        a = g["a"]
        est, meas = columns_of(a["target"])
        png = estimate_vs_measured_png(g["rows"], f"{case_id} / {aid}: {a['target']}", band_of(a),
                                       axis_label("measured", meas), axis_label("estimate", est))
        if png:
            safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{case_id}-{aid}")
            out.append(Image(f"{case_id} / {aid} — {a['target']}: {g['n_pass']}/{g['n']} rows within {a['expected']}",
                             png, f"{safe}.png"))
    return out + _step_time_plots(summary)[:MAX_PLOTS]  # the step-time cases' plots: their own budget


def _step_time_plots(summary: dict[str, Any]) -> list[Image]:
    """One plot per step-time case (a ``mape_le`` over its result table): estimated against measured step time,
    the MAPE limit drawn as the band (1 − m)·x .. (1 + m)·x; rows beyond the table kept in the summary are
    counted in the caption."""
    out: list[Image] = []
    for c in summary["cases"]:
        for a in c["assertions"]:
            if a["type"] != "mape_le" or not c.get("table"):
                continue
            est, meas = columns_of(a["target"])
            limit = float(str(a["expected"]).split("<=")[-1].strip() or "nan") if "<=" in str(a["expected"]) else None
            rows = [{"row": r.get("config", ""), "measured": r.get(meas), "estimate": _estimate(r, est),
                     "passed": limit is None or _within(r.get(meas), _estimate(r, est), limit),
                     "waived": c["status"] == "waived"} for r in c["table"]]
            band = (1 - limit, 1 + limit) if limit is not None else None
            png = estimate_vs_measured_png(rows, f"{c['case_id']} / {a['id']}: {a['target']}", band,
                                           axis_label("measured", meas), axis_label("estimate", est),
                                           f"±{limit:g} (the MAPE limit, per row)" if limit is not None else None)
            if png:
                n = a.get("stats", {}).get("n") or len(rows)
                shown = f"{len(rows)} of {n} rows" if n > len(rows) else f"{len(rows)} rows"
                out.append(Image(f"{c['case_id']} / {a['id']} — {a['target']} {a['expected']}: observed "
                                 f"{_fmt(a.get('observed'))}, {shown}", png,
                                 "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{c['case_id']}-{a['id']}")
                                 + ".png"))
    return out


def _estimate(row: dict[str, Any], column: str) -> Any:
    """The estimate column of a step-time row; ``total_ms`` from ``TOTAL_s`` when the table keeps seconds."""
    if column in row:
        return row[column]
    if column == "total_ms" and isinstance(row.get("TOTAL_s"), int | float):
        return row["TOTAL_s"] * 1000.0
    return None


def _within(measured: Any, estimate: Any, limit: float) -> bool:
    if not isinstance(measured, int | float) or not isinstance(estimate, int | float) or not measured:
        return False
    return abs(estimate - measured) / abs(measured) <= limit


def _short(v: Any, limit: int = MAX_CELL) -> str:
    text = _fmt(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _margin(v: Any) -> str:
    return f"{v:+.4g}" if isinstance(v, int | float) and not isinstance(v, bool) else "—"


def _assertion_status(a: dict[str, Any]) -> str:
    """PASS / FAIL / WAIVED for a number evaluated now; a recorded number only MEETS or MISSES a rule."""
    if not a.get("evaluable", True):
        return "NOT EVALUABLE"
    if a.get("provenance", EVALUATED) != EVALUATED:
        return "RECORDED: MEETS RULE" if a["passed"] else "RECORDED: MISSES RULE" + (" (WAIVED)" if a.get("waived") else "")
    return "PASS" if a["passed"] else ("WAIVED" if a.get("waived") else "FAIL")


def _whose(a: dict[str, Any]) -> str:
    """Whose number an assertion judged: the subject's, evaluated now, or another tool's, recorded."""
    producer = a.get("producer", "ndval")
    return f"{producer} ({WHOSE_RECORDED})" if a.get("provenance", EVALUATED) != EVALUATED else f"{producer} ({WHOSE_EVALUATED})"


def _case_name(c: dict[str, Any]) -> str:
    return str(c["nodeid"]).split("::", 1)[-1]


def _results_by_case(summary: dict[str, Any]) -> list[str | Table | Details]:
    """Every assertion of every case with its numbers; per-row evidence collapsed below."""
    rows: list[list[Any]] = []
    evidence: list[Details] = []
    for c in summary["cases"]:
        name = _case_name(c)
        if not c["assertions"]:
            rows.append([name, c["kind"], c["status"].upper(), "—", "—", "—", "—", "—", "—", "—", "—",
                         _short(c.get("message") or "", MAX_MESSAGE)])
            continue
        for a in c["assertions"]:
            rows.append([name, c["kind"], c["status"].upper(), a["id"], a.get("criterion") or "", _short(a["target"]),
                         _short(a.get("observed")), a["expected"], _margin(a.get("margin")), _whose(a), _assertion_status(a),
                         _short(a.get("message") or "", MAX_MESSAGE)])
            if len(a.get("rows") or []) > 1:
                evidence.append(_evidence(name, a))
    intro = ("One row per assertion: target, observed value, expected band or rule, margin (distance to the "
             "rule's edge; negative = outside), whose number it is and status: a number evaluated now passes or "
             "fails, a recorded number of another tool only meets or misses the rule (context, not evidence). Per-row evidence (rows, groups, golden fields) is "
             "collapsed below each table; the full tables are in summary.json and the Allure attachments.")
    table = Table(["case", "kind", "case status", "assertion", "criterion", "target", "observed", "expected",
                   "margin", "whose number", "status", "detail"], rows)
    return [intro, table, *evidence]


def _evidence(case: str, a: dict[str, Any]) -> Details:
    """The evidence rows of one assertion as a collapsed table (naming columns first, verdict columns last)."""
    keys = {k for r in a["rows"] for k in r}
    first = [k for k in _EVIDENCE_FIRST if k in keys]
    last = [k for k in _EVIDENCE_LAST if k in keys]
    cols = first + sorted(keys - set(first) - set(last)) + last
    body = [[_short(r.get(k)) for k in cols] for r in a["rows"]]
    n_pass = sum(1 for r in a["rows"] if r.get("passed") is True)
    return Details(f"{case} / {a['id']}: {len(a['rows'])} evidence rows ({n_pass} meeting the rule), "
                   f"{_assertion_status(a)}", [Table(cols, body)])


def _host_cost(record: Any) -> str:
    """How a calibration step set the host cost per launch: measured on a profile, or the profile default."""
    if isinstance(record, dict):
        return (f"{record['value_us']:.1f} measured on {record['profile']} (p25 {record['p25_us']:.1f}, "
                f"p75 {record['p75_us']:.1f}, {record['intervals']} intervals; {record['method']})")
    return str(record or "profile default")


def _overlays(summary: dict[str, Any]) -> list[str | Table]:
    """Hardware overlays cases apply (``params.hardware_overlay_from``): file, hardware, values, source."""
    used = [(c, c["values"]["hardware_overlay"]) for c in summary["cases"]
            if (c.get("values") or {}).get("hardware_overlay")]
    text = [f"{_case_name(c)}: {o['file']} ({o.get('hardware') or 'any hardware'}) sets "
            + ", ".join(f"{k} = {v}" for k, v in o["values"].items()) + f" [{o.get('source') or 'no source line'}]"
            for c, o in used]
    return ["Hardware overlays (params.hardware_overlay_from; not fitted on the rows judged): " + "; ".join(text) + "."
            ] if text else []


def _calibration(summary: dict[str, Any]) -> list[str | Table]:
    """Declared calibration steps: the fitted knob (fit half) and the figures on both halves; the
    hardware overlays cases apply."""
    steps = [(c, c["values"]["calibration"]) for c in summary["cases"] if (c.get("values") or {}).get("calibration")]
    if not steps:
        return ["No case declares a calibration step (params.calibrate).", *_overlays(summary)]
    head = Table(["case", "fitted", "value", "fit rows", "held-out rows", "LOO MAPE % (fit half)", "method"],
                 [[_case_name(c), k["fitted"], f"{k['value']:.4f}", k["rows_fit"], k["rows_holdout"],
                   _fmt(k.get("loo_mape_pct_fit_half")), k["method"]] for c, k in steps])
    halves = []
    for c, k in steps:
        for label, key in (("fit half (fitted on)", "fit"), ("held-out half (judged)", "holdout"),
                           ("held-out half at peak (efficiency 1.0)", "holdout_at_peak")):
            acc = k.get(key) or {}
            halves.append([_case_name(c), label, acc.get("n"), _fmt(acc.get("spearman_pooled")),
                           f"{_fmt(acc.get('spearman_group_median'))} ({acc.get('groups')} groups)",
                           _fmt(acc.get("mape_pct")), _fmt(acc.get("median_ratio"))])
    by = "; ".join(f"{_case_name(c)}: groups by {', '.join(k.get('group_by') or []) or '—'}" for c, k in steps)
    host = [f"{_case_name(c)}: host µs per launch {_host_cost(k.get('host_launch_cost'))}" for c, k in steps]
    return ["At most one global knob is fitted, on the fit half only (estimator.experiments.calibrate); the case's "
            "assertions judge the held-out half. Figures below are estimator.experiments.calibrate's own report.",
            head, f"Within-group Spearman: groups with 3+ rows ({by}).",
            "Host cost per kernel launch (not fitted): " + "; ".join(host) + ".",
            Table(["case", "half", "n", "Spearman pooled", "median Spearman within groups", "MAPE %",
                   "median est/meas"], halves), *_overlays(summary)]


def _data_files(summary: dict[str, Any]) -> list[list[Any]]:
    """Each data file the cases read (path, source, SHA-256 as recorded in summary.json) and how many items read it."""
    files: dict[tuple[str, str, str], int] = {}
    for c in summary["cases"]:
        d = c.get("data") or {}
        if d.get("path"):
            key = (str(d["path"]), str(d.get("source", "-")), str(d.get("sha256", "-")))
            files[key] = files.get(key, 0) + 1
    return [[p, s, h, n] for (p, s, h), n in sorted(files.items())]


def _artifacts(reports: Path) -> list[list[Any]]:
    rows = []
    for name in ("summary.json", "junit.xml"):
        p = reports / name
        if p.is_file():
            rows.append([name, p.stat().st_size, sha256_file(p)])
    allure = reports / "allure-results"
    if allure.is_dir():
        files = sorted(allure.iterdir())
        digest = sha256_bytes(b"".join(f.name.encode() for f in files))
        rows.append([f"allure-results/ ({len(files)} files)", sum(f.stat().st_size for f in files), f"names: {digest}"])
    return rows


#: ndval's own release rules (its validation_cases/gate.yaml says the same; a summary without a release block
#: is ndval's, from before the block existed)
NDVAL_RELEASE = {"name": "ndval", "criteria_title": "Seed acceptance criteria (sapp-nd validation issue §7)",
                 "reproduce": "git checkout {sha} && make validate   (equivalently: .venv/bin/ndval validate; reports "
                              "under reports/)"}


def build(summary: dict[str, Any], reports: Path) -> tuple[str, list[Section]]:
    """Title and sections of the sign-off report."""
    prov, gate, counts = summary["provenance"], summary["gate"], summary["counts"]
    sha = prov["git"]["sha"]
    partial = summary["run"].get("partial")
    release = {**NDVAL_RELEASE, **(summary.get("release") or {})}  # a summary from before gate.yaml: ndval's
    name = release["name"]
    title = (f"{name} PARTIAL run — not a release sign-off — {sha[:12]} — gate {gate['verdict']}" if partial
             else f"{name} release sign-off — {sha[:12]} — gate {gate['verdict']}")
    banner = ([f"PARTIAL: this run covers part of the cases only ({partial}). It is not a release sign-off and "
               "never replaces one; run `ndval validate` without a selection for that."] if partial else [])
    secs = [Section("1. Release identity and provenance", [*banner, Table(["item", "value"], [
        ["git commit", sha], ["working tree dirty (changed tracked files or untracked cases/goldens)", prov["git"]["dirty"]],
        ["untracked cases/goldens in this run", ", ".join(prov["git"].get("untracked", [])[:20]) or "none"],
        ["run started (UTC)", summary["run"].get("started")], ["command", " ".join(summary["run"].get("argv", []))],
        ["subject under test", summary["run"].get("subject", "ndval")], ["golden mode", summary["run"].get("golden_mode")], ["gate verdict", f"{gate['verdict']} (exit {gate['exit_code']})"]])])]
    secs.append(Section("2. Environment", [Table(["component", "version"],
                        [["python", prov["python"]], ["platform", prov["platform"]]] +
                        [[k, v or "not installed"] for k, v in prov["packages"].items()])]))
    kinds: dict[str, int] = {}
    for c in summary["cases"]:
        kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
    secs.append(Section("3. Scope", [
        f"{counts['items']} case items from {len(summary['case_files'])} case files; {counts['passed']} passed, "
        f"{counts['failed']} failed, {counts['waived']} waived, {counts['error']} broken, {counts['skipped']} skipped, "
        f"{counts.get('not_evaluable', 0)} not evaluable ({len(summary.get('not_evaluable', []))} data rows missing a "
        "needed value); "
        f"{counts['collection_errors']} collection error(s).",
        Table(["kind", "items"], [[k, v] for k, v in sorted(kinds.items())]),
        Table(["not evaluable (node)", "row", "reason"],
              [[r["nodeid"], r["row"], r["reason"]] for r in summary.get("not_evaluable", [])]),
        Table(["case file", "sha256"], [[k, v] for k, v in sorted(summary["case_files"].items())]),
        Table(["data file", "source", "sha256", "cases"], _data_files(summary))]))
    secs.append(Section("4. Gate", [Table(["rule", "threshold", "actual", "status", "items"],
                        [[r["rule"], r["threshold"], r["actual"], _status_mark(r["status"]), ", ".join(r["items"][:8])]
                         for r in gate["rules"]])]))
    secs.append(Section(f"5. {release['criteria_title']}", [] if not summary["criteria"] else [
        "Only numbers evaluated in this run by the subject under test decide a criterion: FAIL = that evidence "
        "fails unwaived; WAIVED = it fails with an unexpired waiver (a known finding, shown not hidden); PASS = "
        "it passes; NOT EVALUABLE = nothing could be evaluated now (reason given). Numbers recorded from "
        "another tool (e.g. the reference tool's published correlations) are shown as context and never make "
        "a criterion PASS.",
        Table(["criterion", "what", "threshold", "status", "whose number", "evidence (evaluated now)",
               "context (recorded, not evidence)"],
              [[c["id"], c["title"], c["threshold"], _status_mark(c["status"]), c.get("whose", "—"), c["reason"],
                c.get("context") or "—"] for c in summary["criteria"]])]))
    if not summary["criteria"]:
        secs[-1].blocks.append(f"No acceptance criteria declared: the cases tree's {GATE_FILE} lists them "
                               "(criteria), and assertions point at them with `criterion: <id>`.")
    stats = [[s["group"], s["type"], s["n"], _fmt(s["min"]), _fmt(s["median"]), _fmt(s["max"]), _fmt(s["mean"])]
             for s in summary["statistics"]]
    secs.append(Section("6. Per-criterion statistics", [
        "Row-wise checks (ratio = estimate/measured; rel_error = signed (estimate − measured)/measured): "
        "the signed distribution shows systematic under- or over-estimation that a band alone hides.",
        Table(["criterion / kind", "check", "n", "min", "median", "max", "mean"], stats),
        "Correlations and MAPE (with n, 95 % CI, p-value):",
        Table(["case", "assertion", "criterion", "target", "observed", "n", "95% CI", "p", "rule", "whose number", "status"],
              _correlations(summary))]))
    secs.append(Section("7. Calibration steps (fitted on one half, judged on the other)", list(_calibration(summary))))
    secs.append(Section("8. Plots (estimate vs measured)", list(_plots(summary))))
    secs.append(Section("9. Results by case", list(_results_by_case(summary))))
    reg = summary.get("regressions")
    secs.append(Section("10. Regressions against the baseline", [
        "No baseline summary was given (--baseline); regressions not evaluated." if reg is None else
        (Table(["case", "assertion", "was", "now"], [[r["nodeid"], r["assertion"], r["was"], r["now"]] for r in reg]) if reg
         else "None: everything that passed in the baseline still passes.")]))
    drift = summary["golden"]["drift"]
    secs.append(Section("11. Golden drift", [
        Table(["case", "status", "golden", "review files"], [[d["nodeid"], d["status"], d["path"], ", ".join(d["artifacts"])] for d in drift])
        if drift else "No golden drift.",
        ("Unused golden files (listed, never deleted): " + ", ".join(summary["golden"]["unused"])) if summary["golden"]["unused"]
        else "No unused golden files."]))
    secs.append(Section("12. Waivers and known issues", [Table(["case", "status", "reason", "owner", "expires", "issue"],
                        [[w["nodeid"], w["status"], w["reason"], w["owner"], w["expires"], w["issue"]] for w in summary["waivers"]])]))
    errs = summary["collection_errors"] + [{"nodeid": c["nodeid"], "file": c["file"], "line": c["line"], "field": "-",
                                            "message": c["message"]} for c in summary["cases"] if c["status"] == "error"]
    secs.append(Section("13. Broken input", [Table(["node", "file:line", "field", "message"],
                        [[e["nodeid"], f"{e['file']}:{e['line']}", e.get("field"), (e["message"] or "")[:300]] for e in errs])
                        if errs else "None."]))
    secs.append(Section("14. Artifacts", [Table(["artifact", "bytes", "sha256"], _artifacts(reports))]))
    secs.append(Section("15. How to reproduce", [release["reproduce"].replace("{sha}", sha)]))
    secs.append(Section("16. Approval", [Table(["role", "name", "decision (approve / reject)", "date", "signature"],
                        [["validation lead", "", "", "", ""], ["estimator owner", "", "", "", ""], ["release manager", "", "", "", ""]])]))
    return title, secs


#: words stay whole (no letter-by-letter wrapping in narrow columns); long tokens (node ids, paths) wrap at the
#: break opportunities the renderer puts after their separators, so the page never scrolls sideways
_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1300px;overflow-wrap:break-word}"
        "table{border-collapse:collapse;margin:.5em 0 1.2em;max-width:100%}"
        "td,th{border:1px solid #ccc;padding:3px 6px;font-size:12px;vertical-align:top;text-align:left;"
        "overflow-wrap:normal;word-break:normal}th{background:#f2f2f2}"
        "img{max-width:100%;height:auto}.lead{font-size:15px;font-weight:600}"
        ".toc ol{columns:2;font-size:13px;margin:.3em 0 1em}"
        ".PASS{background:#dff5df}.FAIL{background:#fbdada}.WAIVED{background:#fff1c6}.NOT.EVALUABLE,.BROKEN{background:#e8e8f8}"
        "figure{display:inline-block;margin:6px;max-width:min(520px,100%)}figcaption{font-size:11px}"
        "details{margin:2px 0}summary{cursor:pointer;font-size:12px}")


def headline(summary: dict[str, Any]) -> str:
    """One sentence under the title: the verdict, the item counts, and the criteria by status, naming the waived
    and the not-evaluable ones (a PASS gate with a waived criterion says so)."""
    counts, gate = summary["counts"], summary["gate"]
    items = (f"{counts['items']} items: {counts['passed']} passed, {counts['failed']} failed, {counts['waived']} waived, "
             f"{counts.get('not_evaluable', 0)} not evaluable, {counts['error']} broken, {counts['skipped']} skipped")
    text = f"Gate {gate['verdict']} (exit {gate['exit_code']}). {items}."
    by: dict[str, list[str]] = {}
    for c in summary["criteria"]:
        by.setdefault(_status_mark(c["status"]), []).append(c["id"])
    if summary["criteria"]:
        parts = [f"{len(by.get(s, []))} {s.lower()}" + (f" ({', '.join(by[s])})" if s in ("WAIVED", "FAIL", "NOT EVALUABLE")
                                                        and by.get(s) else "")
                 for s in ("PASS", "FAIL", "WAIVED", "NOT EVALUABLE")]
        text += f" Criteria: {', '.join(parts)}."
    return text


def render_markdown(title: str, sections: list[Section], image_dir: str | None, lead: tuple[str, ...] = ()) -> str:
    return document_markdown(title, sections, image_dir, _fmt, toc=True, lead=lead)


def render_html(title: str, sections: list[Section], lead: tuple[str, ...] = ()) -> str:
    """Status cells carry their text as class (PASS green, FAIL red...); a table of contents links the sections."""
    return document_html(title, sections, _CSS, _fmt, classed=True, toc=True, lead=lead, break_long=True)


def write(summary: dict[str, Any], md_path: Path | str, reports: Path,
          html_path: Path | str | None = None) -> tuple[str, str | None]:
    """Write ``md_path`` (+ PNGs in ``<stem>_plots/``) and the self-contained HTML (default: ``.html`` beside
    the Markdown; none when the Markdown goes to standard output). ``-`` for either: standard output (the
    Markdown's plots then inline); returns where each went."""
    title, sections = build(summary, reports)
    lead = (headline(summary),)
    if atomic.is_stdout(md_path):
        md_where = atomic.write_output(md_path, render_markdown(title, sections, None, lead))
    else:
        md_file = Path(md_path)
        img_dir = md_file.parent / f"{md_file.stem}_plots"
        for sec in sections:
            for b in sec.blocks:
                if isinstance(b, Image):
                    atomic.write_bytes(img_dir / b.filename, b.png)
        md_where = atomic.write_output(md_file, render_markdown(title, sections, img_dir.name, lead))
        html_path = md_file.with_suffix(".html") if html_path is None else html_path
    html_where = None if html_path is None else atomic.write_output(html_path, render_html(title, sections, lead))
    return md_where, html_where
