"""``ndval validate``: run every case (pytest -n auto), write all reports, print where they are and the verdict.

Exit status is the gate's: 0 pass, 1 gate failed, 2 broken input (see ``ndval.harness.gate``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ndval.harness import gate, paths, releaseset, reportlock
from ndval.harness.workers import choose_workers, previous_work_s, usable_cpus


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cases", action="append", default=[], metavar="GLOB", help="only case files matching GLOB")
    parser.add_argument("-n", "--workers", default="auto", type=worker_option,
                        help="pytest-xdist workers (default auto: chosen by the amount of work, serial on 2 cores; "
                             "0 = no xdist)")
    parser.add_argument("--lf", "--last-failed", dest="last_failed", action="store_true",
                        help="rerun only the cases that failed or broke in the last run (a PARTIAL report)")
    parser.add_argument("--ff", "--failed-first", dest="failed_first", action="store_true",
                        help="run the cases that failed last time first, then the others (pytest --ff)")
    parser.add_argument("--sw", "--stepwise", dest="stepwise", action="store_true",
                        help="stop at the first failure and resume from it next time (pytest --sw; a PARTIAL report)")
    parser.add_argument("-k", dest="keyword", default=None, help="pytest -k expression over case ids and points")
    parser.add_argument("-m", dest="markexpr", default=None, metavar="EXPR",
                        help="pytest -m expression over case tags (e.g. -m seed, -m 'not slow')")
    parser.add_argument("-x", "--exitfirst", dest="exitfirst", action="store_true",
                        help="stop after the first failed or broken case (pytest -x)")
    parser.add_argument("--update-golden", action="store_true", help="rewrite missing/mismatching goldens, still fail")
    parser.add_argument("--regen-all-golden", action="store_true", help="rewrite every selected golden and pass")
    parser.add_argument("--prune-golden", action="store_true",
                        help="delete the golden files no case uses (listed as unused otherwise)")
    parser.add_argument("--baseline", default=None, metavar="SUMMARY.json", help="previous summary for the regression rule")
    parser.add_argument("--strict-waivers", action="store_true", help="waivers excuse nothing; stale waivers fail")
    parser.add_argument("--subject", default=None, metavar="NAME",
                        help="subject under test: ndval (default), an ndval.subjects entry point, or a command of "
                             "[tool.ndval.subjects.NAME] (default: the project's subject setting)")
    parser.add_argument("--require-real-data", action="store_true",
                        help="items skipped for missing real data fail the gate (also NDVAL_REQUIRE_REAL_DATA=1, set in CI)")
    parser.add_argument("--reports", default=None, metavar="DIR", help="reports folder (default reports/)")
    parser.add_argument("--no-allure-report", action="store_true",
                        help="do not render the Allure report after the run (default: rendered as one index.html "
                             "when an Allure 3 command line is installed locally)")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra pytest arguments after --")


#: pytest options that select a subset of the cases (the run then writes a PARTIAL report)
SUBSET_OPTIONS = ("-k", "-m", "--lf", "--last-failed", "--ff", "--deselect", "--sw", "--stepwise")


def is_subset(args: argparse.Namespace) -> bool:
    """Whether this invocation runs only part of the cases (its reports go to ``reports/partial/``)."""
    extra = [a for a in args.pytest_args if a != "--"]
    return bool(args.cases or args.keyword or args.last_failed or args.markexpr or args.stepwise or args.exitfirst or
                args.failed_first or
                any(a.split("=", 1)[0] in SUBSET_OPTIONS or "::" in a for a in extra))


def selection(args: argparse.Namespace) -> str:
    """The selection options of this invocation, as the user would write them (for messages)."""
    words = [f"--cases {g}" for g in args.cases]
    words += [f"-k {args.keyword!r}"] if args.keyword else []
    words += [f"-m {args.markexpr!r}"] if args.markexpr else []
    words += [a for a in args.pytest_args if a != "--"]
    return " ".join(words)


def worker_option(text: str) -> str:
    """``-n``: ``auto``, ``no``, or a count ≥ 0 (anything else, or a count beyond int64, is the usage error)."""
    if text in ("auto", "no") or (text.isdigit() and len(text) < 19):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not auto, no or a worker count (an integer ≥ 0)")


def workers(args: argparse.Namespace, reports: Path) -> int:
    """The worker count: as given (capped at the usable CPUs, said on stderr), or (``auto``) chosen by the work
    of the last full run."""
    if str(args.workers) in ("0", "no"):
        return 0
    if str(args.workers) != "auto":
        n, cpus = int(args.workers), usable_cpus()
        if n > cpus:
            print(f"ndval validate: -n {n} capped at the {cpus} usable CPUs", file=sys.stderr)
        return min(n, cpus)
    return choose_workers(usable_cpus(), previous_work_s(reports / "summary.json"))


def pytest_command(args: argparse.Namespace, reports: Path, n_workers: int | None = None,
                   into: Path | None = None) -> list[str]:
    """The pytest command line ``validate`` runs (also shown in the sign-off report); its reports are written
    into ``into`` (the staging folder, ``ndval.harness.releaseset``), by default ``reports``."""
    base = into or reports
    out = base / "partial" if is_subset(args) else base
    cmd = [sys.executable, "-m", "pytest", str(paths.cases_dir()), "-q",
           f"--junitxml={out / 'junit.xml'}", f"--alluredir={out / 'allure-results'}",
           f"--signoff={base / 'signoff.md'}", f"--ndval-reports={base}", "-o", "junit_suite_name=ndval"]
    n = workers(args, reports) if n_workers is None else n_workers
    cmd += ["-n", str(n)] if n else ["-p", "no:xdist"]
    if args.last_failed:
        cmd += ["--lf", "--lfnf", "none"]
    for glob in args.cases:
        cmd += ["--cases", glob]
    if args.failed_first:
        cmd.append("--ff")
    if args.stepwise:
        cmd.append("--sw")
    if args.keyword:
        cmd += ["-k", args.keyword]
    if args.markexpr:
        cmd += ["-m", args.markexpr]
    if args.exitfirst:
        cmd.append("-x")
    if args.subject:
        cmd += ["--subject", args.subject]
    for flag in ("update_golden", "regen_all_golden", "prune_golden", "strict_waivers", "require_real_data"):
        if getattr(args, flag):
            cmd.append("--" + flag.replace("_", "-"))
    if args.baseline:
        cmd += ["--baseline", str(Path(args.baseline).resolve())]
    extra = [a for a in args.pytest_args if a != "--"]
    return cmd + extra


@contextlib.contextmanager
def reports_lock(reports: Path) -> Iterator[int | None]:
    """Hold the reports lock (``ndval.harness.reportlock``) for the whole run; yields the locked descriptor,
    which the pytest child inherits so that it holds the lock too."""
    fh = reportlock.acquire(reports, "ndval validate")
    try:
        yield fh.fileno() if fh is not None else None
    finally:
        reportlock.release(fh)


def run(args: argparse.Namespace) -> int:
    if args.reports == "-":
        print("ndval validate: --reports names a folder (summary.json, junit.xml, allure-results, the sign-off); "
              "'-' (stdout) cannot hold them: give a folder", file=sys.stderr)
        return gate.EXIT_BROKEN_INPUT
    reports = Path(args.reports).resolve() if args.reports else paths.reports_dir()
    from ndval.harness.session import ReportWriteError, report_write_errors

    try:
        with report_write_errors(reports):
            reports.mkdir(parents=True, exist_ok=True)
            with reports_lock(reports) as lock_fd:
                return _run_locked(args, reports, lock_fd)
    except ReportWriteError as exc:
        print(f"ndval validate: {exc}; the previous reports in {reports} are left as they were; broken input "
              f"(exit {gate.EXIT_BROKEN_INPUT})", file=sys.stderr)
        return gate.EXIT_BROKEN_INPUT


def allure_report(out: Path, reports: Path) -> str:
    """Render ``out/allure-report/index.html`` (one file) when a local Allure 3 command line exists; the line to
    print. A release run carries the history file over (trends); a PARTIAL run's report has no history."""
    from ndval.harness.commands import report

    results = out / "allure-results"
    if not any(results.glob("*-result.json")):
        return ""
    cmd = report.allure_command(allow_download=False)
    if cmd is None:
        return report.missing_message(results).replace("\n", "\n  ")
    history = reports / report.HISTORY_FILE if out == reports else None
    code, message = report.generate(cmd, results, out / "allure-report", history)
    return message if code == 0 else f"{message} (the gate is not affected)"


class _Interrupt:
    """SIGINT/SIGTERM during the run: remembered, and the pytest child is stopped (its set is then discarded)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Interrupt:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, _frame: object) -> None:
        self.signum = self.signum or signum
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.terminate()

    def wait(self) -> int:
        """The child's exit status (waits for it; a child that ignores SIGTERM is killed after 30 s)."""
        assert self.proc is not None
        while True:
            try:
                return self.proc.wait(timeout=30 if self.signum else None)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _interrupted_exit(signum: int, reports: Path) -> int:
    name = signal.Signals(signum).name
    print(f"ndval validate: interrupted by {name}; no report written, the previous reports in {reports} are left "
          f"as they were (exit {128 + signum})", file=sys.stderr, flush=True)
    return 128 + signum


def _run_child(cmd: list[str], env: dict[str, str], lock_fd: int | None) -> tuple[int, int | None]:
    """Run pytest; (its exit status, the signal that interrupted the run or None)."""
    with _Interrupt() as guard:
        guard.proc = subprocess.Popen(cmd, cwd=paths.project().root, env=env,
                                      pass_fds=(lock_fd,) if lock_fd is not None else ())
        code = guard.wait()
        return code, guard.signum


def _run_locked(args: argparse.Namespace, reports: Path, lock_fd: int | None = None) -> int:
    for old in releaseset.stale_stages(reports):
        releaseset.discard(old)
    stage = releaseset.new_stage(reports)
    try:
        return _run_staged(args, reports, stage, lock_fd)
    finally:
        releaseset.discard(stage)


def _run_staged(args: argparse.Namespace, reports: Path, stage: Path, lock_fd: int | None) -> int:
    cmd = pytest_command(args, reports, into=stage)
    print("running:", " ".join(cmd), flush=True)
    project = paths.project()
    print(project.describe(), flush=True)
    env = {**os.environ, "NDVAL_PROJECT_ROOT": str(project.root)}
    if lock_fd is not None:  # the child shares the lock: it outlives this process if this one is killed
        env[reportlock.FD_ENV] = str(lock_fd)
    returncode, signum = _run_child(cmd, env, lock_fd)
    if signum is not None:
        return _interrupted_exit(signum, reports)
    staged = releaseset.staged_summary(stage)
    if staged is None:
        if args.last_failed and returncode == 5:
            print("ndval validate --lf: no failed case recorded by the last run; nothing to rerun")
            return gate.EXIT_PASS
        if returncode == 5:  # pytest's "no tests collected"
            print(f"ndval validate: no case matched the selection ({selection(args) or 'every case'} under "
                  f"{paths.cases_dir()}); nothing to run: broken input (exit {gate.EXIT_BROKEN_INPUT})", file=sys.stderr)
            return gate.EXIT_BROKEN_INPUT
        return _failed_exit(f"no summary written (pytest exit {returncode})", stage, reports)
    summary = json.loads(staged.read_text(encoding="utf-8"))
    problem = releaseset.incomplete(staged.parent)
    if problem is None and returncode == gate.EXIT_BROKEN_INPUT and summary["gate"]["exit_code"] != returncode:
        problem = f"a report could not be written (pytest exit {returncode}, see above)"
    if problem is None and releaseset.disk_full(stage):  # a worker's Allure file may be missing: never half a set
        problem = "the reports disk filled up during the run"
    if problem:
        return _failed_exit(problem, stage, reports)
    out = reports / "partial" if staged.parent != stage else reports
    releaseset.swap_in(staged.parent, out, stage, reports)
    return _print_outcome(args, summary, out, reports)


def _failed_exit(problem: str, stage: Path, reports: Path) -> int:
    cause = releaseset.failure_cause(stage)
    print(f"ndval validate: {problem}{'; ' + cause if cause else ''}; the previous reports in {reports} are left as "
          f"they were; broken input (exit {gate.EXIT_BROKEN_INPUT})", file=sys.stderr, flush=True)
    return gate.EXIT_BROKEN_INPUT


def _print_outcome(args: argparse.Namespace, summary: dict[str, Any], out: Path, reports: Path) -> int:
    if out != reports:
        print(f"\nPARTIAL run ({summary['run'].get('partial')}): reports in {out}; the release sign-off "
              f"{reports / 'signoff.md'} is left as it was")
    allure_line = "" if getattr(args, "no_allure_report", False) else allure_report(out, reports)
    print("\nreports:")
    for name in ("summary.json", "junit.xml", "allure-results", "signoff.md", "signoff.html"):
        p = out / name
        print(f"  {p}{'' if p.exists() else '  (missing)'}")
    print("  " + (allure_line or "render the Allure HTML with: ndval report"))
    if summary["criteria"]:  # the project's own (its cases tree's gate.yaml), none when it declares none
        crit = ", ".join(f"{c['id']}={c['status']}" for c in summary["criteria"])
        print(f"{(summary.get('release') or {}).get('criteria_title', 'criteria')}: {crit}")
    g = summary["gate"]
    print(f"gate verdict: {g['verdict']} (exit {g['exit_code']})")
    return int(g["exit_code"])
