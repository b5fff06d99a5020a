"""pytester tests of the plugin: collection, outcomes, waivers, broken cases, xdist, gate codes, Allure.

All cases are synthetic (``recorded.results`` over made-up numbers).
"""

from __future__ import annotations

import hashlib
import json

import pytest

from ndval.harness.gate import EXIT_BROKEN_INPUT, EXIT_GATE_FAILED, EXIT_PASS
from ndval.harness.summary import comparable

from .conftest import synthetic_case


def test_plugin_is_inert_for_ordinary_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(): assert True")
    (pytester.path / "other.case.yaml").write_text("not: [valid", encoding="utf-8")  # outside validation_cases/
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "reports").exists()


def test_pass_and_fail_items_with_table_pointing_at_yaml(pytester, cases, summary) -> None:
    cases("recorded/ok.case.yaml", synthetic_case("synthetic-ok"))
    cases("recorded/bad.case.yaml", synthetic_case("synthetic-bad", lo=0.99, hi=1.01))
    result = pytester.runpytest("validation_cases")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*validation_cases/recorded/bad.case.yaml:1*", "*FAILED*band*P1*ratio*line 12*",
                                 "*gate verdict: FAIL (exit 1)*"])
    assert result.ret == EXIT_GATE_FAILED
    s = summary()
    assert s["counts"]["passed"] == 1 and s["counts"]["failed"] == 1
    bad = next(c for c in s["cases"] if c["case_id"] == "synthetic-bad")
    assert bad["assertions"][0]["rows"][0]["value"] == pytest.approx(0.95)


def test_matrix_points_have_stable_ids(pytester, cases) -> None:
    cases("recorded/m.case.yaml", synthetic_case("synthetic-matrix", extra="matrix:\n  what_if.tp_shardable_overhead_mb: [0, 1]\n"
                                                  "params: {what_if: {safety_buffer_mb: 0, legacy_safety_buffer_mb: 0}}\n"))
    result = pytester.runpytest("validation_cases", "--collect-only", "-q")
    out = result.stdout.str()
    assert "m.case.yaml::synthetic-matrix[tp_shardable_overhead_mb0]" in out
    assert "m.case.yaml::synthetic-matrix[tp_shardable_overhead_mb1]" in out


def test_waiver_reports_waived_and_gate_passes(pytester, cases, summary) -> None:
    waiver = ("waiver: {reason: synthetic known failure for the test, owner: qa, expires: 2099-01-01, "
              "issue: https://example.invalid/issues/1}\n")
    cases("recorded/w.case.yaml", synthetic_case("synthetic-waived", lo=0.99, hi=1.01, extra=waiver))
    result = pytester.runpytest("validation_cases")
    result.assert_outcomes(xfailed=1)
    assert result.ret == EXIT_PASS
    s = summary()
    assert s["cases"][0]["status"] == "waived" and s["waivers"][0]["issue"].endswith("/1")
    # the synthetic rows are recorded results of another tool: context for P1, never its evidence
    p1 = next(c for c in s["criteria"] if c["id"] == "P1")
    assert p1["status"] == "not evaluable" and p1["provenance"] == "recorded"
    assert "misses the rule (waived)" in p1["context"] and p1["evidence"] == []
    # --strict-waivers: the waiver excuses nothing
    assert pytester.runpytest("validation_cases", "--strict-waivers").ret == EXIT_GATE_FAILED


BAD_CASES = {
    "invalid_yaml.case.yaml": ("id: x\ntitle: [unclosed\n", "field 'title': invalid YAML: while parsing a flow sequence", 2),
    "unknown_field.case.yaml": (synthetic_case("unknown-field") + "colour: blue\n", "'colour': unknown field", 13),
    "wrong_type.case.yaml": (synthetic_case("wrong-type").replace("lo: 0.85", "lo: low"), "expect[0].lo", 12),
    "missing_data.case.yaml": (synthetic_case("missing-data").replace("  inline:\n", "  file: nothere.csv\n")
                               .replace("      - {config: s1, tp: 1, estimate_mb: 95, measured_mb: 100}\n", "")
                               .replace("      - {config: s2, tp: 2, estimate_mb: 52, measured_mb: 50}\n", ""),
                               "data.file': data file 'nothere.csv' not found", 8),
    "outside.case.yaml": (synthetic_case("outside").replace("  inline:\n", "  file: ../../secret.csv\n")
                          .replace("      - {config: s1, tp: 1, estimate_mb: 95, measured_mb: 100}\n", "")
                          .replace("      - {config: s2, tp: 2, estimate_mb: 52, measured_mb: 50}\n", ""),
                          "outside the cases tree", 8),
    "expired.case.yaml": (synthetic_case("expired", extra="waiver: {reason: an old synthetic waiver, owner: qa, "
                                         "expires: 2020-01-01, issue: X-1}\n"), "waiver expired on 2020-01-01", 13),
}


def test_bad_cases_are_collection_errors_and_others_still_run(pytester, cases, summary) -> None:
    (pytester.path / "secret.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    for name, (text, _, _) in BAD_CASES.items():
        cases(f"broken/{name}", text)
    cases("recorded/ok.case.yaml", synthetic_case("synthetic-ok"))
    result = pytester.runpytest("validation_cases")
    result.assert_outcomes(passed=1, errors=len(BAD_CASES))
    assert result.ret == EXIT_BROKEN_INPUT
    s = summary()
    assert s["counts"]["collection_errors"] == len(BAD_CASES) and s["counts"]["passed"] == 1
    errors = {e["file"].rsplit("/", 1)[-1]: e for e in s["collection_errors"]}
    for name, (_, needle, line) in BAD_CASES.items():
        err = errors[name]
        rendered = f"{err['file']}:{err['line']}: field '{err['field']}': {err['message']}"
        assert needle in rendered, rendered
        assert err["file"].endswith(f"broken/{name}") and err["field"] not in (None, "", "<root>"), rendered
        assert err["line"] == line, rendered
    expired_rule = next(r for r in s["gate"]["rules"] if r["rule"] == "no expired waiver")
    assert expired_rule["status"] == "fail"


def test_expired_waiver_alone_is_a_gate_failure_not_broken_input(pytester, cases) -> None:
    cases("recorded/e.case.yaml", synthetic_case("expired", extra="waiver: {reason: an old synthetic waiver, owner: qa, "
                                                 "expires: 2020-01-01, issue: X-1}\n"))
    cases("recorded/ok.case.yaml", synthetic_case("synthetic-ok"))
    assert pytester.runpytest("validation_cases").ret == EXIT_GATE_FAILED


def test_unavailable_kind_is_broken_not_a_crash(pytester, cases, summary) -> None:
    pytester.makeconftest("""
        from ndval.harness.kinds import KindParams, register_kind

        @register_kind("synthetic.unavailable", params=KindParams, requires=lambda: "synthetic tool not installed")
        def run(ctx):
            raise AssertionError("never called")
    """)
    cases("x/u.case.yaml", synthetic_case("needs-tool").replace("kind: recorded.results", "kind: synthetic.unavailable")
          .replace("data:\n  inline:\n", "data:\n  inline:\n"))
    cases("x/ok.case.yaml", synthetic_case("synthetic-ok"))
    result = pytester.runpytest("validation_cases")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*BROKEN*needs-tool*synthetic tool not installed*"])
    assert result.ret == EXIT_BROKEN_INPUT
    assert next(c for c in summary()["cases"] if c["case_id"] == "needs-tool")["status"] == "error"


def test_xdist_and_serial_give_the_same_summary(pytester, cases) -> None:
    for i in range(4):
        cases(f"recorded/c{i}.case.yaml", synthetic_case(f"synthetic-{i}", lo=0.85 if i % 2 else 0.99, hi=1.1))
    cases("broken/b.case.yaml", "id: [\n")
    r1 = pytester.runpytest("validation_cases", "-p", "no:xdist")
    s1 = json.loads((pytester.path / "reports" / "summary.json").read_text())
    r2 = pytester.runpytest_subprocess("validation_cases", "-n", "2")
    s2 = json.loads((pytester.path / "reports" / "summary.json").read_text())
    assert r1.ret == r2.ret == EXIT_BROKEN_INPUT
    assert s2["run"]["workers"] == 2
    assert comparable(s1) == comparable(s2)
    assert {c["worker"] for c in s2["cases"]} <= {"gw0", "gw1"}


def test_cases_glob_selects_files(pytester, cases) -> None:
    cases("recorded/a.case.yaml", synthetic_case("synthetic-a"))
    cases("recorded/b.case.yaml", synthetic_case("synthetic-b"))
    result = pytester.runpytest("validation_cases", "--cases", "*/a.case.yaml")
    result.assert_outcomes(passed=1)


def test_allure_results_carry_labels_parameters_and_attachments(pytester, cases) -> None:
    text = synthetic_case("synthetic-allure", lo=0.99, hi=1.01,
                          extra="tags: [synthetic]\nmatrix:\n  - {id: p1, what_if.tp_shardable_overhead_mb: 0}\n"
                                "params: {what_if: {safety_buffer_mb: 0, legacy_safety_buffer_mb: 0}}\ngolden: true\n")
    cases("recorded/al.case.yaml", text)
    result = pytester.runpytest("validation_cases", "--alluredir", "allure")
    result.assert_outcomes(failed=1)
    out = pytester.path / "allure"
    res = json.loads(next(out.glob("*-result.json")).read_text())
    labels = {(lab["name"], lab["value"]) for lab in res["labels"]}
    assert {("epic", "recorded"), ("feature", "recorded.results"), ("story", "al"), ("severity", "critical"),
            ("owner", "harness-tests"), ("tag", "synthetic"), ("tag", "P1"), ("suite", "al")} <= labels
    params = {p["name"]: p for p in res["parameters"]}
    assert params["what_if.tp_shardable_overhead_mb"]["value"] == "0" and params["point"]["value"] == "'p1'"
    kinds = {a["type"] for a in res["attachments"]}
    assert {"application/yaml", "text/csv", "application/json", "image/png", "text/html"} <= kinds
    diff = next(a for a in res["attachments"] if a["type"] == "text/html")  # the missing golden's diff
    assert diff["name"].startswith("golden diff") and "<table" in (out / diff["source"]).read_text()
    png = next(a for a in res["attachments"] if a["type"] == "image/png")
    assert (out / png["source"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "gate.verdict=FAIL" in (out / "environment.properties").read_text()
    assert ("ndval_failure", "band") in labels  # the band failed (and the golden is missing): filed under the band
    assert all("messageRegex" not in c for c in json.loads((out / "categories.json").read_text()))


def test_signoff_and_baseline_regression(pytester, cases, summary) -> None:
    cases("recorded/r.case.yaml", synthetic_case("synthetic-reg"))
    assert pytester.runpytest("validation_cases", "--signoff", "reports/signoff.md").ret == EXIT_PASS
    baseline = pytester.path / "baseline.json"
    baseline.write_text((pytester.path / "reports" / "summary.json").read_text())
    md = (pytester.path / "reports" / "signoff.md").read_text()
    assert "| P1 |" in md and "PASS" in md and "| INT-03 |" in md and "NOT EVALUABLE" in md
    html = (pytester.path / "reports" / "signoff.html").read_text()
    assert "data:image/png;base64," in html
    cases("recorded/r.case.yaml", synthetic_case("synthetic-reg", lo=0.99, hi=1.01))
    assert pytester.runpytest("validation_cases", "--baseline", str(baseline)).ret == EXIT_GATE_FAILED
    s = summary()
    assert s["regressions"] == [{"nodeid": "validation_cases/recorded/r.case.yaml::synthetic-reg", "assertion": "band",
                                 "was": "passed", "now": "failed", "observed_before": "0.95..1.04",
                                 "observed_now": "0.95..1.04"}]
    assert next(c for c in s["criteria"] if c["id"] == "NO-REGRESSION")["status"] == "fail"


def test_skip_inside_a_kind_is_recorded_with_its_reason(pytester, cases, summary, monkeypatch) -> None:
    # the real analyzer kind, its profiles folder pointed at a missing one: pytest.skip inside the kind
    missing = pytester.path / "no-such-profiles"
    monkeypatch.setenv("NDVAL_PROFILES_DIR", str(missing))
    cases("analyzer/a.case.yaml", """\
        id: synthetic-absent-profile
        title: synthetic analyzer case whose profiles folder is absent
        kind: analyzer.analysis
        owner: harness-tests
        severity: major
        source: synthetic (no data is read)
        params: {profile: kineto/anything.json.gz}
        expect:
          - {type: bottleneck_is, expected: communication}
        """)
    cases("recorded/ok.case.yaml", synthetic_case("synthetic-ok"))
    result = pytester.runpytest("validation_cases", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*data not available: profiles folder*no-such-profiles*"])
    s = summary()
    rec = next(c for c in s["cases"] if c["case_id"] == "synthetic-absent-profile")
    assert rec["status"] == "skipped"
    assert rec["message"].startswith("data not available: profiles folder") and str(missing) in rec["message"]
    assert "setup did not finish" not in rec["message"]
    assert s["counts"]["skipped"] == 1 and s["counts"]["error"] == 0
    assert result.ret == s["gate"]["exit_code"] == EXIT_PASS


def test_signoff_results_by_case_show_every_assertions_numbers(pytester, cases, summary) -> None:
    from ndval.harness import signoff

    cases("recorded/n.case.yaml", synthetic_case("synthetic-numbers", lo=0.97, hi=1.10))  # s1 (0.95) outside
    assert pytester.runpytest("validation_cases", "--signoff", "reports/signoff.md").ret == EXIT_GATE_FAILED
    md = (pytester.path / "reports" / "signoff.md").read_text()
    results = md.split("## 9. Results by case", 1)[1].split("## 10.", 1)[0]
    # target, observed, expected band, margin (0.95 - 0.97) and status, not only the failing id
    assert ("| synthetic-numbers | recorded.results | FAILED | band | P1 | ratio: estimate_mb vs measured_mb | "
            "0.95..1.04 | [0.97, 1.1] | -0.02 | reference tool (recorded) | RECORDED: MISSES RULE |") in results
    assert ("<details>\n<summary>synthetic-numbers / band: 2 evidence rows (1 meeting the rule), "
            "RECORDED: MISSES RULE</summary>") in results
    assert "| row | estimate | measured | value | passed |" in results
    html = (pytester.path / "reports" / "signoff.html").read_text()
    assert "<details><summary>synthetic-numbers / band" in html
    # a declared calibration step shows its fitted value and both halves (synthetic figures)
    s = summary()
    half = {"n": 4, "spearman_pooled": 0.8, "spearman_group_median": 0.5, "groups": 2, "mape_pct": 12.0, "median_ratio": 0.9}
    s["cases"][0]["values"] = {"calibration": {
        "fitted": "compute_efficiency", "value": 0.4321, "rows_fit": 4, "rows_holdout": 4, "loo_mape_pct_fit_half": 13.0,
        "method": "synthetic", "group_by": ["model"], "fit": half, "holdout": {**half, "mape_pct": 21.0},
        "holdout_at_peak": half}}
    _, sections = signoff.build(s, pytester.path / "reports")
    md = signoff.render_markdown("t", sections, "img")
    assert "| synthetic-numbers | compute_efficiency | 0.4321 | 4 | 4 | 13 | synthetic |" in md
    assert "| synthetic-numbers | held-out half (judged) | 4 | 0.8 | 0.5 (2 groups) | 21 | 0.9 |" in md


def test_signoff_gate_table_has_every_seed_criterion_with_all_its_evidence(pytester, cases) -> None:
    from ndval.harness.criteria import SEED_CRITERIA

    long_reason = "synthetic known failure with a long reason " + "x" * 400
    extra = ("  - {type: ratio_within, id: band-tp2, estimate: estimate_mb, measured: measured_mb, lo: 0.99, hi: 1.01, "
             "where: {tp: 2}, criterion: P1}\n"
             f"waiver: {{reason: {long_reason}, owner: qa, expires: 2099-01-01, issue: X-2}}\n")
    cases("recorded/t.case.yaml", synthetic_case("synthetic-table", lo=0.99, hi=1.01, extra=extra))
    assert pytester.runpytest("validation_cases", "--signoff", "reports/signoff.md",
                              "--junitxml", "reports/junit.xml").ret == EXIT_PASS
    md = (pytester.path / "reports" / "signoff.md").read_text()
    # the artifacts table checksums the JUnit XML (written before the sign-off)
    junit = (pytester.path / "reports" / "junit.xml").read_bytes()
    assert f"| junit.xml | {len(junit)} | {hashlib.sha256(junit).hexdigest()} |" in md
    table = md.split("## 5. Seed acceptance criteria", 1)[1].split("## 6.", 1)[0]
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ") and "---" not in line}
    assert set(rows) == {c.id for c in SEED_CRITERIA} | {"criterion"}
    p1 = rows["P1"]
    # recorded rows are context: P1 is not evaluable, whose number says so, and the context column carries
    # both assertions with their numbers (ratios 0.95 and 1.04; the tp=2 row 1.04), the waiver reason once and whole
    assert "| NOT EVALUABLE | reference tool (recorded); nothing evaluated now |" in p1
    assert "band @ synthetic-table: misses the rule (waived), observed 0.95..1.04 vs [0.99, 1.01] (0/2 rows" in p1
    assert "band-tp2 @ synthetic-table: misses the rule (waived), observed 1.04..1.04 vs [0.99, 1.01] (0/1 rows" in p1
    assert p1.count(long_reason) == 1
    assert "no case carries evidence" in rows["P2"] and "| NOT EVALUABLE |" in rows["P2"]
