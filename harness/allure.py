"""Allure integration: per-item labels, parameters and attachments; run files on the controller.

Per item (inside ``runtest``, through ``allure.dynamic``): epic = case folder (estimator/recorded/
analyzer), feature = kind, story = case ``story`` or file name, suites from the folder tree,
severity, owner, tags, id, issue link of the waiver; parameters = matrix point (history-relevant)
and the data checksum (excluded from history); attachments = case YAML, result table (CSV),
assertion results (JSON), estimate-vs-measured plot (PNG), golden diff (HTML).
Per run (controller only): ``environment.properties``, ``executor.json``, ``categories.json``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from harness.options import CASES_ROOT_KEY
from harness.plots import band_of, estimate_vs_measured_png
from harness.results import AssertionResult
from ndcore import atomic

SEVERITY = {"blocker": "blocker", "major": "critical", "minor": "minor"}

CATEGORIES = [
    {"name": "Waived (known issue with an unexpired waiver)", "matchedStatuses": ["skipped"], "messageRegex": ".*(XFAIL|waived).*"},
    {"name": "Skipped: data not available", "matchedStatuses": ["skipped"]},
    {"name": "Golden drift", "matchedStatuses": ["failed"], "messageRegex": "(?s).*golden.*"},
    {"name": "Estimate out of band", "matchedStatuses": ["failed"], "messageRegex": "(?s).*(ratio_within|rel_error_le|abs_error_le|magnitude_within|mape_le).*"},
    {"name": "Weak or inverted correlation", "matchedStatuses": ["failed"], "messageRegex": "(?s).*(pearson_r_gt|spearman_rho_gt).*"},
    {"name": "Verdict / bottleneck mismatch", "matchedStatuses": ["failed"], "messageRegex": "(?s).*(verdict_equals|bottleneck_is|score_between).*"},
    {"name": "Criterion failed", "matchedStatuses": ["failed"]},
    {"name": "Broken input (case, data or kind cannot run)", "matchedStatuses": ["broken"]},
]


def _table_csv(table: list[dict[str, Any]]) -> str:
    if not table:
        return ""
    cols: list[str] = []
    for row in table:
        cols += [k for k in row if k not in cols]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    writer.writeheader()
    for row in table:
        writer.writerow({k: (json.dumps(v) if isinstance(v, dict | list) else v) for k, v in row.items()})
    return buf.getvalue()


def labels_for(item: Any) -> dict[str, Any]:
    """The Allure labels of a case item (also used by tests)."""
    case = item.loaded.case
    root = item.config.stash[CASES_ROOT_KEY](item.path)
    rel = item.path.resolve().relative_to(root.resolve())
    epic = rel.parts[0] if len(rel.parts) > 1 else "cases"
    stem = item.path.name.removesuffix(".case.yaml")
    tags = list(case.tags) + sorted({s.criterion for s in item.loaded.expect if s.criterion})
    return {"epic": epic, "feature": case.kind, "story": case.story or stem, "parent_suite": epic, "suite": stem,
            "sub_suite": case.id, "severity": SEVERITY[case.severity], "owner": case.owner, "tags": tags, "id": item.nodeid}


def decorate_item(item: Any, results: list[AssertionResult], status: str) -> None:
    """Apply labels/parameters/attachments to the running Allure test result of ``item``."""
    import allure

    case = item.loaded.case
    lab = labels_for(item)
    dyn = allure.dynamic
    dyn.title(f"{case.title}" + (f" [{item.point.id}]" if item.point.id else ""))
    dyn.epic(lab["epic"])
    dyn.feature(lab["feature"])
    dyn.story(lab["story"])
    dyn.parent_suite(lab["parent_suite"])
    dyn.suite(lab["suite"])
    dyn.sub_suite(lab["sub_suite"])
    dyn.severity(allure.severity_level(lab["severity"]))
    dyn.label("owner", lab["owner"])
    dyn.id(lab["id"])
    for tag in lab["tags"]:
        dyn.tag(tag)
    desc = [f"**Source:** {case.source}", "", case.description or ""]
    if case.waiver:
        w = case.waiver
        desc += ["", f"**Waiver** until {w.expires} (owner {w.owner}, {w.issue}): {w.reason}"]
        if w.issue.startswith("http"):
            dyn.issue(w.issue, name=w.issue.rsplit("/", 1)[-1])
    dyn.description("\n".join(desc))
    for link in case.links:
        dyn.link(link)
    for key, value in item.point.overrides.items():
        dyn.parameter(key, value)
    dyn.parameter("point", item.point.id or "-")
    if item.loaded.data_provenance.get("sha256"):
        dyn.parameter("data sha256", item.loaded.data_provenance["sha256"][:16], excluded=True)
    allure.attach(item.path.read_text(encoding="utf-8"), name=item.path.name, attachment_type=allure.attachment_type.YAML)
    if item.result and item.result.table:
        allure.attach(_table_csv(item.result.table), name="estimate vs measured (table)", attachment_type=allure.attachment_type.CSV)
    allure.attach(json.dumps([r.to_dict() for r in results], indent=1, default=str), name="assertion results",
                  attachment_type=allure.attachment_type.JSON)
    for res in results:
        d = res.to_dict()
        if d["type"] in ("ratio_within", "rel_error_le", "abs_error_le", "magnitude_within") and d["rows"]:
            png = estimate_vs_measured_png(d["rows"], f"{case.id}: {res.target}", band_of(d))
            if png:
                allure.attach(png, name=f"plot {res.id}", attachment_type=allure.attachment_type.PNG)
    g = getattr(item, "_golden", None)
    if g is not None:
        for art in g.artifacts:
            if art.suffix == ".html":
                allure.attach(art.read_text(encoding="utf-8"), name=f"golden diff {art.name}", attachment_type=allure.attachment_type.HTML)


def write_run_files(alluredir: Path, summary: dict[str, Any]) -> None:
    """``environment.properties``, ``executor.json`` and ``categories.json`` (controller only)."""
    prov = summary["provenance"]
    env = {"ndval.git_sha": prov["git"]["sha"], "ndval.git_dirty": prov["git"]["dirty"], "python": prov["python"],
           "platform": prov["platform"], "gate.verdict": summary["gate"]["verdict"]}
    env |= {f"pkg.{k}": v for k, v in prov["packages"].items() if v}
    lines = [f"{k}={str(v).replace(chr(10), ' ')}" for k, v in env.items()]
    atomic.write_text(alluredir / "environment.properties", "\n".join(lines) + "\n")
    atomic.write_text(alluredir / "categories.json", json.dumps(CATEGORIES, indent=1))
    executor = {"name": "ndval validate", "type": "ndval", "buildName": f"ndval {prov['git']['sha'][:12]}",
                "reportName": "ndval validation"}
    atomic.write_text(alluredir / "executor.json", json.dumps(executor, indent=1))
