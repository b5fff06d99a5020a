"""The seed's acceptance criteria (§7) in the sign-off: status, whose number, evidence and context.

Assertions point at a criterion with ``criterion: <id>``. Every assertion record carries its
provenance (``ndval.harness.results``): ``evaluated`` — the subject under test (ndval's estimator or
analyzer, or a configured subject) computed the number in this run — or ``recorded`` — another
tool's number transcribed into a case. Only evaluated evidence decides a criterion's status
(pass / fail / waived); recorded numbers are shown beside it as context and can never make a
criterion PASS. A criterion with no evaluated evidence is *not evaluable*, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ndval.harness.gate import assertion_status
from ndval.harness.results import EVALUATED, RECORDED

#: the three answers to "whose number is it" a criterion row gives
WHOSE_EVALUATED = "evaluated now"
WHOSE_RECORDED = "recorded"
NOT_EVALUABLE = "not evaluable"

_WAIT_NOT_PUBLISHED = ("the seed publishes only the reference tool's Pearson r of each wait component, not the "
                       "measured {part} seconds per config, so ndval's estimate cannot be correlated with a "
                       "measurement (add a case with measured {part} per config and criterion {cid})")


@dataclass(frozen=True)
class Criterion:
    """One acceptance criterion of the seed issue (§7)."""

    id: str
    title: str
    threshold: str
    source: str
    no_evidence: str = "no case carries evidence for this criterion"


#: the MoE fixes the INT-03 case (validation_cases/estimator/dense_invariance.case.yaml) toggles
INT03_TOGGLES = ("expert_zero3_sharding", "ep_bubble_overlap_ratio", "convert_ep_comm_to_time", "ep_comm_overlap")

SEED_CRITERIA: tuple[Criterion, ...] = (
    Criterion("P1", "peak HBM estimate/measured in band for configs A–F", "0.85 ≤ ratio ≤ 1.10 (TP=2 stays 1.05–1.10)", "seed §7 P1, §5.2 INT-01/INT-04"),
    Criterion("INT-01", "fixed() peak HBM / measured on the seed run reconstructed from the recorded estimates "
              "(estimator.experiments.reconstruct; any member of the family of fits)", "0.85 ≤ ratio ≤ 1.10 at TP=1 and TP=2",
              "seed §5.2 INT-01"),
    Criterion("P2", "routed-expert params/OS/grads scale linearly with 1/EP when expert_zero3_sharding=false", "y·EP constant, strictly decreasing", "seed §7 P2, §5.1 P2-02..P2-04"),
    Criterion("P3", "PP_WAIT Pearson r (estimate vs measured, 6 configs)", "r > 0.5", "seed §7 P3",
              _WAIT_NOT_PUBLISHED.format(part="PP_WAIT", cid="P3")),
    Criterion("P3-EP", "EP_WAIT Pearson r does not degrade", "r > 0.85", "seed §7 P3",
              _WAIT_NOT_PUBLISHED.format(part="EP_WAIT", cid="P3-EP")),
    Criterion("P4-MAG", "EP_WAIT magnitude vs measured", "within 10×", "seed §7 P4, §5.1 P4-01",
              "the seed publishes only the Pearson r of each wait component, not the measured EP_WAIT seconds "
              "per config, so there is no measured magnitude to compare with (add a case with measured EP_WAIT "
              "using magnitude_within and criterion P4-MAG)"),
    Criterion("P4-TOTAL", "TOTAL Pearson r (estimate vs measured)", "r > 0.5", "seed §7 P4, §5.1 P4-03",
              _WAIT_NOT_PUBLISHED.format(part="TOTAL", cid="P4-TOTAL")),
    Criterion("SHARE", "no single component dominates TOTAL", "each part ≤ 90 % of TOTAL", "seed §7 P4"),
    Criterion("NO-REGRESSION", "no regression against the baseline run", "no case/assertion passing in the baseline fails now", "seed §7 (全部现有 UT 无回归)"),
    Criterion("INT-03", "dense model (num_experts ≤ 1) identical with the MoE fixes on or off "
              f"({', '.join(INT03_TOGGLES)}); the P1 buffer scaling and comm-hack removal stay on in both",
              "identical results", "seed §7, §5.2 INT-03"),
)


def _evidence(cases: list[dict[str, Any]], criterion: str) -> list[dict[str, Any]]:
    out = []
    for rec in cases:
        for a in rec.get("assertions", []):
            if a.get("criterion") == criterion:
                out.append({"nodeid": rec["nodeid"], "case_status": rec["status"], "assertion": a["id"],
                            "type": a["type"], "status": assertion_status(a), "observed": a.get("observed"),
                            "expected": a.get("expected"), "message": a.get("message"),
                            "provenance": a.get("provenance", EVALUATED), "producer": a.get("producer", "ndval"),
                            "waiver": (rec.get("waiver") or {}).get("reason") if a.get("waived") else None})
        if rec["status"] in ("error", "skipped") and criterion in set(rec.get("criteria", [])):
            out.append({"nodeid": rec["nodeid"], "case_status": rec["status"], "assertion": "-", "type": "-",
                        "status": "not_evaluable", "observed": None, "expected": None, "message": rec.get("message"),
                        "provenance": EVALUATED, "producer": "-"})
    return out


def criterion_status(evidence: list[dict[str, Any]]) -> str:
    """From evaluated evidence only: fail if any fails unwaived; waived if any waived; pass if any passes;
    else not evaluable. Recorded evidence is refused (it can never decide a status)."""
    if any(e.get("provenance", EVALUATED) != EVALUATED for e in evidence):
        raise ValueError("criterion_status takes evaluated evidence only; recorded numbers are context")
    statuses = {e["status"] for e in evidence}
    if "failed" in statuses:
        return "fail"
    if "waived" in statuses:
        return "waived"
    if "passed" in statuses:
        return "pass"
    return NOT_EVALUABLE


def _producers(evidence: list[dict[str, Any]]) -> str:
    return ", ".join(sorted({e["producer"] for e in evidence if e["producer"] != "-"}))


def _row(crit: Criterion, cases: list[dict[str, Any]]) -> dict[str, Any]:
    evidence = _evidence(cases, crit.id)
    evaluated = [e for e in evidence if e["provenance"] == EVALUATED]
    recorded = [e for e in evidence if e["provenance"] == RECORDED]
    status = criterion_status(evaluated)
    if status != NOT_EVALUABLE:
        whose, provenance = f"{_producers(evaluated)} ({WHOSE_EVALUATED})", EVALUATED
    elif recorded:
        whose, provenance = f"{_producers(recorded)} ({WHOSE_RECORDED}); nothing evaluated now", RECORDED
    else:
        whose, provenance = NOT_EVALUABLE, NOT_EVALUABLE
    if status == NOT_EVALUABLE and not [e for e in evaluated if e["status"] == "not_evaluable"]:
        reason = crit.no_evidence
    else:
        reason = evidence_text(evaluated)
    context = (f"recorded by {_producers(recorded)}, shown as context, not evidence: " + evidence_text(recorded)
               if recorded else "")
    return {"id": crit.id, "title": crit.title, "threshold": crit.threshold, "source": crit.source,
            "status": status, "provenance": provenance, "whose": whose, "reason": reason, "context": context,
            "evidence": evaluated, "context_evidence": recorded}


def seed_criteria_table(cases: list[dict[str, Any]], regressions: list[dict[str, Any]] | None,
                        declared: tuple[Criterion, ...] = SEED_CRITERIA) -> list[dict[str, Any]]:
    """One row per declared criterion (default: the seed's; a project's come from its ``gate.yaml``, see
    ``ndval.harness.release``): status (from evaluated evidence), whose number, reason, context."""
    rows = []
    for crit in declared:
        if crit.id != "NO-REGRESSION":
            rows.append(_row(crit, cases))
            continue
        if regressions is None:
            status, reason, evidence, provenance = NOT_EVALUABLE, "no --baseline summary given", [], NOT_EVALUABLE
        else:
            status = "fail" if regressions else "pass"
            reason = (f"{len(regressions)} regression(s) against the baseline" if regressions
                      else "nothing that passed in the baseline fails now")
            evidence, provenance = regressions, EVALUATED
        rows.append({"id": crit.id, "title": crit.title, "threshold": crit.threshold, "source": crit.source,
                     "status": status, "provenance": provenance,
                     "whose": f"ndval ({WHOSE_EVALUATED}, this run vs the baseline)" if regressions is not None
                     else NOT_EVALUABLE, "reason": reason, "context": "", "evidence": evidence,
                     "context_evidence": []})
    return rows


def _observed_text(e: dict[str, Any]) -> str:
    """``, observed 1.091..1.464 vs [0.85, 1.1]`` for scalar/range observations (lists are in the message)."""
    obs = e.get("observed")
    if isinstance(obs, bool) or not isinstance(obs, int | float | str) or obs == "":
        return ""
    shown = f"{obs:.4g}" if isinstance(obs, float) else str(obs)
    return f", observed {shown}" + (f" vs {e['expected']}" if e.get("expected") else "")


def _status_word(e: dict[str, Any]) -> str:
    """A recorded number *meets* or *misses* a rule; only evaluated evidence passes or fails."""
    status = str(e["status"])
    if e.get("provenance", EVALUATED) == EVALUATED:
        return status
    return {"passed": "meets the rule", "failed": "misses the rule", "waived": "misses the rule (waived)"}.get(
        status, status)


def evidence_text(evidence: list[dict[str, Any]]) -> str:
    """Every evidence item (assertion @ case: status (numbers)); each waiver's reason once, after them."""
    parts = [f"{e['assertion']} @ {e['nodeid'].split('::')[-1]}: {_status_word(e)}" + _observed_text(e) +
             (f" ({e['message']})" if e.get("message") else "") for e in evidence]
    waivers: dict[str, str] = {}
    for e in evidence:
        if e.get("waiver"):
            waivers.setdefault(e["nodeid"].split("::")[-1], " ".join(str(e["waiver"]).split()))
    return "; ".join(parts) + "".join(f" [waiver of {case}: {reason}]" for case, reason in waivers.items())
