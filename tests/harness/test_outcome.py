"""ndval.harness.outcome: the per-item status and waiver rules on plain records (no pytest run)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ndval.harness import outcome
from ndval.harness.results import AssertionResult


@dataclass
class W:
    issue: str = "ISSUE-1"
    assertions: list[str] | None = None


def res(name: str, passed: bool, evaluable: bool = True) -> AssertionResult:
    return AssertionResult(type="t", id=name, target="-", observed=None, expected="-", margin=None,
                           passed=passed, message="", evaluable=evaluable)


def run(results: list[AssertionResult], waiver: W | None = None, strict: bool = False,
        broken: tuple[str, ...] = ()) -> outcome.Outcome:
    outcome.apply_waiver(results, waiver, strict)
    return outcome.decide(results, list(broken), waiver, strict)


def test_all_pass_is_passed() -> None:
    out = run([res("a", True), res("b", True)])
    assert out.status == "passed" and not out.fails and not out.stale


def test_unwaived_failure_fails() -> None:
    out = run([res("a", True), res("b", False)])
    assert out.status == "failed" and [r.id for r in out.failed] == ["b"]


def test_waiver_excuses_only_the_assertions_it_names() -> None:
    out = run([res("a", False), res("b", False)], W(assertions=["a"]))
    assert out.status == "failed" and [r.id for r in out.waived] == ["a"] and [r.id for r in out.failed] == ["b"]
    out = run([res("a", False), res("b", True)], W(assertions=["a"]))
    assert out.status == "waived" and not out.fails


def test_waiver_does_not_excuse_what_cannot_be_evaluated() -> None:
    out = run([res("a", False, evaluable=False)], W(), broken=("a: bad column",))
    assert out.status == "error" and not out.waived


@pytest.mark.parametrize("strict,status", [(False, "passed"), (True, "failed")])
def test_stale_waiver_is_a_note_or_under_strict_a_failure(strict: bool, status: str) -> None:
    out = run([res("a", True)], W(), strict=strict)
    assert out.stale and out.status == status and "ISSUE-1" in out.notes[0]


def test_strict_waivers_excuse_nothing() -> None:
    out = run([res("a", False)], W(), strict=True)
    assert out.status == "failed" and not out.waived
