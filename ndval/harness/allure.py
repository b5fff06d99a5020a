"""Allure integration as two plugin objects, registered by ``ndval.harness.plugin`` only when ``--alluredir`` is given.

- :class:`AllureItems` (every process that runs items: the controller, or each xdist worker) implements
  ``pytest_ndval_item_evaluated`` (``ndval.harness.hookspecs``): epic = case folder (estimator/recorded/analyzer),
  feature = kind, story = case ``story`` or file name, suites from the folder tree, severity, owner, tags,
  id, issue link of the waiver, and the labels the categories match on: ``ndval_outcome`` (passed, failed,
  waived, error, not_evaluable) and, on a failed item, ``ndval_failure`` (band, correlation, verdict, golden,
  criterion: the kind of its failed assertions' types); parameters = matrix point (history-relevant) and the data
  checksum (excluded from history); attachments = case YAML, result table (CSV), assertion results (JSON),
  estimate-vs-measured plot (PNG), golden diff (HTML).
- :class:`AllureRunFiles` (controller only, never on xdist workers) implements ``pytest_ndval_summary``:
  ``environment.properties``, ``executor.json`` and the Allure 2 ``categories.json`` in the results folder.

The Allure 3 report (``allure generate``) takes its categories from its configuration file, not from
``categories.json`` (which only Allure 2 and the classic plugin read): :func:`allure3_config` builds that
file (``allurerc.json``: single-file Awesome report, the categories below, a history file carried over
between runs so trends show). Neither plugin imports ``ndval.harness.collect``: items are read by attribute.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import pytest

from ndval.core import atomic, strictjson
from ndval.harness.options import CASES_ROOT_KEY
from ndval.harness.plots import band_of, estimate_vs_measured_png
from ndval.harness.results import AssertionResult

SEVERITY = {"blocker": "blocker", "major": "critical", "minor": "minor"}
#: the label carrying the item's ndval outcome (what the Allure 3 categories match)
OUTCOME_LABEL = "ndval_outcome"
WAIVED = "Waived (known issue with an unexpired waiver)"

#: the label naming what failed in a failed item (one of ``FAILURE_KINDS``), from its failed assertions' types
FAILURE_LABEL = "ndval_failure"
#: failure kind -> the assertion types of that kind, in priority order: an item whose band and golden both
#: fail is filed under the band (the criterion), its golden drift still counted by the gate's own rule
FAILURE_KINDS: dict[str, tuple[str, ...]] = {
    "band": ("ratio_within", "rel_error_le", "abs_error_le", "magnitude_within", "mape_le"),
    "correlation": ("pearson_r_gt", "spearman_rho_gt"),
    "verdict": ("verdict_equals", "bottleneck_is", "score_between"),
    "golden": ("golden_match",),
}

#: Allure 2 ``categories.json`` (results folder). Allure 2 matches categories by message and trace regexes
#: only, and a message is free text (a case title can say "golden"): so these rules use statuses alone; the
#: split by failure kind is in the Allure 3 configuration (:func:`allure3_categories`), on labels.
CATEGORIES = [
    {"name": "Skipped, waived or not evaluable (see the ndval_outcome label)", "matchedStatuses": ["skipped"]},
    {"name": "Criterion failed (see the ndval_failure label)", "matchedStatuses": ["failed"]},
    {"name": "Broken input (case, data or kind cannot run)", "matchedStatuses": ["broken"]},
]


def failure_kind(results: list[AssertionResult]) -> str | None:
    """What failed, from the types of the failed assertions (``FAILURE_KINDS`` order; ``criterion`` for a type of
    no kind); None when nothing failed."""
    failed = {r.type for r in results if r.status == "failed"}
    if not failed:
        return None
    return next((kind for kind, types in FAILURE_KINDS.items() if failed & set(types)), "criterion")


def allure3_categories() -> list[dict[str, Any]]:
    """Allure 3 category rules (``categories.rules`` of ``allurerc``; first match wins). Every rule matches the
    status and ndval's structured labels, anchored (``ndval_outcome``: waived / not_evaluable; ``ndval_failure``:
    the failed assertions' kind), never the message text."""
    def failed(kind: str) -> dict[str, Any]:
        return {"statuses": ["failed"], "labels": {FAILURE_LABEL: f"^{kind}$"}}

    return [
        {"id": "ndval-waived", "name": WAIVED, "matchers": {"statuses": ["skipped"], "labels": {OUTCOME_LABEL: "^waived$"}},
         "expand": True},
        {"id": "ndval-not-evaluable", "name": "Not evaluable (a criterion cannot be computed on this data)",
         "matchers": {"statuses": ["skipped"], "labels": {OUTCOME_LABEL: "^not_evaluable$"}}},
        {"id": "ndval-skipped", "name": "Skipped: data not available", "matchers": {"statuses": ["skipped"]}},
        {"id": "ndval-band", "name": "Estimate out of band", "matchers": failed("band")},
        {"id": "ndval-corr", "name": "Weak or inverted correlation", "matchers": failed("correlation")},
        {"id": "ndval-verdict", "name": "Verdict / bottleneck mismatch", "matchers": failed("verdict")},
        {"id": "ndval-golden", "name": "Golden drift", "matchers": failed("golden")},
        {"id": "ndval-failed", "name": "Criterion failed", "matchers": {"statuses": ["failed"]}},
        {"id": "ndval-broken", "name": "Broken input (case, data or kind cannot run)", "matchers": {"statuses": ["broken"]}},
    ]


def allure3_config(output: Path, history: Path | None, name: str = "ndval validation", single_file: bool = True,
                   history_limit: int | None = None) -> dict[str, Any]:
    """The ``allurerc.json`` of ``ndval report``: the Awesome report (one self-contained ``index.html`` when
    ``single_file``: it renders when opened as a file), ndval's categories, and ``historyPath`` (when given):
    a JSON-lines file Allure appends one entry to per generation (at most ``history_limit`` kept), so trends
    show across runs as long as the file is kept."""
    config: dict[str, Any] = {
        "name": name, "output": str(output),
        "plugins": {"awesome": {"options": {"singleFile": single_file, "reportName": name,
                                            "groupBy": ["parentSuite", "suite", "subSuite"]}}},
        "categories": {"rules": allure3_categories()}}
    if history is not None:
        config["historyPath"] = str(history)
        if history_limit:
            config["historyLimit"] = history_limit
    return config


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
        writer.writerow({k: (strictjson.dumps(v) if isinstance(v, dict | list) else v) for k, v in row.items()})
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


def _apply_labels(dyn: Any, allure: Any, item: Any, status: str, kind: str | None = None) -> None:
    """Labels, description, links and parameters of ``item`` (``dyn``: ``allure.dynamic``, untyped)."""
    case = item.loaded.case
    lab = labels_for(item)
    dyn.title(f"{case.title}" + (f" [{item.point.id}]" if item.point.id else ""))
    for key in ("epic", "feature", "story", "parent_suite", "suite", "sub_suite"):
        getattr(dyn, key)(lab[key])
    dyn.severity(allure.severity_level(lab["severity"]))
    dyn.label("owner", lab["owner"])
    dyn.label(OUTCOME_LABEL, status)
    if kind is not None:
        dyn.label(FAILURE_LABEL, kind)
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


def _attach(allure: Any, item: Any, results: list[AssertionResult]) -> None:
    """Attachments of ``item``: case YAML, result table, assertion results, plots, golden diff."""
    kinds = allure.attachment_type
    case = item.loaded.case
    allure.attach(item.path.read_text(encoding="utf-8"), name=item.path.name, attachment_type=kinds.YAML)
    if item.result and item.result.table:
        allure.attach(_table_csv(item.result.table), name="estimate vs measured (table)", attachment_type=kinds.CSV)
    allure.attach(strictjson.dumps([r.to_dict() for r in results], indent=1, default=str), name="assertion results",
                  attachment_type=kinds.JSON)
    for res in results:
        d = res.to_dict()
        if d["type"] in ("ratio_within", "rel_error_le", "abs_error_le", "magnitude_within") and d["rows"]:
            png = estimate_vs_measured_png(d["rows"], f"{case.id}: {res.target}", band_of(d))
            if png:
                allure.attach(png, name=f"plot {res.id}", attachment_type=kinds.PNG)
    g = getattr(item, "_golden", None)
    if g is not None:
        for art in g.artifacts:
            if art.suffix == ".html":
                allure.attach(art.read_text(encoding="utf-8"), name=f"golden diff {art.name}", attachment_type=kinds.HTML)


def decorate_item(item: Any, results: list[AssertionResult], status: str) -> None:
    """Apply labels/parameters/attachments to the running Allure test result of ``item``."""
    import allure

    _apply_labels(allure.dynamic, allure, item, status, failure_kind(results) if status == "failed" else None)
    _attach(allure, item, results)


def write_run_files(alluredir: Path, summary: dict[str, Any]) -> None:
    """``environment.properties``, ``executor.json`` and ``categories.json`` (controller only)."""
    prov = summary["provenance"]
    env = {"ndval.git_sha": prov["git"]["sha"], "ndval.git_dirty": prov["git"]["dirty"], "python": prov["python"],
           "platform": prov["platform"], "gate.verdict": summary["gate"]["verdict"]}
    env |= {f"pkg.{k}": v for k, v in prov["packages"].items() if v}
    lines = [f"{k}={str(v).replace(chr(10), ' ')}" for k, v in env.items()]
    atomic.write_text(alluredir / "environment.properties", "\n".join(lines) + "\n")
    atomic.write_text(alluredir / "categories.json", strictjson.dumps(CATEGORIES, indent=1))
    executor = {"name": "ndval validate", "type": "ndval", "buildName": f"ndval {prov['git']['sha'][:12]}",
                "reportName": "ndval validation"}
    atomic.write_text(alluredir / "executor.json", strictjson.dumps(executor, indent=1))


class AllureItems:
    """Decorates each evaluated case item's Allure result (on the process that runs it)."""

    def pytest_ndval_item_evaluated(self, item: pytest.Item, results: list[AssertionResult], status: str) -> None:
        decorate_item(item, results, status)


class AllureRunFiles:
    """Writes the run files of the Allure results folder once the summary exists (controller only)."""

    def __init__(self, alluredir: Path) -> None:
        self.alluredir = alluredir

    def pytest_ndval_summary(self, config: pytest.Config, summary: dict[str, Any], out_dir: Path) -> None:
        write_run_files(self.alluredir, summary)


def register(config: pytest.Config, alluredir: str | None) -> None:
    """Register the Allure plugin objects when Allure is on (``--alluredir``); the run files only off xdist workers."""
    if not alluredir:
        return
    config.pluginmanager.register(AllureItems(), "ndval-allure-items")
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(AllureRunFiles(Path(alluredir)), "ndval-allure-run-files")


#: what could not be written by the Allure file logger in this process (one line each)
_WRITE_FAILURES: list[str] = []


def write_failures() -> list[str]:
    """The Allure results files this process could not write (disk full, read-only ...), one line each."""
    return list(_WRITE_FAILURES)


def guard_result_writes() -> None:
    """Make allure-pytest's file logger record a failed write instead of raising inside pytest's hooks (an
    INTERNALERROR that aborts the run): the session then names the cause and the run exits 2."""
    import functools

    from allure_commons.logger import AllureFileLogger

    original = AllureFileLogger._report_item
    if getattr(original, "_ndval_guarded", False):
        return

    @functools.wraps(original)
    def guarded(self: AllureFileLogger, item: Any) -> None:
        try:
            original(self, item)  # type: ignore[no-untyped-call]
        except OSError as exc:
            _WRITE_FAILURES.append(f"cannot write an Allure result in {exc.filename or self._report_dir}: "
                                   f"{exc.strerror or exc}")

    guarded._ndval_guarded = True  # type: ignore[attr-defined]
    AllureFileLogger._report_item = guarded  # type: ignore[method-assign]
