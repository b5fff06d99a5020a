"""Overlap mechanisms (estimator.perf.overlap): the formulas with hand-computed values, each switch on a
bundled example against the quantities it hides under, the report's hidden/exposed seconds, the
off-switch, and the ConfigErrors of a switch the framework does not have or whose prerequisite is
missing."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.perf import overlap
from estimator.perf.context import comm_value, config_context
from estimator.perf.held import stage_params
from estimator.perf.stage import dp_collectives

EXAMPLES = Path(estimator.__file__).parent / "examples"
LLAMA = EXAMPLES / "llama3-8b-h100.yaml"  # megatron, tp 2 (SP), pp 2, dp 2, distributed optimizer
DSV3 = EXAMPLES / "deepseek-v3-671b-h100.yaml"


def _perf(path: Path, overrides: dict[str, Any]) -> estimator.PerfReport:
    return estimator.estimate_perf(estimator.load_config(path, overrides))


def test_pipelined_exposed_by_hand() -> None:
    # C = 10 in 4 pieces beside W = 8: max(10/4, 10 − 8·3/4) = max(2.5, 4) = 4
    assert overlap.pipelined_exposed(10.0, 8.0, 4) == 4.0
    # a long window leaves one piece: 10/4
    assert overlap.pipelined_exposed(10.0, 100.0, 4) == 2.5
    # one piece hides nothing
    assert overlap.pipelined_exposed(10.0, 100.0, 1) == 10.0


def test_concurrent_and_ring_exposed_by_hand() -> None:
    assert overlap.concurrent_exposed(5.0, 3.0) == 2.0
    assert overlap.concurrent_exposed(3.0, 5.0) == 0.0
    # ring, cp 4: 3 transfers of 9/3 = 3 beside blocks of 8/4 = 2: 3·(3 − 2) = 3 = max(0, 9 − 8·3/4)
    assert overlap.ring_exposed(9.0, 8.0, 4) == 3.0
    assert overlap.ring_exposed(6.0, 8.0, 4) == 0.0


def test_overlap_grad_reduce_leaves_one_bucket_of_the_reduce_scatter() -> None:
    """Megatron --overlap-grad-reduce: the gradient reduce-scatter in ⌈params/40M⌉ buckets beside the
    backward; the all-gather (no --overlap-param-gather) stays exposed."""
    cfg = estimator.load_config(LLAMA, {"parallel.overlap_grad_reduce": True})
    ctx = config_context(cfg)
    on = estimator.estimate_perf(cfg)
    off = _perf(LLAMA, {})
    for layout, s_on, s_off in zip(estimator.inputs.derive.stage_layouts(cfg), on.stages, off.stages, strict=True):
        held = stage_params(cfg, ctx, layout)
        non_exp, _stride, exp = dp_collectives(cfg, ctx, layout, held)
        rs = comm_value(cfg, ctx, [c for c in non_exp if c.kind == "reduce_scatter"], ctx.tp, "dp")
        ag = comm_value(cfg, ctx, [c for c in non_exp if c.kind == "all_gather"], ctx.tp, "dp")
        assert exp == [] and math.isclose(rs + ag, s_off.dp_comm, rel_tol=1e-12)
        buckets = math.ceil(sum(held) / 40e6)  # dp·cp = 2 -> max(40M, 2M) = 40M parameters a bucket
        assert buckets > 40  # ~2 B parameters a stage: the backward is far longer than the traffic
        assert math.isclose(s_on.dp_comm, rs / buckets + ag, rel_tol=1e-12)
        assert math.isclose(s_on.dp_hidden, rs - rs / buckets, rel_tol=1e-9)


def test_overlap_param_gather_hides_the_all_gather_too() -> None:
    on = _perf(LLAMA, {"parallel.overlap_grad_reduce": True, "parallel.overlap_param_gather": True})
    grads_only = _perf(LLAMA, {"parallel.overlap_grad_reduce": True})
    for s_on, s_g in zip(on.stages, grads_only.stages, strict=True):
        assert s_on.dp_comm < s_g.dp_comm
        assert s_on.dp_comm + s_on.dp_hidden == pytest.approx(s_g.dp_comm + s_g.dp_hidden, rel=1e-12)


def test_tp_comm_overlap_leaves_the_last_of_four_reduce_scatter_splits() -> None:
    """TE userbuffers: the all-gather half hides in the ring exchange, the reduce-scatter half in 4
    pipelined splits leaves one: 1/2 · 1/4 = 1/8 of the TP comm exposed (long GEMMs)."""
    on = _perf(LLAMA, {"parallel.tp_comm_overlap": True})
    off = _perf(LLAMA, {})
    for s_on, s_off in zip(on.stages, off.stages, strict=True):
        assert s_on.mp_comm == pytest.approx(s_off.mp_comm / 8, rel=1e-12)
        assert s_on.tp_hidden == pytest.approx(s_off.mp_comm * 7 / 8, rel=1e-12)


def test_async_tp_exposed_by_hand() -> None:
    # T = 12 s of TP comm with full recompute (β = 1/3): forward-type F = 8, backward B = 4; tp 2 (rings hide
    # half their GEMMs): all-gathers ring(4, 4) = 2, reduce-scatters ring(4, 2) = 3, backward all-gathers beside
    # the wo / w2 input-gradient GEMMs ring(2, 1) = 1.5, the backward reduce-scatters of summed gradients 2
    w = overlap.Windows(forward=0.0, backward=0.0, tp_ag_gemms=0.0, tp_rs_gemms=0.0, attention=0.0,
                        shared_experts=0.0, async_ag_fw=4.0, async_rs_fw=2.0, async_rs_dgrad=1.0,
                        async_bw_share=1.0 / 3.0)
    assert overlap.async_tp_exposed(12.0, w, 2) == pytest.approx(2.0 + 3.0 + 1.5 + 2.0)
    # nothing beside it: all exposed; endless GEMMs: only the unfused backward reduce-scatters, B/2
    none = overlap.Windows(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, async_bw_share=1.0 / 3.0)
    assert overlap.async_tp_exposed(12.0, none, 2) == pytest.approx(12.0)
    endless = overlap.Windows(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1e9, 1e9, 1e9, 1.0 / 3.0)
    assert overlap.async_tp_exposed(12.0, endless, 2) == pytest.approx(2.0)


def test_async_tp_hides_what_the_micro_pipeline_pass_fuses() -> None:
    over = {"profile": "fsdp2", "parallel.enable_async_tensor_parallel": True, "options.torch_compile": True,
            "parallel.fsdp_prefetch": False}
    on = _perf(LLAMA, over)
    plain = _perf(LLAMA, {**over, "parallel.enable_async_tensor_parallel": False})
    rings = _perf(LLAMA, {**over, "options.async_tp_patterns": False})
    for s_on, s_plain, s_rings in zip(on.stages, plain.stages, rings.stages, strict=True):
        # no full recompute: TP comm forward : backward = 1 : 1; long GEMMs hide every fused collective, the
        # backward reduce-scatters of the summed input gradients (half the backward) stay: T/4
        assert s_on.mp_comm == pytest.approx(s_plain.mp_comm / 4, rel=1e-9)
        assert s_on.tp_hidden == pytest.approx(s_plain.mp_comm * 3 / 4, rel=1e-9)
        assert s_rings.mp_comm == 0.0 and s_rings.tp_hidden > 0  # the off-switch: both sides in every pass


def test_cp_ring_hides_under_attention_blocks() -> None:
    """Ring attention, cp 2: one K/V transfer a pass beside one of two attention blocks:
    exposed = max(0, C − A·(cp−1)/cp) with A the stage's attention seconds (all passes)."""
    over = {"parallel.cp": 2, "parallel.dp": 1, "train.seq_length": 65536}
    on = _perf(LLAMA, over)
    off = _perf(LLAMA, {**over, "options.comm_overlap": False})
    for s_on, s_off in zip(on.stages, off.stages, strict=True):
        attention = s_off.by_class["attention"]
        assert s_on.cp_comm == pytest.approx(max(0.0, s_off.cp_comm - attention / 2), rel=1e-12, abs=1e-15)
        assert s_on.cp_hidden == pytest.approx(s_off.cp_comm - s_on.cp_comm, rel=1e-12)
        assert s_on.cp_hidden > 0
    ulysses = _perf(LLAMA, {**over, "parallel.cp_comm_type": "a2a"})
    assert all(s.cp_hidden == 0.0 for s in ulysses.stages)  # no compute beside Ulysses' all-to-alls


#: DeepSeek-V3 as Megatron-Core accepts --overlap-moe-expert-parallel-comm: no full recompute, pp 1 (or vpp ≥ 2)
DSV3_A2A = {"parallel.pp": 1, "parallel.layers_per_stage": None, "parallel.tp": 2, "parallel.dp": 64,
            "recompute.mode": "none", "hardware.devices": 128, "train.num_micro_batches": 8}


def _passes(s: Any) -> float:
    return (max(s.fw_compute, s.host_fw) + max(s.bw_compute, s.host_bw) + max(s.recompute, s.host_rec))


def test_ep_overlap_with_the_other_micro_batch() -> None:
    """--overlap-moe-expert-parallel-comm without PP (m = 8): the first forward and the last backward run alone
    (u = 1/8), the other steps hide their all-to-alls beside the partner's passes:
    exposed = C/8 + 7/8·max(0, C − (F + B)). Off-switch: the window (m−1)/m of the passes."""
    on = _perf(DSV3, {**DSV3_A2A, "parallel.overlap_moe_expert_parallel_comm": True})
    off = _perf(DSV3, DSV3_A2A)
    assert estimator.load_config(DSV3, DSV3_A2A).num_micro_batches == 8
    (s_on,), (s_off,) = on.stages, off.stages
    c, w = s_off.ep_comm, _passes(s_off)
    assert s_on.ep_comm == pytest.approx(c / 8 + 7 / 8 * max(0.0, c - w), rel=1e-12, abs=1e-15)
    before = _perf(DSV3, {**DSV3_A2A, "parallel.overlap_moe_expert_parallel_comm": True,
                          "options.a2a_unpaired_steps": False}).stages[0]
    assert before.ep_comm == pytest.approx(max(0.0, c - w * 7 / 8), rel=1e-12, abs=1e-15)


def test_a2a_unpaired_share_follows_megatrons_warmup() -> None:
    """Interleaved pp 4 × vpp 2, m 8 (16 chunk steps): warm-up (p − r − 1)·2 + (vp − 1)·p + 1 = 11, 9, 7, 5."""
    from estimator.perf.overlap import a2a_unpaired_share

    cfg = estimator.load_config(DSV3, {"parallel.pp": 4, "parallel.vpp": 2, "parallel.schedule": "interleaved",
                                       "parallel.layers_per_stage": None, "parallel.pipeline_layout": None,
                                       "parallel.dp": 512, "recompute.mode": "none", "train.num_micro_batches": 8,
                                       "model.num_layers": 64, "model.mtp_layers": 0,
                                       "parallel.overlap_moe_expert_parallel_comm": True})
    assert cfg.num_micro_batches == 8
    assert [a2a_unpaired_share(cfg, r) for r in range(4)] == [11 / 16, 9 / 16, 7 / 16, 5 / 16]
    with pytest.raises(ConfigError) as err:  # Megatron-Core: pp > 1 needs vpp; no full recompute
        estimator.load_config(DSV3, {"parallel.overlap_moe_expert_parallel_comm": True})
    assert err.value.field == "parallel.overlap_moe_expert_parallel_comm"
    assert "virtual_pipeline_model_parallel_size" in err.value.rule and "full recomputation" in err.value.rule


def test_report_shows_hidden_and_exposed_per_part() -> None:
    over = {"parallel.overlap_grad_reduce": True, "parallel.overlap_param_gather": True,
            "parallel.tp_comm_overlap": True}
    on, off = _perf(LLAMA, over), _perf(LLAMA, {})
    k, m = on.straggler_stage, on.num_micro_batches
    assert set(on.overlap) == {"MP_COMM", "EP_COMM", "CP_COMM", "DP_COMM"}
    assert on.overlap["MP_COMM"]["exposed_s"] == pytest.approx(on.perf_parts["MP_COMM"], rel=1e-12)
    assert on.overlap["MP_COMM"]["hidden_s"] + on.overlap["MP_COMM"]["exposed_s"] == pytest.approx(
        m * off.stages[k].mp_comm, rel=1e-12)
    assert on.overlap["DP_COMM"]["exposed_s"] == pytest.approx(on.perf_parts["DP_COMM"], rel=1e-12)
    assert off.overlap == {}
    assert "hidden [s/step]" in estimator.perf.report.format_perf_table(on)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_all_overlap_off_is_bit_identical(path: Path) -> None:
    """Every switch on but ``options.comm_overlap: false``: every number as with no switch (and as the
    stored pre-mechanism outputs, tests/estimator/test_scalar_reference.py)."""
    base = estimator.load_config(path)
    flags = {"parallel.overlap_grad_reduce": True, "parallel.overlap_param_gather": base.parallel.distributed_optimizer,
             "parallel.tp_comm_overlap": base.parallel.sequence_parallel and base.parallel.tp > 1,
             "parallel.moe_shared_expert_overlap": base.model.shared_ffn_total > 0} if base.profile == "megatron" else {}
    # (--overlap-moe-expert-parallel-comm: refused beside the shared-expert overlap, full recompute and pp > 1
    # without vpp, as the DeepSeek-V3 example runs; its off-switch: test_ep_overlap_with_the_other_micro_batch)
    off = {"options.comm_overlap": False}
    a = estimator.estimate_perf(estimator.load_config(path, {**flags, **off}))
    b = estimator.estimate_perf(estimator.load_config(path, off))
    assert a.perf_parts == b.perf_parts and a.real_parts == b.real_parts and a.stage_times_s == b.stage_times_s
    assert a.overlap == {}


@pytest.mark.parametrize(("profile", "field", "extra"), [
    ("megatron", "enable_async_tensor_parallel", {"options": {"torch_compile": True}}),
    ("fsdp2", "tp_comm_overlap", {}),
    ("fsdp2", "overlap_grad_reduce", {}),
    ("sapp-nd", "fsdp_prefetch", {}),
])
def test_a_switch_the_framework_lacks_is_a_config_error(tmp_path: Path, profile: str, field: str,
                                                        extra: dict[str, Any]) -> None:
    text = LLAMA.read_text(encoding="utf-8")
    text = text.replace("profile: megatron", f"profile: {profile}").replace(
        "parallel:\n", f"parallel:\n  {field}: true\n", 1)
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        estimator.load_config(path, extra.get("options") and {f"options.{k}": v for k, v in extra["options"].items()})
    assert err.value.field == f"parallel.{field}"
    assert f"profile '{profile}' has no such switch" in err.value.rule
    assert err.value.file == str(path) and err.value.line is not None


@pytest.mark.parametrize(("overrides", "field", "rule_part"), [
    ({"parallel.overlap_param_gather": True, "parallel.overlap_grad_reduce": True,
      "parallel.distributed_optimizer": False}, "parallel.overlap_param_gather", "distributed optimizer"),
    ({"parallel.overlap_param_gather": True}, "parallel.overlap_param_gather", "--overlap-grad-reduce"),
    ({"parallel.tp_comm_overlap": True, "parallel.sequence_parallel": False}, "parallel.tp_comm_overlap",
     "sequence parallelism"),
    ({"parallel.moe_shared_expert_overlap": True}, "parallel.moe_shared_expert_overlap", "shared experts"),
    ({"profile": "fsdp2", "parallel.enable_async_tensor_parallel": True}, "parallel.enable_async_tensor_parallel",
     "torch_compile"),
])
def test_missing_prerequisite_is_a_config_error(overrides: dict[str, Any], field: str, rule_part: str) -> None:
    with pytest.raises(ConfigError) as err:
        estimator.load_config(LLAMA, overrides)
    assert err.value.field == field and rule_part in err.value.rule


# -- MoE parallel folding (Megatron-Core parallel_state.initialize_model_parallel) -----------------


@pytest.mark.parametrize(("parallel", "edp"), [
    # Qwen3-235B-A22B-like: ep 32 > dp·cp = 8 is fine with etp 1 (the expert group spans tp·cp·dp = 32)
    ({"tp": 4, "cp": 1, "dp": 8, "ep": 32, "etp": 1}, 1),
    ({"tp": 2, "cp": 2, "dp": 8, "ep": 16, "etp": 2}, 1),
    ({"tp": 4, "cp": 2, "dp": 4, "ep": 8, "etp": 1}, 4),  # 4·2·4 = 32 ranks = 8·1·edp -> edp 4
])
def test_expert_group_folds_over_tp_cp_dp(parallel: dict[str, int], edp: int) -> None:
    cfg = estimator.load_config(DSV3, {**{f"parallel.{k}": v for k, v in parallel.items()}, "parallel.pp": 1,
                                       "hardware.devices": parallel["tp"] * parallel["cp"] * parallel["dp"],
                                       "train.seq_length": 4096, "parallel.layers_per_stage": None})
    assert estimator.inputs.derive.expert_groups(cfg).edp == edp
    assert config_context(cfg).edp == edp


def test_impossible_expert_fold_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as err:  # ep·etp = 64 does not divide tp·cp·dp = 32
        estimator.load_config(DSV3, {"parallel.tp": 4, "parallel.dp": 8, "parallel.pp": 1, "parallel.ep": 32,
                                     "parallel.etp": 2, "hardware.devices": 32, "parallel.layers_per_stage": None})
    assert err.value.field == "parallel.ep"
    assert "ep·etp must divide dp·tp·cp (32)" in err.value.rule and "Megatron-Core" in err.value.rule
