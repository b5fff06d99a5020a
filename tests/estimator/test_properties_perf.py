"""Properties of the step-time model over random valid configs (synthetic, hypothesis).

All parts ≥ 0 and add up to TOTAL; PP_WAIT = 0 when pp = 1; EP_WAIT = 0 for a dense model;
DP_WAIT = 0 when no data-parallel group exists (dp = cp = 1 and expert-DP = 1; with dp = 1 the
expert gradients can still need a reduction over expert-DP = tp/ep, which is real traffic);
TOTAL never falls when only the network bandwidth is reduced. Default options include the host
kernel-launch bound (``host_launch_overhead``; megatron/fsdp2 profiles), which binds on about a third
of these small synthetic configs, so every property is also checked with host-bound passes.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import estimator
from estimator.config.schema import ConfigError
from estimator.inputs import derive
from estimator.inputs.hardware import PRESETS

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid synthetic config (invalid combinations are rejected by ``assume``-like filtering)."""
    moe = draw(st.booleans())
    heads = draw(st.sampled_from([4, 8, 16]))
    hidden = heads * draw(st.sampled_from([32, 64]))
    tp = draw(st.sampled_from([1, 2, 4]))
    pp = draw(st.sampled_from([1, 2, 4]))
    dp = draw(st.sampled_from([1, 2, 4, 8]))
    cp = draw(st.sampled_from([1, 1, 2]))
    schedule = draw(st.sampled_from(["1f1b", "gpipe", "interleaved", "zero_bubble_v"]))
    vpp = 1 if schedule in ("1f1b", "gpipe") else 2
    layers = pp * vpp * draw(st.sampled_from([1, 2, 3]))
    experts = draw(st.sampled_from([4, 8, 16])) if moe else 0
    ep = draw(st.sampled_from([d for d in (1, 2, 4, 8) if experts % d == 0 and (dp * tp * cp) % d == 0] or [1])) if moe else 1
    model: dict[str, Any] = {
        "num_layers": layers, "hidden_size": hidden, "num_attention_heads": heads,
        "num_kv_heads": draw(st.sampled_from([heads, heads // 2])), "ffn_hidden_size": 4 * hidden,
        "vocab_size": draw(st.sampled_from([1000, 32000])), "activation": draw(st.sampled_from(["swiglu", "gelu"])),
    }
    if draw(st.booleans()):
        model.update({"attention": "mla", "num_kv_heads": heads, "kv_lora_rank": 64, "qk_head_dim": 32,
                      "qk_rope_head_dim": 16, "v_head_dim": 32, "q_lora_rank": draw(st.sampled_from([None, 96]))})
    if moe:
        model.update({"num_experts": experts, "moe_topk": draw(st.sampled_from([1, 2])), "num_shared_experts":
                      draw(st.sampled_from([0, 1])), "moe_ffn_hidden_size": hidden,
                      "num_dense_layers": draw(st.integers(0, layers - 1))})
    return {
        "profile": draw(st.sampled_from(["sapp-nd", "megatron", "fsdp2"])),
        "model": model,
        "train": {"seq_length": 256 * cp * tp, "micro_batch_size": draw(st.sampled_from([1, 2])),
                  "num_micro_batches": draw(st.sampled_from([1, 4, 8]))},
        "parallel": {"tp": tp, "pp": pp, "vpp": vpp, "dp": dp, "cp": cp, "ep": ep, "schedule": schedule,
                     # Ulysses scatters a TP rank's heads over cp: only where cp divides them
                     "cp_comm_type": draw(st.sampled_from(["p2p", "a2a"])) if (heads // tp) % cp == 0 else "p2p",
                     "sequence_parallel": draw(st.booleans()) and tp > 1,
                     "distributed_optimizer": draw(st.booleans())},
        "recompute": {"mode": draw(st.sampled_from(["none", "selective", "full"]))},
        "hardware": draw(st.sampled_from(["a100-80g", "h100-80g", "ascend-910b", "ascend-910c"])),
        "options": {"ep_bubble_overlap_ratio": draw(st.sampled_from([0.0, 0.5, 1.0])),
                    "dp_comm_overlap": draw(st.sampled_from([0.0, 0.5])),
                    "compute_efficiency": draw(st.sampled_from([0.3, 1.0]))},
    }


def _load(cfg: dict[str, Any]) -> estimator.EstimatorConfig | None:
    try:
        return estimator.load_config(cfg)
    except ConfigError:
        return None


@SETTINGS
@given(configs())
def test_parts_non_negative_and_additive(cfg: dict[str, Any]) -> None:
    c = _load(cfg)
    if c is None:
        return
    r = estimator.estimate_perf(c)
    for name, v in {**r.real_parts, **r.perf_parts}.items():
        assert math.isfinite(v) and v >= 0, (name, v)
    parts = sum(v for k, v in r.real_parts.items() if k != "TOTAL")
    assert math.isclose(r.total, parts, rel_tol=1e-9)
    p = c.parallel
    if p.pp == 1:
        assert r.real_parts["PP_WAIT"] == 0.0
    if not c.model.is_moe:
        assert r.real_parts["EP_WAIT"] == 0.0
    edp = p.dp * p.tp * p.cp // (derive.expert_degrees(p.dp, p.tp, p.cp, p.ep, p.etp).t_exp * p.ep)
    if p.dp == 1 and p.cp == 1 and (not c.model.is_moe or edp <= 1):
        assert r.real_parts["DP_WAIT"] == 0.0


def _slower(hw_name: str, factor: float) -> dict[str, Any]:
    hw = dict(PRESETS[hw_name])
    hw["levels"] = [{**lv, "bandwidth_gb_s": lv["bandwidth_gb_s"] / factor} for lv in hw["levels"]]
    return hw


@SETTINGS
@given(configs(), st.sampled_from([1.5, 4.0, 100.0]))
def test_total_never_falls_when_bandwidth_reduced(cfg: dict[str, Any], factor: float) -> None:
    c = _load(cfg)
    if c is None:
        return
    base = estimator.estimate_perf(c).total
    slow = estimator.estimate_perf(estimator.load_config({**cfg, "hardware": _slower(cfg["hardware"], factor)}))
    assert slow.total >= base * (1 - 1e-12)


@SETTINGS
@given(configs())
def test_exp1_bubble_never_shrinks_when_ep_comm_added_1f1b_p2(cfg: dict[str, Any]) -> None:
    # seed §2.3 derivation (P3-E1): 1F1B, p = 2, no per-step tail (DP hack), no overlap
    cfg = {**cfg, "parallel": {**cfg["parallel"], "pp": 2, "vpp": 1, "schedule": "1f1b"},
           "model": {**cfg["model"], "num_layers": 4, "num_dense_layers": min(cfg["model"].get("num_dense_layers", 0), 3)},
           "options": {**cfg["options"], "ep_bubble_overlap_ratio": 0.0, "dp_comm_zero_hack": True}}
    with_ep = _load(cfg)
    if with_ep is None:
        return
    without = estimator.load_config({**cfg, "options": {**cfg["options"], "part_coefficients": {"EP_COMM": 0.0}}})
    before = estimator.estimate_perf(without).perf_parts["BUBBLE"]
    after = estimator.estimate_perf(with_ep).perf_parts["BUBBLE"]
    assert after >= before * (1 - 1e-12)
