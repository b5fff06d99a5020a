"""Targeted mutation check: break the seed formulas, the analyzer's weights and gain factors and the
harness assertion bands on purpose, one at a time, and run the tests that should notice.

Each mutant is an exact text substitution (``old`` -> ``new``, ``old`` must occur exactly once) in a
temporary copy of the repository; the copy is imported instead of the checkout (``PYTHONPATH``), so
the working tree is never modified. A mutant is *killed* when its tests fail, *survives* when they
pass, and is *stale* when its ``old`` text is no longer in the file (the code moved: update the list).

    python tools/mutation.py               # all mutants (make test-mutation)
    python tools/mutation.py -k severity   # only ids containing "severity"
    python tools/mutation.py --list        # the mutants, nothing run

Exit status: 0 every mutant killed; 1 at least one survived; 2 stale mutants, a mutant run that
errored (collection/import error: the environment, not the mutant) or a failing baseline.
The per-mutant results (with the first failing test and its assertion) go to
``reports/mutation.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tools.mutants import MUTANTS, Mutant  # noqa: E402

#: the text of a skip for absent ../shared data (tests/conftest.py ``_require``)
DATA_SKIP = "not available at"
#: per-mutant wall-clock limit (a mutant that hangs counts as killed by timeout)
TIMEOUT_S = 300


@dataclass(frozen=True)
class Outcome:
    """Result of one mutant."""

    id: str
    group: str
    status: str  # killed | survived | stale | timeout | error
    seconds: float
    failure: str
    path: str
    old: str
    new: str


def _files(repo: Path) -> list[str]:
    """Tracked and untracked-but-not-ignored files (git), else everything but caches and the venv."""
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=repo, check=True,
                             capture_output=True, text=True).stdout
        return [f for f in out.splitlines() if (repo / f).is_file()]
    except (OSError, subprocess.CalledProcessError):
        skip = {".git", ".venv", "reports", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache", ".hypothesis"}
        return [str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() and not skip & set(p.parts)]


def make_workspace(repo: Path, root: Path) -> Path:
    """Copy the repository's files to ``root/repo`` and return it."""
    ws = root / "repo"
    for rel in _files(repo):
        dest = ws / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / rel, dest)
    return ws


def _env(ws: Path) -> dict[str, str]:
    from ndval.harness import paths

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ws) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("NDVAL_SHARED_DIR", str(paths.shared_dir()))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["COLUMNS"] = "400"  # pytest's short summary keeps the assertion text
    return env


def run_tests(ws: Path, tests: Sequence[str], timeout_s: float = TIMEOUT_S) -> tuple[int, str]:
    """pytest on ``tests`` inside the workspace: (exit code, output); 124 on timeout."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
           "-o", "addopts=", "-rfs", "--tb=line", "--no-header", *tests]
    try:
        proc = subprocess.run(cmd, cwd=ws, env=_env(ws), capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return 124, "timeout"
    return proc.returncode, (proc.stdout + proc.stderr).replace(str(ws) + os.sep, "")


def first_failure(output: str) -> str:
    """The first ``FAILED`` line of a pytest summary, plus the assertion line (``--tb=line``)."""
    lines = output.splitlines()
    failed = next((ln for ln in lines if ln.startswith(("FAILED", "ERROR"))), "")
    where = next((ln for ln in lines if ln.startswith("tests" + os.sep) and ": " in ln), "")
    return " | ".join(x for x in (failed, where) if x)[:600]


def check_import_location(ws: Path) -> None:
    """The workspace copy, not the checkout, must be the one imported."""
    code = "import estimator, analyzer, ndval.harness; print(estimator.__file__, analyzer.__file__, ndval.harness.__file__)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ws, env=_env(ws), capture_output=True, text=True).stdout
    if any(not p.startswith(str(ws)) for p in out.split()):
        raise SystemExit(f"mutation: the workspace copy is not the one imported ({out.strip()}); aborting")


def apply(ws: Path, m: Mutant) -> str | None:
    """Write the mutant into the workspace; return the original text, or None when ``old`` is not unique."""
    path = ws / m.path
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if text.count(m.old) != 1:
        return None
    path.write_text(text.replace(m.old, m.new), encoding="utf-8")
    return text


def run_mutant(ws: Path, m: Mutant) -> Outcome:
    """Apply, test, restore."""
    start = time.monotonic()
    original = apply(ws, m)
    if original is None:
        return Outcome(m.id, m.group, "stale", 0.0, f"'old' text not found exactly once in {m.path}", m.path, m.old, m.new)
    try:
        rc, out = run_tests(ws, m.tests)
    finally:
        (ws / m.path).write_text(original, encoding="utf-8")
    # pytest: 0 passed, 1 tests failed, 5 nothing collected; 2-4 = interrupted (e.g. a collection or import
    # error), internal or usage error: the environment, not the mutant, decided — reported as "error"
    status = {0: "survived", 1: "killed", 124: "timeout", 5: "survived"}.get(rc, "error")
    failure = {"killed": first_failure(out), "survived": "", "timeout": "timeout"}.get(status, out[-300:])
    if rc == 5:
        failure = "no tests collected (pytest exit 5)"
    return Outcome(m.id, m.group, status, round(time.monotonic() - start, 1), failure, m.path, m.old, m.new)


def baseline(ws: Path, mutants: Sequence[Mutant]) -> None:
    """Every selected test passes unmutated, and none skips for missing data (a mutant would survive unseen).

    Skips with another reason (a test blocked by unpublished data says so) are allowed.
    """
    tests = sorted({t for m in mutants for t in m.tests})
    rc, out = run_tests(ws, tests, timeout_s=TIMEOUT_S * 3)
    skipped = [ln for ln in out.splitlines() if ln.startswith("SKIPPED") and DATA_SKIP in ln]
    if rc != 0 or skipped:
        print(out[-3000:], file=sys.stderr)
        raise SystemExit(f"mutation: baseline run of {len(tests)} test file(s) {'failed' if rc else 'skipped tests'}; "
                         "fix that first (skips usually mean ../shared/data is absent: set NDVAL_SHARED_DIR)")


def write_report(outcomes: Sequence[Outcome], path: Path) -> None:
    """Atomic JSON write of the outcomes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps([asdict(o) for o in outcomes], indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="keyword", default="", help="only mutants whose id contains this text")
    ap.add_argument("-g", dest="group", default="", help="only mutants of this group (e.g. seed-formula)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--json", type=Path, default=REPO / "reports" / "mutation.json", help="results file")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated run (faster reruns)")
    ap.add_argument("--tests", nargs="+", default=None, metavar="NODE",
                    help="run these pytest node ids for every selected mutant instead of its own list")
    args = ap.parse_args(argv)
    selected = [m for m in MUTANTS if args.keyword in m.id and args.group in m.group]
    if args.tests:
        selected = [replace(m, tests=tuple(args.tests)) for m in selected]
    if args.list:
        for m in selected:
            print(f"{m.id:42s} {m.group:18s} {m.path}  —  {m.why}")
        return 0
    if not selected:
        print(f"mutation: no mutant id contains {args.keyword!r}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ndval-mutation-") as tmp:
        ws = make_workspace(REPO, Path(tmp))
        check_import_location(ws)
        if not args.no_baseline:
            print(f"baseline: {len({t for m in selected for t in m.tests})} test file(s) unmutated ...", flush=True)
            baseline(ws, selected)
        outcomes = []
        for i, m in enumerate(selected, start=1):
            o = run_mutant(ws, m)
            outcomes.append(o)
            print(f"[{i:2d}/{len(selected)}] {o.status:8s} {m.id:42s} {o.seconds:6.1f} s  {o.failure[:140]}", flush=True)
    write_report(outcomes, args.json)
    counts = {s: sum(o.status == s for o in outcomes) for s in ("killed", "timeout", "survived", "stale", "error")}
    print("mutation: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(outcomes)}; details in {args.json}")
    for o in outcomes:
        if o.status in ("survived", "stale", "error"):
            print(f"  {o.status.upper()}: {o.id} ({o.path}): {o.failure or 'tests still pass'}")
    if counts["stale"] or counts["error"]:
        return 2
    return 1 if counts["survived"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
