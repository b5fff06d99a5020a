"""The session summary (``reports/summary.json``): every case, every assertion, provenance, statistics.

Built on the controller from the records items reported (xdist-safe: one payload per report,
merged here), sorted by node id so ``pytest -p no:xdist`` and ``pytest -n 2`` give the same
summary apart from ``duration_s``, ``run`` timings and worker ids.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from ndval.harness import criteria, gate
from ndval.harness.release import ReleaseRules
from ndval.harness.results import to_builtin

SUMMARY_FORMAT = 1
_PACKAGES = ("ndval", "numpy", "pandas", "scipy", "pydantic", "pytest", "pytest-xdist", "allure-pytest", "matplotlib", "pyyaml")
_ERR_RE = re.compile(r"^(?P<file>[^\n]*?):(?P<line>\d+): field '(?P<field>[^']*)': (?P<rule>.*)$", re.S)


def git_info(repo: Path, watched: tuple[Path, ...] = ()) -> dict[str, Any]:
    """Commit SHA and dirty flag of ``repo`` (``unknown`` outside a git checkout): dirty when a tracked
    file changed or an untracked file lies under ``watched`` (the cases and goldens the run used)."""
    def run(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    sha = run("rev-parse", "HEAD")
    if not sha:
        return {"sha": "unknown", "dirty": None, "untracked": []}
    inside = [str(w) for w in watched if w.exists() and (w == repo or repo in w.parents)]
    untracked = run("ls-files", "--others", "--exclude-standard", "--", *inside).splitlines() if inside else []
    tracked = bool(run("status", "--porcelain", "--untracked-files=no"))
    return {"sha": sha, "dirty": tracked or bool(untracked), "untracked": untracked}


def provenance(repo: Path) -> dict[str, Any]:
    """Git SHA, package versions, Python and platform."""
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    from ndval.harness import paths

    project = paths.project()
    return {"git": git_info(repo, (project.cases, project.golden)), "python": sys.version.split()[0], "platform": platform.platform(),
            "machine": platform.machine(), "packages": versions}


def parse_collection_error(nodeid: str, text: str) -> dict[str, Any]:
    """Structured view of a collection error rendered by ``CaseError`` (file, line, field, rule)."""
    last = text.strip().splitlines()[-1] if text.strip() else ""
    for candidate in (text.strip(), last.removeprefix("E   ").strip()):
        m = _ERR_RE.match(candidate)
        if m:
            return {"nodeid": nodeid, "file": m["file"], "line": int(m["line"]), "field": m["field"],
                    "message": m["rule"].strip()}
    return {"nodeid": nodeid, "file": nodeid.split("::")[0], "line": None, "field": None, "message": text.strip()[-2000:]}


def _ratio_stats(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per criterion (else case id) and check type: distribution of the row values (ratios, signed errors)."""
    groups: dict[tuple[str, str], list[float]] = {}
    for rec in cases:
        for a in rec.get("assertions", []):
            if a["type"] in ("ratio_within", "rel_error_le"):
                key = (a.get("criterion") or rec["case_id"], a["type"])
                for row in a.get("rows", []):
                    if row.get("value") is not None:
                        groups.setdefault(key, []).append(float(row["value"]))
    out = []
    for (crit, typ), values in sorted(groups.items()):
        out.append({"group": crit, "type": typ, "n": len(values), "min": min(values), "median": statistics.median(values),
                    "max": max(values), "mean": statistics.fmean(values)})
    return out


def not_evaluable_rows(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Data rows a case could not judge because a value the estimate needs is not stated, with the
    reason (e.g. ``column micro_batch_size: not stated by the source``); counted, never dropped."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in cases:
        for a in rec.get("assertions", []):
            for row in a.get("rows", []):
                if row.get("not_evaluable"):
                    out[(rec["nodeid"], str(row["row"]))] = {"nodeid": rec["nodeid"], "row": row["row"],
                                                             "reason": row["not_evaluable"]}
    return list(out.values())


def file_hashes(cases: list[dict[str, Any]]) -> dict[str, str]:
    return {rec["file"]: rec["file_sha256"] for rec in cases}


def build_summary(records: dict[str, dict[str, Any]], collection_errors: dict[str, str], *, repo: Path,
                  baseline: dict[str, Any] | None, unused_goldens: list[str], run: dict[str, Any],
                  rules: ReleaseRules | None = None) -> dict[str, Any]:
    """Assemble the summary and evaluate the gate on it."""
    cases = [records[k] for k in sorted(records)]
    errors = [parse_collection_error(k, collection_errors[k]) for k in sorted(collection_errors)]
    counts = {s: sum(1 for c in cases if c["status"] == s)
              for s in ("passed", "failed", "waived", "error", "skipped", "not_evaluable")}
    counts |= {"items": len(cases), "collection_errors": len(errors)}
    regressions = gate.regressions_against(baseline, cases) if baseline is not None else None
    summary: dict[str, Any] = {
        "format_version": SUMMARY_FORMAT, "run": run, "provenance": provenance(repo), "counts": counts,
        "cases": cases, "collection_errors": errors, "case_files": file_hashes(cases),
        "statistics": _ratio_stats(cases), "regressions": regressions, "not_evaluable": not_evaluable_rows(cases),
        "waivers": [{"nodeid": c["nodeid"], **c["waiver"], "status": c["status"]} for c in cases if c.get("waiver")],
        "golden": {"unused": unused_goldens,
                   "drift": [{"nodeid": c["nodeid"], **c["golden"]} for c in cases
                             if c.get("golden") and c["golden"]["status"] not in ("match", "regenerated")]},
    }
    if rules is not None:
        summary["release"] = rules.summary_block()
    summary["criteria"] = criteria.seed_criteria_table(cases, regressions, *(() if rules is None else (rules.criteria,)))
    summary["gate"] = gate.evaluate_gate(summary)
    built: dict[str, Any] = to_builtin(summary)
    return built


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without timings, worker ids and provenance (for run-to-run comparison)."""
    out = {k: v for k, v in summary.items() if k not in ("run", "provenance")}
    out["cases"] = [{k: v for k, v in c.items() if k not in ("duration_s", "worker")} for c in summary["cases"]]
    return out
