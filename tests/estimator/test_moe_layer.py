"""One MoE layer priced beside a layer benchmark (estimator.experiments.moe_layer, kind estimator.moe_layer).

Rows here are synthetic (the shapes of the recorded Megatron-Core benchmark, made-up measured times) unless a
test reads the recorded file itself."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.experiments import moe_layer
from estimator.perf import comm, roofline
from estimator.perf.context import context
from estimator.perf.efficiency import device_efficiency
from ndval.harness.kinds import KindError, RunContext
from ndval.harness.kinds.estimator import moe_layer as kind

RECORDED = Path(__file__).resolve().parents[2] / "validation_cases" / "recorded" / "mcore_moe_layer_h100.csv"

#: synthetic: the Mixtral proxy's shapes with made-up measured times
ROW = {"case": "synthetic_mixtral", "dispatcher": "alltoall", "precision": "bf16", "hardware": "h100-80g",
       "world_size": "8", "tp": "1", "ep": "8", "seq_length": "4096", "micro_batch_size": "1",
       "hidden_size": "4096", "moe_ffn_hidden_size": "14336", "num_experts": "8", "moe_topk": "2",
       "shared_expert_ffn_hidden_size": "", "num_attention_heads": "32", "forward_ms": "4.0", "backward_ms": "8.0"}


def _cfg(**over: str) -> estimator.EstimatorConfig:
    return estimator.load_config(moe_layer.layer_config({**ROW, **over}))


def test_gemm_efficiency_floor_is_flops_over_time_times_peak() -> None:
    assert moe_layer.gemm_efficiency_floor(1e12, 2e-3, 1e15) == pytest.approx(0.5)


def test_grouped_gemm_flops_are_the_routed_and_shared_experts() -> None:
    # SwiGLU experts: fc1 2·(T·k)·h·(2·f) + fc2 2·(T·k)·f·h = 6·T·k·h·f per rank (balanced routing, every
    # rank's T tokens x top-k land on the EP group's experts); the shared expert adds 6·T·h·f_shared
    t, k, h, f = 4096, 2, 4096, 14336
    assert moe_layer.moe_layer_time(_cfg()).grouped_gemm_flops_forward == pytest.approx(6 * t * k * h * f)
    shared = moe_layer.moe_layer_time(_cfg(shared_expert_ffn_hidden_size="2048"))
    assert shared.grouped_gemm_flops_forward == pytest.approx(6 * t * k * h * f + 6 * t * h * 2048)


def test_layer_time_is_the_moe_operators_plus_the_exchange() -> None:
    cfg = _cfg()
    ctx = context(cfg)
    ops = moe_layer.moe_block_ops(cfg)
    names = {op.name for op in ops}
    assert {"router", "permute", "unpermute", "expert_fc1", "expert_fc2"} <= names
    assert not any("attention" in op.name or op.name.startswith("qkv") for op in ops)
    derate = 1.0 / cfg.options.compute_efficiency
    fw = bw = 0.0
    for op in ops:  # one operator at a time: the sum is the block
        f, b, _, _ = roofline.ops_seconds([op], True, "none", frozenset(), device_efficiency(cfg),
                                          ctx.peak_flops * derate, derate)
        fw, bw = fw + f, bw + b
    t = moe_layer.moe_layer_time(cfg)
    assert t.compute_forward_s == pytest.approx(fw) and t.compute_backward_s == pytest.approx(bw)
    assert t.exchange_forward_s > 0
    assert t.exchange_backward_s == pytest.approx(t.exchange_forward_s * comm.BACKWARD_COMM_FACTOR["ep"])
    assert t.forward_s == pytest.approx(fw + t.exchange_forward_s)


def test_fp8_rows_run_the_gemms_against_the_fp8_peak() -> None:
    bf16, fp8 = _cfg(), _cfg(precision="fp8_blockwise")
    assert fp8.precision.linear_recipe == "blockwise" and not bf16.precision.linear_recipe
    assert moe_layer.gemm_peak_flops_per_s(bf16) == pytest.approx(bf16.hardware.peak_tflops["bf16"] * 1e12)
    assert moe_layer.gemm_peak_flops_per_s(fp8) == pytest.approx(fp8.hardware.peak_tflops["fp8"] * 1e12)
    assert moe_layer.moe_layer_time(fp8).compute_forward_s < moe_layer.moe_layer_time(bf16).compute_forward_s


def test_the_flex_dispatchers_map_to_the_flex_dispatcher() -> None:
    assert _cfg(dispatcher="deepep").parallel.moe_token_dispatcher == "flex"
    assert _cfg(dispatcher="hybridep").parallel.moe_token_dispatcher == "flex"
    assert _cfg().parallel.moe_token_dispatcher == "alltoall"


@pytest.mark.parametrize(("column", "value", "rule"), [
    ("dispatcher", "allgather", "one of"),
    ("precision", "mxfp8", "one of"),
    ("hidden_size", "", "required"),
    ("moe_topk", "two", "an integer"),
    ("num_experts", "7.5", "a positive integer"),
])
def test_bad_rows_name_the_file_column_and_rule(column: str, value: str, rule: str) -> None:
    with pytest.raises(ConfigError) as err:
        moe_layer.layer_config({**ROW, column: value}, file="bench.csv")
    text = str(err.value)
    assert "bench.csv" in text and f"column {column}" in text and rule in text


def test_an_empty_numeric_cell_read_as_nan_means_no_shared_expert() -> None:
    assert moe_layer.layer_config({**ROW, "shared_expert_ffn_hidden_size": float("nan")})["model"][
        "num_shared_experts"] == 0


def test_kind_puts_estimate_measurement_and_floors_side_by_side() -> None:
    params = kind.MoELayerParams(keep_columns=["dispatcher"])
    res = kind.run_moe_layer(RunContext(case_id="t", params=params, rows=[ROW]))
    (row,) = res.table
    t = moe_layer.moe_layer_time(_cfg())
    assert row["forward_ms"] == pytest.approx(t.forward_s * 1e3)
    assert row["measured_forward_ms"] == 4.0 and row["measured_backward_ms"] == 8.0
    peak = 989e12  # the h100-80g preset's dense BF16 peak
    assert row["gemm_floor_forward"] == pytest.approx(t.grouped_gemm_flops_forward / (4e-3 * peak))
    assert row["gemm_floor_backward"] == pytest.approx(2 * t.grouped_gemm_flops_forward / (8e-3 * peak))
    assert row["dispatcher"] == "alltoall" and res.producer == "ndval"


def test_kind_refuses_a_row_without_its_measurement() -> None:
    with pytest.raises(KindError, match="column backward_ms"):
        kind.run_moe_layer(RunContext(case_id="t", params=kind.MoELayerParams(), rows=[{**ROW, "backward_ms": ""}]))


def test_every_recorded_row_is_priced_and_has_its_source() -> None:
    with RECORDED.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 12
    for row in rows:
        assert row["source_ref"].startswith("NVIDIA/Megatron-LM@")
        t = moe_layer.moe_layer_time(estimator.load_config(moe_layer.layer_config(row)))
        assert t.forward_s > 0 and t.backward_s > t.forward_s
