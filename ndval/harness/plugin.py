"""pytest hooks of the ndval plugin (entry point ``pytest11: ndval``): options, markers, collection wiring.

Inert unless a run collects ``*.case.yaml`` files under a ``validation_cases/`` folder (or files
matching ``--cases``): other test runs (``make test``, pytester sessions) see no behaviour change.
The work lives elsewhere: collection in ``ndval.harness.collect``, aggregation/gate/reports in
``ndval.harness.session`` (registered on the controller only, never on xdist workers).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ndval.harness import allure, golden, hookspecs, paths, subjects
from ndval.harness.cases import CASE_SUFFIX, find_cases_root, item_location
from ndval.harness.collect import CaseFile, golden_root_for
from ndval.harness.options import CASES_ROOT_KEY, OPTIONS_KEY, GoldenMode, PluginOptions
from ndval.harness.project import find_project
from ndval.harness.session import NdvalSession, ReportWriteGuard, matches_globs


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ndval", "ndval validation cases")
    group.addoption("--update-golden", action="store_true", default=False,
                    help="rewrite missing/mismatching golden files and still fail (review the diff)")
    group.addoption("--regen-all-golden", action="store_true", default=False,
                    help="rewrite every selected golden file and pass")
    group.addoption("--prune-golden", action="store_true", default=False,
                    help="delete the golden files no case of the tree uses (refused while a case file is broken)")
    group.addoption("--cases", action="append", default=[], metavar="GLOB",
                    help="collect only case files matching GLOB (also outside validation_cases/); repeatable")
    group.addoption("--signoff", default=None, metavar="PATH",
                    help="write the release sign-off report to PATH (.md; an .html is written beside it)")
    group.addoption("--baseline", default=None, metavar="SUMMARY.json",
                    help="previous summary.json: regressions against it fail the gate")
    group.addoption("--strict-waivers", action="store_true", default=False,
                    help="waivers do not excuse failures, and a waiver that is no longer needed fails")
    group.addoption("--require-real-data", action="store_true",
                    default=os.environ.get("NDVAL_REQUIRE_REAL_DATA", "") not in ("", "0"),
                    help="items skipped because their real data is missing fail the gate (exit 2); default on "
                         "when NDVAL_REQUIRE_REAL_DATA=1 (set by .ci/run)")
    group.addoption("--subject", default=None, metavar="NAME",
                    help="subject under test: ndval (default), an ndval.subjects entry point or a command "
                         "declared in [tool.ndval.subjects.NAME]")
    group.addoption("--ndval-reports", default=None, metavar="DIR",
                    help="folder for summary.json and golden review files (default $NDVAL_REPORTS_DIR, else the "
                         "project's reports folder: [tool.ndval] reports, default <project root>/reports)")


def _is_case_path(config: pytest.Config, path: Path) -> bool:
    if not path.name.endswith(CASE_SUFFIX):
        return False
    globs = config.getoption("cases") or []
    if globs:
        return matches_globs(path, globs, config.rootpath)
    parents = [*path.resolve().parents, *path.absolute().parents]  # unresolved too: a symlinked case is refused, not skipped
    return paths.cases_dir() in parents or any(p.name == "validation_cases" for p in parents)


allure.guard_result_writes()  # before allure-pytest's logger writes anything (entry points load before configure)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ndval_tag(name): tag of a validation case (from its YAML)")
    config.addinivalue_line("markers", "ndval_kind(name): kind of a validation case")
    reports = config.getoption("ndval_reports") or str(find_project(config.invocation_params.dir).reports)
    mode: GoldenMode = "regen_all" if config.getoption("regen_all_golden") else "update" if config.getoption("update_golden") else "check"
    config.stash[OPTIONS_KEY] = PluginOptions(
        golden_mode=mode, strict_waivers=bool(config.getoption("strict_waivers")),
        reports_dir=Path(reports).resolve(), golden_root=golden_root_for,
        cases_globs=list(config.getoption("cases") or []), signoff=config.getoption("signoff"),
        baseline=config.getoption("baseline"), allure=getattr(config.option, "allure_report_dir", None),
        require_real_data=bool(config.getoption("require_real_data")),
        prune_golden=bool(config.getoption("prune_golden")),
    )
    config.stash[CASES_ROOT_KEY] = find_cases_root
    subjects.select(config.getoption("subject"))
    args = [str(a) for a in config.args]
    case_run = bool(config.getoption("cases") or any("validation_cases" in a or CASE_SUFFIX in a for a in args))
    if case_run:
        # one broken case must not stop the others (acceptance: the summary counts it)
        config.option.continue_on_collection_errors = True
    allure.register(config, config.stash[OPTIONS_KEY].allure)
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(NdvalSession(config, lock=case_run), "ndval-session")
        config.pluginmanager.register(ReportWriteGuard(config), "ndval-report-write-guard")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Items that would share one golden file (after the id -> name mapping and case-folding) break, naming both."""
    from ndval.harness.collect import CaseItem

    case_items = [i for i in items if isinstance(i, CaseItem)]
    opts, uses, by_where = config.stash[OPTIONS_KEY], [], {}
    for item in case_items:
        lc, root = item.loaded, config.stash[CASES_ROOT_KEY](item.path)
        if any(s.type == "golden_match" for s in lc.expect):
            where = item_location(lc, item.point.id)
            path = golden.golden_path(opts.golden_root(root), root, item.path, lc.case.id, item.point.id)
            uses.append(golden.GoldenUse(path, where))
            by_where[where] = item
    for where, message in golden.collisions(uses).items():
        by_where[where].golden_collision = f"{where}: {message}"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CaseFile | None:
    if _is_case_path(parent.config, file_path):
        return CaseFile.from_parent(parent, path=file_path)
    return None
