"""``ndval compare BEFORE AFTER`` end to end (real samples via the conftest fixtures; skip when absent)."""

from __future__ import annotations

import json

from ndval.harness.cli import main
from ndval.harness.commands.compare import distinct_short_names, short_name


def test_kineto_pair_prints_headline_operators_and_warnings(profile_path, tmp_path, capsys):
    before = profile_path("kineto/hta-trace-diff/control.json.gz")
    after = profile_path("kineto/hta-trace-diff/test.json.gz")
    out_json, out_md, out_html = tmp_path / "c.json", tmp_path / "c.md", tmp_path / "c.html"
    rc = main(["compare", str(before), str(after), "--json", str(out_json), "--markdown", str(out_md),
               "--html", str(out_html)])
    printed = capsys.readouterr().out
    assert rc == 0
    assert "wall clock per step" in printed.splitlines()[0]  # the headline sentence first
    assert "top operators saving time" in printed and "top operators adding time" in printed
    assert "different hardware: NVIDIA A100-PG509-200 vs Tesla V100-SXM2-16GB" in printed
    assert "different world size: 8 vs 2" in printed
    payload = json.loads(out_json.read_text())
    assert {"hardware", "world_size"} <= set(payload["comparability"]["blocking"])
    assert "rank" in payload["comparability"]["flags"] and payload["comparability"]["comparable"] is False
    assert payload["sides"]["before"]["world_size"] == 8 and payload["sides"]["after"]["world_size"] == 2
    assert payload["sides"]["before"]["ranks"] == [3] and payload["sides"]["after"]["ranks"] == [1]
    assert len(payload["operators"]["saved"]) == 8 and len(payload["operators"]["added"]) == 8
    assert all(r["before_count"] == 0 or r["before_mean_us"] is not None for r in payload["operators"]["added"])
    assert "## Operators that saved the most time" in out_md.read_text()
    assert out_html.read_text().startswith("<!DOCTYPE html>")


def test_unrelated_files_exit_zero_with_comparable_false_and_every_reason(profile_path, tmp_path, capsys):
    before = profile_path("ascend/msprof-analyze-single-card/trace_view.json")
    after = profile_path("kineto/hta-trace-diff/control.json.gz")  # Ascend single card vs a Kineto A100 rank
    out_json = tmp_path / "c.json"
    rc = main(["compare", str(before), str(after), "--json", str(out_json)])
    printed = capsys.readouterr().out
    assert rc == 0
    assert "comparable: false" in printed
    payload = json.loads(out_json.read_text())
    comp = payload["comparability"]
    assert comp["comparable"] is False
    fired = [c["id"] for c in comp["checks"] if c["triggered"]]
    assert len(comp["reasons"]) == len(fired) and fired
    for reason in comp["reasons"]:
        assert reason in printed


def test_unreadable_input_exits_non_zero_with_a_clear_message(profile_path, tmp_path, capsys):
    good = profile_path("ascend/msinsight-level1/rank0_ascend_pt")
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [ {"ph": "X", "name": ')
    rc = main(["compare", str(good), str(bad)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "cannot read the after input" in err and "broken.json" in err


def test_missing_input_exits_non_zero(tmp_path, capsys):
    rc = main(["compare", str(tmp_path / "nope"), str(tmp_path / "nope2")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "before" in err and "nope" in err


def test_operator_labels_drop_signatures_and_stay_distinct():
    assert short_name("void k_cta<float, 2ul>(at::Accessor<float, 2ul>, long)") == "k_cta<float, 2ul>"
    assert short_name("Memcpy DtoD (Device -> Device)") == "Memcpy DtoD (Device -> Device)"
    assert short_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)") == "ncclKernel_AllReduce_RING_LL_Sum_float"
    long_a = "void " + "x" * 50 + "_cta_per_row" + "y" * 50 + "<float>(int)"
    long_b = long_a.replace("_cta_", "_warp_")
    assert len(short_name(long_a)) == 60 and short_name(long_a) == short_name(long_b)  # the middle is cut
    labels = distinct_short_names([long_a, long_b])
    assert labels[0] != labels[1] and 60 < len(labels[0]) < len(long_a)  # widened only as far as needed
