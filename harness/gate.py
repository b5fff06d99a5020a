"""The CI gate: declarative rules over the session summary, the seed's acceptance criteria, exit codes.

Exit codes (``ndval validate`` and ``pytest`` over the cases):
``EXIT_PASS`` 0 — every rule holds; ``EXIT_GATE_FAILED`` 1 — a rule fails on valid input (a blocker or
major criterion failed unwaived, golden drift, an expired waiver, a regression);
``EXIT_BROKEN_INPUT`` 2 — the input could not be judged (a case file invalid, data missing, a
kind that cannot run, no case collected). Broken input wins over a gate failure: a verdict over
partially broken input is not a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EXIT_PASS = 0
EXIT_GATE_FAILED = 1
EXIT_BROKEN_INPUT = 2

#: minimum number of case items a run over the whole tree must collect
MIN_CASES = 1


@dataclass(frozen=True)
class Criterion:
    """One acceptance criterion of the seed issue (§7); assertions point at it with ``criterion: <id>``."""

    id: str
    title: str
    threshold: str
    source: str
    no_evidence: str = "no case carries evidence for this criterion"


SEED_CRITERIA: tuple[Criterion, ...] = (
    Criterion("P1", "peak HBM estimate/measured in band for configs A–F", "0.85 ≤ ratio ≤ 1.10 (TP=2 stays 1.05–1.10)", "seed §7 P1, §5.2 INT-01/INT-04"),
    Criterion("P2", "routed-expert params/OS/grads scale linearly with 1/EP when expert_zero3_sharding=false", "y·EP constant, strictly decreasing", "seed §7 P2, §5.1 P2-02..P2-04"),
    Criterion("P3", "PP_WAIT Pearson r (estimate vs measured, 6 configs)", "r > 0.5", "seed §7 P3"),
    Criterion("P3-EP", "EP_WAIT Pearson r does not degrade", "r > 0.85", "seed §7 P3"),
    Criterion("P4-MAG", "EP_WAIT magnitude vs measured", "within 10×", "seed §7 P4, §5.1 P4-01",
              "the seed publishes only the Pearson r of each wait component, not the measured EP_WAIT seconds "
              "per config, so there is no measured magnitude to compare with (add a case with measured EP_WAIT "
              "using magnitude_within and criterion P4-MAG)"),
    Criterion("P4-TOTAL", "TOTAL Pearson r (estimate vs measured)", "r > 0.5", "seed §7 P4, §5.1 P4-03"),
    Criterion("SHARE", "no single component dominates TOTAL", "each part ≤ 90 % of TOTAL", "seed §7 P4"),
    Criterion("NO-REGRESSION", "no regression against the baseline run", "no case/assertion passing in the baseline fails now", "seed §7 (全部现有 UT 无回归)"),
    Criterion("INT-03", "dense model (num_experts ≤ 1) identical with every fix on or off", "identical results", "seed §7, §5.2 INT-03"),
)


def _evidence(cases: list[dict[str, Any]], criterion: str) -> list[dict[str, Any]]:
    out = []
    for rec in cases:
        for a in rec.get("assertions", []):
            if a.get("criterion") == criterion:
                out.append({"nodeid": rec["nodeid"], "case_status": rec["status"], "assertion": a["id"],
                            "type": a["type"], "status": _assertion_status(a), "observed": a.get("observed"),
                            "expected": a.get("expected"), "message": a.get("message"),
                            "waiver": (rec.get("waiver") or {}).get("reason") if a.get("waived") else None})
        if rec["status"] in ("error", "skipped") and criterion in _criteria_of_record(rec):
            out.append({"nodeid": rec["nodeid"], "case_status": rec["status"], "assertion": "-", "type": "-",
                        "status": "not_evaluable", "observed": None, "expected": None, "message": rec.get("message")})
    return out


def _criteria_of_record(rec: dict[str, Any]) -> set[str]:
    return set(rec.get("criteria", []))


def _assertion_status(a: dict[str, Any]) -> str:
    if not a.get("evaluable", True):
        return "not_evaluable"
    if a.get("passed"):
        return "passed"
    return "waived" if a.get("waived") else "failed"


def criterion_status(evidence: list[dict[str, Any]]) -> str:
    """fail if any evidence fails unwaived; waived if any waived; pass if any passes; else not evaluable."""
    statuses = {e["status"] for e in evidence}
    if "failed" in statuses:
        return "fail"
    if "waived" in statuses:
        return "waived"
    if "passed" in statuses:
        return "pass"
    return "not evaluable"


def seed_criteria_table(cases: list[dict[str, Any]], regressions: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """One row per seed criterion: status, reason, the data behind it."""
    rows = []
    for crit in SEED_CRITERIA:
        if crit.id == "NO-REGRESSION":
            if regressions is None:
                status, reason, evidence = "not evaluable", "no --baseline summary given", []
            else:
                status = "fail" if regressions else "pass"
                reason = f"{len(regressions)} regression(s) against the baseline" if regressions else "nothing that passed in the baseline fails now"
                evidence = regressions
            rows.append({"id": crit.id, "title": crit.title, "threshold": crit.threshold, "source": crit.source,
                         "status": status, "reason": reason, "evidence": evidence})
            continue
        evidence = _evidence(cases, crit.id)
        status = criterion_status(evidence)
        reason = _evidence_text(evidence) if evidence else crit.no_evidence
        rows.append({"id": crit.id, "title": crit.title, "threshold": crit.threshold, "source": crit.source,
                     "status": status, "reason": reason, "evidence": evidence})
    return rows


def _observed_text(e: dict[str, Any]) -> str:
    """``, observed 1.091..1.464 vs [0.85, 1.1]`` for scalar/range observations (lists are in the message)."""
    obs = e.get("observed")
    if isinstance(obs, bool) or not isinstance(obs, int | float | str) or obs == "":
        return ""
    shown = f"{obs:.4g}" if isinstance(obs, float) else str(obs)
    return f", observed {shown}" + (f" vs {e['expected']}" if e.get("expected") else "")


def _evidence_text(evidence: list[dict[str, Any]]) -> str:
    """Every evidence item (assertion @ case: status (numbers)); each waiver's reason once, after them."""
    parts = [f"{e['assertion']} @ {e['nodeid'].split('::')[-1]}: {e['status']}" + _observed_text(e) +
             (f" ({e['message']})" if e.get("message") else "") for e in evidence]
    waivers: dict[str, str] = {}
    for e in evidence:
        if e.get("waiver"):
            waivers.setdefault(e["nodeid"].split("::")[-1], " ".join(str(e["waiver"]).split()))
    return "; ".join(parts) + "".join(f" [waiver of {case}: {reason}]" for case, reason in waivers.items())


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
                out.append({"nodeid": c["nodeid"], "assertion": a["id"], "was": "passed", "now": _assertion_status(now[key]),
                            "observed_before": a.get("observed"), "observed_now": now[key].get("observed")})
    return out


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

    def rule(name: str, threshold: str, actual: Any, ok: bool, broken: bool = False, items: list | None = None) -> dict[str, Any]:
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
