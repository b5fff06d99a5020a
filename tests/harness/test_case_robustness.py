"""One bad case file is that file's collection error, never the run's; bombs and oversized values are refused
quickly; report-writing faults name their cause and exit 2; the reports lock is held by pytest itself.

Every case file here is SYNTHETIC (``conftest.synthetic_case``) or a deliberately broken text.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from ndval.core.yamlsrc import CaseError
from ndval.harness import reportlock
from ndval.harness.cases import load_case_file
from ndval.harness.commands.lint import lint_paths
from ndval.harness.gate import EXIT_BROKEN_INPUT, EXIT_PASS
from tests.harness.conftest import synthetic_case

BAD_FILES = {
    "complex-key": "? [a, b]\n: 1\n",
    "merge-key": "base: &b {title: x}\nid: m\n<<: *b\n",
    "nul-byte": "id: a\x00b\n",
    "python-tag-on-key": "!!python/object:os.system x: 1\n",
    "python-tag-on-scalar": "id: !!python/name:os.system\n",
    "invalid-date": "id: d\nwaiver: {reason: synthetic reason text, owner: t, issue: x, expires: 2024-02-30}\n",
    "5000-deep-list": "id: " + "[" * 5000 + "]" * 5000 + "\n",
}


def _laughs() -> str:
    """A 332-byte billion-laughs case file: 9^8 values once the aliases are expanded."""
    lines = ["id: lol-bomb", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefg", "bcdefgh", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\ni: [*h, *h]\n"


def _matrix_bomb() -> str:
    """A ~600-byte case whose matrix of 8 keys × 10 values is 10^8 points."""
    keys = "\n".join(f"  p{k}: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]" for k in range(8))
    return synthetic_case("bomb") + "params: {}\nmatrix:\n" + keys + "\n"


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_each_bad_file_is_a_case_error_with_file_and_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / "validation_cases" / f"{name}.case.yaml"
    path.parent.mkdir()
    path.write_text(BAD_FILES[name], encoding="utf-8")
    with pytest.raises(CaseError) as info:
        load_case_file(path, path.parent)
    assert info.value.file == str(path) and info.value.line is not None


@pytest.mark.parametrize("name", list(BAD_FILES))
def test_a_bad_file_breaks_only_itself(pytester: pytest.Pytester, cases, summary, name: str) -> None:
    """The session-finish hook reloaded every case file and caught only CaseError: a traceback, no summary."""
    cases("good.case.yaml", synthetic_case("good"))
    bad = pytester.path / "validation_cases" / "zz_bad.case.yaml"
    bad.write_text(BAD_FILES[name], encoding="utf-8")
    selected = pytester.runpytest("validation_cases", "--cases", "good.case.yaml", "-p", "no:xdist")
    partial = pytester.path / "reports" / "partial" / "summary.json"  # a --cases selection is a PARTIAL run
    assert selected.ret == EXIT_PASS and json.loads(partial.read_text())["counts"]["passed"] == 1
    everything = pytester.runpytest("validation_cases", "-p", "no:xdist")
    assert everything.ret == EXIT_BROKEN_INPUT
    (err,) = summary()["collection_errors"]
    assert "zz_bad.case.yaml" in err["nodeid"] and summary()["counts"]["passed"] == 1
    assert "INTERNALERROR" not in everything.stdout.str() + everything.stderr.str()


@pytest.mark.parametrize(("text", "size", "rule"), [
    (_laughs(), 332, "YAML aliases"),
    (_matrix_bomb(), None, "more than 10,000 per case"),
], ids=["billion-laughs", "matrix-bomb"])
def test_expansion_bombs_are_refused_within_1s_and_100MB(tmp_path: Path, text: str, size: int | None, rule: str) -> None:
    path = tmp_path / "validation_cases" / "bomb.case.yaml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    assert size is None or len(text.encode()) == size
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        loaded = load_case_file(path, path.parent)
        errors = [str(e) for _, e in loaded.errors]
    except CaseError as exc:
        errors = [str(exc)]
    elapsed, (_, peak) = time.perf_counter() - t0, tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert any(rule in e for e in errors), errors
    assert elapsed < 1.0 and peak < 100 * 2**20


@pytest.mark.parametrize(("extra", "rule"), [
    ("matrix: {x: []}\nparams: {}\n", "needs at least one value"),
    ("tags: [" + "t" * 200_000 + "]\n", "longer than 100,000 characters"),
    ("params: {" + "k" * 300 + ": 1}\n", "key longer than 200"),
    ("params: {a: " + "[" * 100 + "]" * 100 + "}\n", "nested deeper than 64"),
], ids=["empty-matrix-key", "long-string", "long-key", "deep-nesting"])
def test_limits_are_clear_lint_errors(tmp_path: Path, extra: str, rule: str) -> None:
    path = tmp_path / "validation_cases" / "limits.case.yaml"
    path.parent.mkdir()
    path.write_text(synthetic_case("limits") + extra, encoding="utf-8")
    n_ok, errors = lint_paths([path])
    assert n_ok == 0 and len(errors) == 1 and rule in errors[0] and str(path) in errors[0]


def test_an_id_that_cannot_be_a_file_name_is_refused_by_lint(tmp_path: Path) -> None:
    path = tmp_path / "validation_cases" / "long_id.case.yaml"
    path.parent.mkdir()
    path.write_text(synthetic_case("short").replace("id: short", "id: " + "x" * 100_000), encoding="utf-8")
    n_ok, errors = lint_paths([path])
    assert n_ok == 0 and len(errors) == 1 and "field 'id'" in errors[0]


def test_symlinked_case_file_is_refused_by_lint_and_run_alike(pytester: pytest.Pytester, cases, summary, tmp_path: Path) -> None:
    """Lint counted a symlinked case file, the run never collected it."""
    target = tmp_path / "elsewhere.case.yaml"
    target.write_text(synthetic_case("linked"), encoding="utf-8")
    cases("good.case.yaml", synthetic_case("good"))
    link = pytester.path / "validation_cases" / "linked.case.yaml"
    link.symlink_to(target)
    n_ok, errors = lint_paths([pytester.path / "validation_cases"])
    assert n_ok == 1 and len(errors) == 1 and "symbolic link" in errors[0]
    result = pytester.runpytest("validation_cases", "-p", "no:xdist")
    assert result.ret == EXIT_BROKEN_INPUT
    (err,) = summary()["collection_errors"]
    assert "linked.case.yaml" in err["nodeid"] and "symbolic link" in err["message"]


@pytest.mark.parametrize(("code", "cause"), [(errno.EROFS, "read-only file system"),
                                             (errno.ENOSPC, "no space left on device")])
def test_report_write_errors_name_their_cause_and_exit_2(pytester: pytest.Pytester, cases, monkeypatch: pytest.MonkeyPatch,
                                                         code: int, cause: str) -> None:
    """A read-only reports folder exited 1 (the gate-failed code) with a traceback; a full disk gave INTERNALERROR."""
    from ndval.core import atomic

    def refuse(path: Path, data: bytes) -> Path:
        raise OSError(code, os.strerror(code), str(path))

    cases("good.case.yaml", synthetic_case("good"))
    monkeypatch.setattr(atomic, "write_bytes", refuse)
    result = pytester.runpytest("validation_cases", "-p", "no:xdist")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == EXIT_BROKEN_INPUT and "INTERNALERROR" not in out
    assert cause in out and "summary.json" in out


def test_report_folder_name_too_long_exits_2(pytester: pytest.Pytester, cases) -> None:
    cases("good.case.yaml", synthetic_case("good"))
    result = pytester.runpytest("validation_cases", "-p", "no:xdist", f"--ndval-reports={pytester.path / ('r' * 300)}")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == EXIT_BROKEN_INPUT and "file name too long" in out and "INTERNALERROR" not in out


def test_the_pytest_run_itself_holds_the_reports_lock(pytester: pytest.Pytester, cases) -> None:
    """The lock was the wrapper's only: a pytest child orphaned by ``kill -9`` and a new run deleted each other's files.

    Another process holds the lock until the pytest run over the cases says it is waiting for it; only then is
    it released, and the run finishes. No timing is assumed (a fixed hold time raced the run's start-up on a
    loaded machine, under xdist first), so it runs under xdist too."""
    cases("good.case.yaml", synthetic_case("good"))
    reports = pytester.path / "reports"
    env = {k: v for k, v in os.environ.items() if k != reportlock.FD_ENV and not k.startswith("PYTEST_")}
    holder = subprocess.Popen([sys.executable, "-c", "import sys; from pathlib import Path; from ndval.harness import reportlock; "
                               f"fh = reportlock.acquire(Path({str(reports)!r}), 'holder'); print('held', flush=True); "
                               "sys.stdin.readline()"],
                              env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None and holder.stdout.readline().strip() == "held"
    run = subprocess.Popen([sys.executable, "-m", "pytest", "validation_cases", "-p", "no:xdist", "-p", "no:cacheprovider",
                            "-q", f"--ndval-reports={reports}"], cwd=pytester.path, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert run.stderr is not None
        first = run.stderr.readline()  # blocks until the run reports the held lock (or exits: then it did not wait)
        assert "another run is writing" in first, (first, run.stderr.read())
        assert run.poll() is None and not (reports / "summary.json").exists()  # waiting, nothing written yet
    finally:
        holder.stdin.close()  # the holder exits and the lock goes with it
        holder.wait(timeout=60)
    out, err = run.communicate(timeout=300)
    assert run.returncode == EXIT_PASS, (out, err)
    assert (reports / "summary.json").is_file()


def test_inherited_lock_descriptor_is_reused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fh = reportlock.acquire(tmp_path, "test")
    assert fh is not None
    monkeypatch.setenv(reportlock.FD_ENV, str(fh.fileno()))
    assert reportlock.inherited() == fh.fileno()
    reportlock.release(fh)
    assert reportlock.inherited() is None
