"""Collection: ``CaseFile`` (a ``*.case.yaml``) -> ``CaseItem`` per case point; broken cases -> collection errors.

Item lifecycle: ``setup`` checks the kind can run here and runs it (an exception there is an
*error*: broken input, not a failed criterion); ``runtest`` evaluates every assertion (soft),
checks the golden file, applies the waiver, records one builtin-only payload in
``user_properties`` for the controller, and fails with a criteria table pointing at the YAML.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tabulate import tabulate

from ndval.core import strictjson
from ndval.core.yamlsrc import CaseError
from ndval.harness import golden, outcome, paths, subjects
from ndval.harness.assertions import AssertionUsageError, EvalContext
from ndval.harness.cases import LoadedCase, Point, load_case_file
from ndval.harness.kinds import KINDS, KindError, RunContext
from ndval.harness.options import CASES_ROOT_KEY, OPTIONS_KEY
from ndval.harness.results import AssertionResult, RunResult, to_builtin
from ndval.harness.subjects import SubjectError

PAYLOAD_KEY = "ndval.record"
RECORD_VERSION = 1


class CaseFailure(AssertionError):
    """One or more unwaived criteria failed (carries the results for ``repr_failure``).

    An ``AssertionError``, so that reporters (Allure) count the item as *failed*, not *broken*; its message
    names the failed assertions (id, type, reason) before the case header, for reporters that show the
    message only (Allure categories match on labels, never on this text)."""

    def __init__(self, results: list[AssertionResult], header: str) -> None:
        reasons = [f"{r.id} ({r.type}): {r.message}" for r in results if r.status == "failed"]
        super().__init__("\n".join([*reasons, header]))
        self.results = results
        self.header = header


class CaseBroken(Exception):
    """The case could not be evaluated (kind unavailable, kind error, assertion misuse)."""


class BrokenCase(pytest.Collector):
    """Stands for a case that failed validation: collecting it raises the ``CaseError``."""

    def __init__(self, *, error: CaseError, **kw: Any) -> None:
        super().__init__(**kw)
        self.error = error

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        raise self.CollectError(self.error.render())


class CaseFile(pytest.File):
    """A case file; file-level problems (invalid YAML, schema of the file) are collection errors."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        try:
            loaded = load_case_file(self.path, self.config.stash[CASES_ROOT_KEY](self.path))
        except CaseError as exc:
            raise self.CollectError(exc.render()) from None
        by_id = {lc.case.id: lc for lc in loaded.cases}
        order = [lc.case.id for lc in loaded.cases] + [cid for cid, _ in loaded.errors]
        errors = dict(loaded.errors)
        for cid in order:
            if cid in errors:
                yield BrokenCase.from_parent(self, name=cid, error=errors[cid])
                continue
            lc = by_id[cid]
            for point in lc.points:
                # a matrix point / row is the item's pytest *parameter* (``case[point]``), so that the structured
                # node id pytest's cache parses back (``--lf``, ``--ff``, ``--sw``) matches the collected one
                name = f"{cid}[{point.id}]" if point.id else cid
                nodeid = self.id.child(cid).with_params(point.id or None)
                yield CaseItem.from_parent(self, name=name, nodeid=nodeid, loaded=lc, point=point,
                                           file_sha256=loaded.sha256)


class CaseItem(pytest.Item):
    """One case at one matrix point."""

    def __init__(self, *, loaded: LoadedCase, point: Point, file_sha256: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.loaded, self.point, self.file_sha256 = loaded, point, file_sha256
        self.funcargs: dict[str, Any] = {}
        self.result: RunResult | None = None
        #: set at collection when another item would share this item's golden file (the item then breaks)
        self.golden_collision: str | None = None
        self._t0 = 0.0
        case = loaded.case
        for tag in case.tags:
            self.add_marker(pytest.mark.ndval_tag(tag))
            _register_marker(self.config, tag)
            self.add_marker(getattr(pytest.mark, tag))  # `pytest -m seed` selects by tag
        self.add_marker(pytest.mark.ndval_kind(case.kind))

    # -- pytest interface ----------------------------------------------------------------------
    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.loaded.line - 1, f"case {self.name} ({self.loaded.case.kind})"

    def setup(self) -> None:
        self._t0 = time.perf_counter()
        self._record(status="error", message="setup did not finish")
        if self.golden_collision:
            self._record(status="error", message=self.golden_collision)
            raise CaseBroken(self.golden_collision)
        if self.point.unavailable:
            self._record(status="skipped", message=self.point.unavailable)
            pytest.skip(self.point.unavailable)
        kind = KINDS[self.loaded.case.kind]
        try:
            subject = subjects.resolve()
        except SubjectError as exc:
            self._record(status="error", message=str(exc))
            raise CaseBroken(str(exc)) from None
        skip = subjects.skip_reason(kind.name, subject)
        if skip:
            self._record(status="skipped", message=skip)
            pytest.skip(skip)
        reason = kind.requires()
        if reason:
            self._record(status="error", message=f"kind {kind.name} cannot run here: {reason}")
            raise CaseBroken(f"kind {kind.name} cannot run here: {reason}")
        ctx = RunContext(case_id=self.loaded.case.id, params=self.point.params, rows=self.point.rows,
                         point=self.point.overrides, case_file=self.path,
                         cases_root=self.config.stash[CASES_ROOT_KEY](self.path), subject=subject)
        try:
            self.result = kind.run(ctx)
        except pytest.skip.Exception as exc:  # the kind skipped (e.g. its data is absent): keep the reason
            self._record(status="skipped", message=str(exc.msg or "skipped by the kind"))
            raise
        except KindError as exc:
            self._record(status="error", message=f"{kind.name}: {exc}")
            raise CaseBroken(f"{kind.name}: {exc}") from None
        except Exception as exc:
            self._record(status="error", message=f"{kind.name} raised {type(exc).__name__}: {exc}")
            raise

    def runtest(self) -> None:
        assert self.result is not None
        case = self.loaded.case
        opts = self.config.stash[OPTIONS_KEY]
        ctx = EvalContext(golden_check=self._golden_check)
        results: list[AssertionResult] = []
        broken: list[str] = []
        for spec in self.loaded.expect:
            try:
                res = spec.evaluate(self.result, ctx)
            except AssertionUsageError as exc:
                broken.append(f"{spec.id}: {exc}")
                res = spec.make(spec.id or spec.type, target="-", observed=None, expected="-", margin=None,
                                passed=False, message=f"cannot evaluate: {exc}", evaluable=False)
            res.severity = res.severity or case.severity
            res.provenance, res.producer = spec.provenance_of(self.result)
            results.append(res)
        waiver = self.effective_waiver()
        outcome.apply_waiver(results, waiver, opts.strict_waivers)
        out = outcome.decide(results, broken, waiver, opts.strict_waivers)
        self._record(status=out.status, results=results, message="; ".join(broken + out.notes))
        self.ihook.pytest_ndval_item_evaluated(item=self, results=results, status=out.status)
        header = f"case {self.nodeid} — {case.title}\n{self.path}:{self.loaded.line}"
        if broken:
            raise CaseBroken(header + "\n" + "\n".join(broken) + "\n" + self._table(results))
        if out.fails:
            raise CaseFailure(results, header + ("\nstale waiver under --strict-waivers" if not out.failed else ""))
        if out.waived:
            pytest.xfail(f"waived until {waiver.expires} ({waiver.issue})")
        if out.status == "not_evaluable":
            pytest.skip("not evaluable: " + "; ".join(r.message for r in out.gaps))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseFailure):
            return excinfo.value.header + "\n" + self._table(excinfo.value.results) + self._golden_diff()
        if isinstance(excinfo.value, CaseBroken):
            return f"BROKEN {self.nodeid} ({self.path}:{self.loaded.line}): {excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def _repr_failure_py(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CaseBroken):  # setup errors: the reason, not a traceback
            return f"BROKEN {self.nodeid} ({self.path}:{self.loaded.line}): {excinfo.value}"
        return super()._repr_failure_py(excinfo, style=style)

    def effective_waiver(self) -> Any:
        """The case waiver if it covers this point (``waiver.points``), else None."""
        waiver = self.loaded.case.waiver
        if waiver and waiver.points is not None and self.point.id not in waiver.points:
            return None
        return waiver

    # -- helpers ------------------------------------------------------------------------------
    def _golden_diff(self, max_lines: int = 60) -> str:
        """The golden mismatch as a unified diff for the console (the review files have all of it)."""
        outcome = getattr(self, "_golden", None)
        text = getattr(outcome, "diff_text", "") if outcome is not None and not outcome.passed else ""
        if not text or outcome is None:
            return ""
        lines = text.rstrip("\n").splitlines()
        more = f"\n  ... {len(lines) - max_lines} more diff line(s)" if len(lines) > max_lines else ""
        full = (f"\nfull diff: {outcome.artifacts[1]} (side by side: {outcome.artifacts[2]})"
                if len(outcome.artifacts) > 2 else "")
        return "\ngolden diff (expected -> obtained):\n" + "\n".join(lines[:max_lines]) + more + full
    def _table(self, results: list[AssertionResult]) -> str:
        lines = dict(zip([s.id for s in self.loaded.expect], self.loaded.expect_lines, strict=False))
        rows = []
        for r in results:
            margin = "" if r.margin is None else f"{r.margin:+.4g}"
            observed = f"{r.observed:.4g}" if isinstance(r.observed, float) else str(r.observed)[:40]
            rows.append([r.status.upper(), r.id, r.criterion or "", r.target[:48], observed, r.expected, margin,
                         f"line {lines.get(r.id, '?')}"])
        table = tabulate(rows, headers=["status", "assertion", "criterion", "target", "observed", "expected", "margin", "yaml"])
        details = "\n".join(f"  {r.id}: {r.message}" for r in results if not r.passed)
        return table + ("\n" + details if details else "")

    def _golden_check(self, result: RunResult, spec: Any) -> AssertionResult:
        opts = self.config.stash[OPTIONS_KEY]
        root = self.config.stash[CASES_ROOT_KEY](self.path)
        path = golden.golden_path(opts.golden_root(root), root, self.path, self.loaded.case.id, self.point.id)
        review = opts.reports_dir / "golden" / path.parent.relative_to(opts.golden_root(root))
        try:
            outcome = golden.check(self.loaded.case.id, result.golden, path, review, opts.golden_mode, spec.rel, spec.abs)
        except golden.GoldenError as exc:  # a folder or unreadable file where the golden should be: one line
            self._record(status="error", message=str(exc))
            raise CaseBroken(str(exc)) from None
        self._golden = outcome
        made: AssertionResult = spec.make(
            spec.id or "golden", target=f"golden {path.name}", observed=outcome.status, expected="match", margin=None,
            passed=outcome.passed, message=outcome.message(), rows=outcome.mismatches,
            stats={"path": str(path), "status": outcome.status, "artifacts": [str(p) for p in outcome.artifacts]})
        return made

    def _record(self, status: str, results: list[AssertionResult] | None = None, message: str = "") -> None:
        case, point = self.loaded.case, self.point
        golden_out = getattr(self, "_golden", None)
        record = {
            "version": RECORD_VERSION, "nodeid": self.nodeid, "case_id": case.id, "point": point.id,
            "file": _display_path(self.path, self.config.rootpath), "line": self.loaded.line, "kind": case.kind, "title": case.title,
            "severity": case.severity, "owner": case.owner, "tags": case.tags, "source": case.source,
            "story": case.story, "links": case.links, "status": status, "message": message,
            "criteria": sorted({s.criterion for s in self.loaded.expect if s.criterion}),
            "overrides": point.overrides, "file_sha256": self.file_sha256, "data": self.loaded.data_provenance,
            "waiver": w.model_dump(mode="json") if (w := self.effective_waiver()) else None,
            "assertions": [r.to_dict() for r in results or []],
            "table": (self.result.table[:500] if self.result else []),
            "notes": self.result.notes if self.result else [],
            "values": (self.result.values if self.result else {}),
            "golden": ({"path": str(golden_out.path), "status": golden_out.status,
                        "artifacts": [str(p) for p in golden_out.artifacts]} if golden_out else None),
            "duration_s": round(time.perf_counter() - self._t0, 4),
        }
        text = strictjson.dumps(to_builtin(record), sort_keys=True, default=str)
        self.user_properties[:] = [p for p in self.user_properties if p[0] != PAYLOAD_KEY]
        self.user_properties.append((PAYLOAD_KEY, text))



def _register_marker(config: pytest.Config, tag: str) -> None:
    """Declare a case tag as a marker (so ``-m tag`` works, also under ``--strict-markers``)."""
    if not any(line.split(":", 1)[0].strip() == tag for line in config.getini("markers")):
        config.addinivalue_line("markers", f"{tag}: validation case tag (from the case YAML)")


def _display_path(path: Path, root: Path) -> str:
    """``path`` relative to the rootdir when inside it (stable across checkouts), else absolute."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def record_of(user_properties: list[tuple[str, Any]]) -> dict[str, Any] | None:
    """The payload recorded by a ``CaseItem`` (None for other items)."""
    for key, value in user_properties:
        if key == PAYLOAD_KEY:
            record: dict[str, Any] = json.loads(value)
            return record
    return None




def golden_root_for(cases_root: Path) -> Path:
    """The project's golden folder for the project's cases; ``golden/`` beside any other cases folder."""
    project = paths.project()
    if cases_root.resolve() == project.cases:
        return project.golden
    return cases_root.parent / "golden"
