"""The CI gate: declarative rules over the session summary, the seed's acceptance criteria, exit codes.

Exit codes (``ndval validate`` and ``pytest`` over the cases):
``EXIT_PASS`` 0 — every rule holds; ``EXIT_GATE_FAILED`` 1 — a rule fails on valid input (a blocker or
major criterion failed unwaived, golden drift, an expired waiver, a regression);
``EXIT_BROKEN_INPUT`` 2 — the input could not be judged (a case file invalid, data missing, a
kind that cannot run, no case collected). Broken input wins over a gate failure: a verdict over
partially broken input is not a verdict.
"""

from __future__ import annotations

from typing import Any

EXIT_PASS = 0
EXIT_GATE_FAILED = 1
EXIT_BROKEN_INPUT = 2

#: minimum number of case items a run over the whole tree must collect
MIN_CASES = 1


def assertion_status(a: dict[str, Any]) -> str:
    if not a.get("evaluable", True):
        return "not_evaluable"
    if a.get("passed"):
        return "passed"
    return "waived" if a.get("waived") else "failed"


def regressions_against(baseline: dict[str, Any], cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Assertions that passed in ``baseline`` and do not pass now (or whose case disappeared)."""
    now = {(c["nodeid"], a["id"]): a for c in cases for a in c.get("assertions", [])}
    now_nodes = {c["nodeid"] for c in cases}
    out = []
    for c in baseline.get("cases", []):
        for a in c.get("assertions", []):
            if not a.get("passed"):
                continue
            key = (c["nodeid"], a["id"])
            if c["nodeid"] not in now_nodes:
                out.append({"nodeid": c["nodeid"], "assertion": a["id"], "was": "passed", "now": "missing"})
            elif key in now and not now[key].get("passed"):
                out.append({"nodeid": c["nodeid"], "assertion": a["id"], "was": "passed", "now": assertion_status(now[key]),
                            "observed_before": a.get("observed"), "observed_now": now[key].get("observed")})
    return out


def _real_data_rule(cases: list[dict[str, Any]], required: bool) -> dict[str, Any]:
    """Skipped items (their real data absent: ``../shared`` missing, a profile not there) fail the gate as
    broken input when real data is required (``--require-real-data``, on in CI); otherwise they are counted.
    Items skipped because the subject under test does not run their kind (``ndval.harness.subjects.skip_reason``:
    the message begins with ``subject '``) lost no data and are not counted."""
    skipped = [c["nodeid"] for c in cases if c["status"] == "skipped" and not c.get("message", "").startswith("subject '")]
    ok = not skipped or not required
    return {"rule": "real data present", "threshold": "0 items skipped for missing data" if required
            else "n/a (real data not required: --require-real-data / NDVAL_REQUIRE_REAL_DATA=1)",
            "actual": len(skipped), "status": "pass" if ok else "fail", "kind": "input", "items": skipped}


def evaluate_gate(summary: dict[str, Any], min_cases: int = MIN_CASES) -> dict[str, Any]:
    """Apply the gate rules to a summary; returns {verdict, exit_code, rules: [{rule, threshold, actual, status}]}."""
    cases = summary["cases"]
    errors = summary["collection_errors"]
    expired = [e for e in errors if "waiver expired" in e.get("message", "")]
    broken_files = [e for e in errors if e not in expired]
    broken_cases = [c for c in cases if c["status"] == "error"]
    blocking = [c for c in cases if c["status"] == "failed" and any(
        not a["passed"] and not a.get("waived") and a.get("severity") in ("blocker", "major") for a in c["assertions"])]
    minor = [c for c in cases if c["status"] == "failed" and c not in blocking]
    drift = [c for c in cases if (c.get("golden") or {}).get("status") not in (None, "match", "regenerated")]
    regressions = summary.get("regressions")
    n_items = len(cases)

    def rule(name: str, threshold: str, actual: Any, ok: bool, broken: bool = False, items: list[Any] | None = None) -> dict[str, Any]:
        return {"rule": name, "threshold": threshold, "actual": actual, "status": "pass" if ok else "fail",
                "kind": "input" if broken else "gate", "items": items or []}

    rules = [
        rule("case files valid", "0 collection errors", len(broken_files), not broken_files, True,
             [e["nodeid"] for e in broken_files]),
        rule("cases runnable", "0 broken cases", len(broken_cases), not broken_cases, True, [c["nodeid"] for c in broken_cases]),
        rule("cases collected", f">= {min_cases}", n_items, n_items >= min_cases, True),
        rule("no unwaived blocker/major failure", "0", len(blocking), not blocking, items=[c["nodeid"] for c in blocking]),
        rule("no expired waiver", "0", len(expired), not expired, items=[e["nodeid"] for e in expired]),
        rule("no golden drift", "0 missing/mismatching goldens", len(drift), not drift, items=[c["nodeid"] for c in drift]),
        _real_data_rule(cases, bool((summary.get("run") or {}).get("require_real_data"))),
        rule("no regression vs baseline", "0" if regressions is not None else "n/a (no --baseline)",
             len(regressions) if regressions is not None else "n/a", not regressions,
             items=[f"{r['nodeid']}::{r['assertion']}" for r in regressions or []]),
    ]
    if any(r["status"] == "fail" and r["kind"] == "input" for r in rules):
        verdict, code = "BROKEN INPUT", EXIT_BROKEN_INPUT
    elif any(r["status"] == "fail" for r in rules):
        verdict, code = "FAIL", EXIT_GATE_FAILED
    else:
        verdict, code = "PASS", EXIT_PASS
    return {"verdict": verdict, "exit_code": code, "rules": rules,
            "minor_failures": [c["nodeid"] for c in minor]}
