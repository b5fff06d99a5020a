"""Controller-side aggregation: merge item records, write summary/sign-off/Allure extras, set the exit status.

Registered only on the controller (never on xdist workers), like pytest's junitxml reporter.
Inert when the run collected no case: nothing is written, the exit status is untouched.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fnmatch
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ndval.core import atomic, strictjson
from ndval.harness import allure, golden, paths, reportlock, subjects
from ndval.harness.cases import iter_case_files, load_case_file
from ndval.harness.collect import record_of
from ndval.harness.options import CASES_ROOT_KEY, OPTIONS_KEY
from ndval.harness.project import find_project
from ndval.harness.release import ReleaseRulesError, load_release_rules
from ndval.harness.summary import build_summary


class NdvalSession:
    """Collects records and collection errors of case items; finishes the run (summary, gate, reports)."""

    def __init__(self, config: pytest.Config, lock: bool = False) -> None:
        self.config = config
        #: the reports lock (``ndval.harness.reportlock``): inherited from ``ndval validate``, else taken here for a
        #: run over the cases, so the process that writes the reports holds it until it exits
        self._lock = None
        if lock and reportlock.inherited() is None:
            # a folder that cannot be made: writing summary.json fails the same way and names the cause
            with contextlib.suppress(OSError):
                self._lock = reportlock.acquire(config.stash[OPTIONS_KEY].reports_dir, "pytest (ndval cases)")
        self.records: dict[str, dict[str, Any]] = {}
        self.collection_errors: dict[str, str] = {}
        self.cases_roots: set[Path] = set()
        self.started = time.time()
        self.summary: dict[str, Any] | None = None
        self._session: pytest.Session | None = None
        self.deselected = 0
        self.out_dir: Path | None = None
        self.pruned: list[str] = []
        self.golden_scan_gaps: list[str] = []

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected += len(items)

    def partial_reason(self) -> str | None:
        """Why this run covers only part of the cases (None: the whole tree, a release run)."""
        opts, option, reasons = self.config.stash[OPTIONS_KEY], self.config.option, []
        if self.deselected:
            reasons.append(f"{self.deselected} item(s) deselected (-k/-m/--lf/--deselect)")
        if getattr(option, "lf", False) or getattr(option, "failedfirst", False):
            reasons.append("--lf" if getattr(option, "lf", False) else "--ff")
        stopped = (self._session.shouldstop or self._session.shouldfail) if self._session is not None else False
        if stopped:  # -x / --maxfail / --sw: the items after the stop never ran
            reasons.append(f"stopped early ({stopped})")
        if opts.cases_globs:
            reasons.append("--cases " + " ".join(opts.cases_globs))
        narrow = [a for a in self.config.args if "::" in a or _narrower_than_cases_root(
            Path(self.config.invocation_params.dir, a))]
        if narrow:
            reasons.append("selected paths " + " ".join(narrow[:5]))
        return "; ".join(reasons) or None

    @staticmethod
    def _is_case_node(nodeid: str) -> bool:
        return ".case.yaml" in nodeid or nodeid.endswith(".case.yaml")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and self._is_case_node(report.nodeid):
            self.collection_errors[report.nodeid] = str(report.longrepr)
            self.cases_roots.add(self.config.stash[CASES_ROOT_KEY](Path(self.config.rootpath, report.nodeid.split("::")[0])))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rec = record_of(report.user_properties)
        if rec is None:
            return
        report.user_properties = [p for p in report.user_properties if p[0] != "ndval.record"]
        report.user_properties.append(("ndval.status", rec["status"]))
        if report.when == "teardown" and report.nodeid in self.records:
            return
        if report.when == "setup":
            if report.passed:
                return  # the call report follows
            if report.skipped:
                if rec["status"] != "skipped":  # skipped outside the item's own bookkeeping: pytest's reason
                    rec["message"] = _skip_reason(report)
                rec["status"] = "skipped"
            else:
                rec["status"] = "error"
                rec["message"] = rec.get("message") or str(report.longrepr)[-2000:]
        node = getattr(report, "node", None)
        rec["worker"] = getattr(getattr(node, "gateway", None), "id", None)
        self.records[report.nodeid] = rec
        self.cases_roots.add(self.config.stash[CASES_ROOT_KEY](Path(rec["file"])))

    def _expected_goldens(self) -> set[Path]:
        opts = self.config.stash[OPTIONS_KEY]
        out: set[Path] = set()
        for root in self.cases_roots:
            for path in iter_case_files(root):
                try:
                    loaded = load_case_file(path, root)
                except Exception:  # that file's own collection error reports it; never the run's
                    self.golden_scan_gaps.append(str(path))
                    continue
                self.golden_scan_gaps += [f"{path}::{cid}" for cid, _ in loaded.errors]
                for lc in loaded.cases:
                    if any(s.type == "golden_match" for s in lc.expect):
                        for pt in lc.points:
                            out.add(golden.golden_path(opts.golden_root(root), root, path, lc.case.id, pt.id))
        return out

    def _unused_goldens(self) -> list[str]:
        """The goldens no case of the tree uses; under ``--prune-golden`` deleted (and then not listed), unless a
        case file of the tree could not be read (its goldens would look unused)."""
        opts = self.config.stash[OPTIONS_KEY]
        roots = {opts.golden_root(r) for r in self.cases_roots}
        self.golden_scan_gaps = []
        expected = self._expected_goldens()
        unused = [p for r in sorted(roots) for p in golden.unused_goldens(r, expected)]
        if opts.prune_golden and unused and not self.golden_scan_gaps:
            for path in unused:
                path.unlink(missing_ok=True)
            self.pruned = [str(p) for p in unused]
            return []
        return [str(p) for p in unused]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.records and not self.collection_errors:
            return
        self._finish(session)
        failed = allure.write_failures()
        if failed:  # an Allure results file could not be written during the run
            _report_failure(self.config, ReportWriteError(failed[0]), session)

    def _finish(self, session: pytest.Session) -> None:
        self._session = session
        opts = self.config.stash[OPTIONS_KEY]
        baseline = None
        if opts.baseline:
            baseline = json.loads(Path(opts.baseline).read_text(encoding="utf-8"))
        run = {"started": dt.datetime.fromtimestamp(self.started, dt.UTC).isoformat(timespec="seconds"),
               "duration_s": round(time.time() - self.started, 3), "argv": list(self.config.invocation_params.args),
               "workers": getattr(self.config.option, "numprocesses", None),
               "subject": subjects.selected_name(), "golden_mode": opts.golden_mode, "strict_waivers": opts.strict_waivers,
               "require_real_data": opts.require_real_data,
               "selection": {"keyword": self.config.option.keyword or None, "cases": opts.cases_globs or None,
                             "markers": self.config.option.markexpr or None},
               "partial": self.partial_reason()}
        root = find_project(self.config.invocation_params.dir).root
        try:
            rules = load_release_rules(sorted(self.cases_roots), root)
        except ReleaseRulesError as exc:
            raise pytest.UsageError(f"ndval: the release rules cannot be read: {exc}") from None
        self.summary = build_summary(self.records, self.collection_errors, repo=root, baseline=baseline,
                                     unused_goldens=self._unused_goldens(), run=run, rules=rules)
        # a subset run never replaces the release summary or sign-off: its reports go to partial/
        reports = opts.reports_dir / "partial" if run["partial"] else opts.reports_dir
        self.out_dir = reports
        self._session = session
        session.exitstatus = self.summary["gate"]["exit_code"]
        try:
            with report_write_errors(reports / "summary.json"):
                atomic.write_text(reports / "summary.json", strictjson.dumps(self.summary, indent=1, sort_keys=True, default=str))
            with report_write_errors(reports):  # report writers (Allure run files) follow the summary
                self.config.hook.pytest_ndval_summary(config=self.config, summary=self.summary, out_dir=reports)
        except ReportWriteError as exc:
            _report_failure(self.config, exc, session)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Write the sign-off last, after junitxml wrote junit.xml (its artifacts table checksums it)."""
        signoff_path = config.stash[OPTIONS_KEY].signoff
        try:
            xml = getattr(config.option, "xmlpath", None)
            if self.records and xml and Path(xml).is_file():
                with report_write_errors(Path(xml)):
                    _rewrite_junit(Path(xml), self.records)
            if self.summary and signoff_path:
                from ndval.harness import signoff

                path = Path(signoff_path)
                out_dir = self.out_dir or config.stash[OPTIONS_KEY].reports_dir
                if atomic.is_stdout(signoff_path):  # --signoff -: the Markdown on stdout, no file
                    signoff.write(self.summary, signoff_path, out_dir)
                    return
                if self.summary["run"]["partial"]:  # never over the release sign-off
                    path = (self.out_dir or config.stash[OPTIONS_KEY].reports_dir / "partial") / path.name
                with report_write_errors(path):
                    signoff.write(self.summary, path, path.parent)
        except ReportWriteError as exc:
            _report_failure(config, exc, self._session)
        finally:
            reportlock.release(self._lock)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
        if not self.summary:
            return
        s, tr = self.summary, terminalreporter
        tr.section("ndval gate")
        c = s["counts"]
        tr.write_line(f"cases: {c['items']} items — {c['passed']} passed, {c['failed']} failed, {c['waived']} waived, "
                      f"{c['error']} broken, {c['skipped']} skipped; {c['collection_errors']} collection error(s)")
        for r in s["gate"]["rules"]:
            tr.write_line(f"  [{r['status'].upper():4}] {r['rule']}: {r['actual']} (threshold {r['threshold']})")
            if r["status"] == "fail":
                _write_items(tr, r.get("items") or [])
        real = next((r for r in s["gate"]["rules"] if r["rule"] == "real data present"), None)
        if real and real["status"] == "pass" and real["actual"]:
            tr.write_line(f"NOTICE: {real['actual']} item(s) skipped for missing real data; not required here, so the "
                          "gate passes without that evidence (CI sets NDVAL_REQUIRE_REAL_DATA=1: it fails there)", yellow=True)
        opts = self.config.stash[OPTIONS_KEY]
        for g in self.pruned[:20]:
            tr.write_line(f"  unused golden pruned (--prune-golden): {g}")
        for g in s["golden"]["unused"][:20]:
            tr.write_line(f"  unused golden (not deleted; --prune-golden deletes it): {g}")
        if opts.prune_golden and s["golden"]["unused"]:
            tr.write_line(f"  --prune-golden: nothing deleted, {len(self.golden_scan_gaps)} case file(s)/case(s) of the "
                          f"tree could not be read, so their goldens would look unused: "
                          f"{', '.join(self.golden_scan_gaps[:5])}", yellow=True)
        if s["run"]["partial"]:
            tr.write_line(f"PARTIAL run ({s['run']['partial']}): not a release sign-off; the release summary is "
                          "left as it was", yellow=True)
        tr.write_line(f"summary: {(self.out_dir or self.config.stash[OPTIONS_KEY].reports_dir) / 'summary.json'}")
        tr.write_line(f"gate verdict: {s['gate']['verdict']} (exit {s['gate']['exit_code']})",
                      bold=True, red=s["gate"]["exit_code"] != 0, green=s["gate"]["exit_code"] == 0)


def _write_items(tr: pytest.TerminalReporter, items: list[str], limit: int = 20) -> None:
    """The items a failed gate rule names (at most ``limit``; the summary has all of them)."""
    for item in items[:limit]:
        tr.write_line(f"      {item}")
    if len(items) > limit:
        tr.write_line(f"      ... {len(items) - limit} more in summary.json (gate.rules[].items)")


class ReportWriteError(Exception):
    """A report could not be written: names the path and the cause (read-only, disk full, name too long ...)."""


#: errno -> the cause in words, for the common ways a reports folder refuses a write
_CAUSES = {errno.EROFS: "read-only file system", errno.EACCES: "permission denied", errno.EPERM: "not permitted",
           errno.ENOSPC: "no space left on device (disk full)", errno.EDQUOT: "disk quota exceeded",
           errno.ENAMETOOLONG: "file name too long", errno.ENOENT: "folder missing"}


@contextlib.contextmanager
def report_write_errors(path: Path) -> Iterator[None]:
    """Turn an ``OSError`` while writing ``path`` into a ``ReportWriteError`` naming the path and the cause."""
    try:
        yield
    except OSError as exc:
        cause = _CAUSES.get(exc.errno or 0, exc.strerror or type(exc).__name__)
        name = errno.errorcode.get(exc.errno or 0, "OSError")
        raise ReportWriteError(f"cannot write {exc.filename or path}: {cause} ({name})") from None


def _report_failure(config: pytest.Config, exc: ReportWriteError, session: pytest.Session | None) -> None:
    """Say which report could not be written and why; the run's exit status becomes 2 (broken input/environment)."""
    from ndval.harness import gate

    print(f"ndval: {exc}; exit {gate.EXIT_BROKEN_INPUT}", file=sys.stderr, flush=True)
    if session is not None:
        session.exitstatus = gate.EXIT_BROKEN_INPUT


class ReportWriteGuard:
    """Turns a report file that cannot be written inside another plugin's ``pytest_sessionfinish`` (pytest's own
    junitxml opening junit.xml on a full disk) into one line and exit 2, instead of an INTERNALERROR trace."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Iterator[None]:
        try:
            return (yield)
        except OSError as exc:
            cause = _CAUSES.get(exc.errno or 0, exc.strerror or type(exc).__name__)
            name = errno.errorcode.get(exc.errno or 0, "OSError")
            _report_failure(self.config, ReportWriteError(f"cannot write {exc.filename}: {cause} ({name})"), session)
            return None


def _rewrite_junit(path: Path, records: dict[str, dict[str, Any]]) -> None:
    """Tidy junit.xml (``ndval.harness.junit``); a file pytest left truncated (disk full) is a ReportWriteError."""
    import xml.etree.ElementTree as ET

    from ndval.harness import junit

    try:
        junit.rewrite(path, records)
    except ET.ParseError as exc:
        raise ReportWriteError(f"cannot write {path}: pytest left it unreadable ({exc}; disk full?)") from None


def _skip_reason(report: pytest.TestReport) -> str:
    """The reason of a skipped report (``longrepr`` is ``(file, line, "Skipped: reason")`` for skips)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "skipped")


def matches_globs(path: Path, globs: list[str], rootpath: Path) -> bool:
    """``path`` matches one of ``globs``: absolute, relative to the rootdir or to the cases root, or by name."""
    from ndval.harness.cases import find_cases_root

    forms = {path.as_posix(), path.name}
    for base in (rootpath, find_cases_root(path)):
        with contextlib.suppress(ValueError):
            forms.add(path.resolve().relative_to(base.resolve()).as_posix())
    return any(fnmatch.fnmatch(f, g) for f in forms for g in globs)


def _narrower_than_cases_root(path: Path) -> bool:
    """A path argument below a cases root (a sub-folder or one case file) selects a subset."""
    resolved = path.resolve()
    if resolved.is_file():
        return True
    parents = resolved.parents
    return paths.cases_dir() in parents or any(p.name == "validation_cases" for p in parents)
