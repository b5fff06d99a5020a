"""Step-time assembly on toy and bundled configs: modes, schedules, coefficients, report."""

from __future__ import annotations

import json
from typing import Any

import pytest

import estimator
from estimator.perf import compute, parts

GPT: dict[str, Any] = {  # synthetic GPT, Narayanan-style dims
    "profile": "megatron",
    "model": {"num_layers": 4, "hidden_size": 1024, "num_attention_heads": 16, "ffn_hidden_size": 4096,
              "vocab_size": 32000, "activation": "gelu", "norm": "layernorm"},
    "train": {"seq_length": 1024, "micro_batch_size": 2, "num_micro_batches": 4},
    "parallel": {"tp": 1, "pp": 1, "dp": 1},
    "hardware": "a100-80g",
    # the FLOP formulas are checked on the raw-peak model (test_perf_roofline.py prices operators)
    "options": {"operator_roofline": False},
}


def _cfg(**sections: Any) -> estimator.EstimatorConfig:
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in GPT.items()}
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return estimator.load_config(data)


def test_single_device_compute_matches_narayanan() -> None:
    # one device, no comm: TOTAL = m·(3·F_layers·L + 3·head) / peak, F = 24bsh² + 4bs²h
    cfg = _cfg()
    r = estimator.estimate_perf(cfg)
    b, s, h, v, L, m = 2, 1024, 1024, 32000, 4, 4
    flops = m * 3 * (L * (24 * b * s * h**2 + 4 * b * s**2 * h) + 2 * b * s * h * v)
    assert r.total == pytest.approx(flops / 312e12, rel=1e-12)
    assert r.real_parts["COMP"] == r.total and r.mfu == pytest.approx(1.0)


def test_recompute_full_adds_one_forward_of_the_layers() -> None:
    base = estimator.estimate_perf(_cfg())
    full = estimator.estimate_perf(_cfg(recompute={"mode": "full"}))
    assert full.perf_parts["RECOMPUTE"] == pytest.approx(base.perf_parts["FW_COMPUTE"] - _head_s(), rel=1e-12)
    sel = estimator.estimate_perf(_cfg(recompute={"mode": "selective"}))
    assert 0 < sel.perf_parts["RECOMPUTE"] < full.perf_parts["RECOMPUTE"]


def _head_s() -> float:
    return 4 * compute.output_head_flops(2 * 1024, 1024, 32000) / 312e12


def test_efficiency_scales_compute_only() -> None:
    a = estimator.estimate_perf(_cfg(parallel={"tp": 2, "dp": 2}))
    b = estimator.estimate_perf(_cfg(parallel={"tp": 2, "dp": 2}, options={"compute_efficiency": 0.5}))
    assert b.real_parts["COMP"] == pytest.approx(2 * a.real_parts["COMP"])
    assert b.real_parts["MP_WAIT"] == a.real_parts["MP_WAIT"] > 0


@pytest.mark.parametrize("schedule,vpp", [("1f1b", 1), ("gpipe", 1), ("interleaved", 2), ("zero_bubble_v", 2)])
def test_schedules_order_of_bubble(schedule: str, vpp: int) -> None:
    r = estimator.estimate_perf(_cfg(parallel={"pp": 2, "vpp": vpp, "schedule": schedule}))
    one = estimator.estimate_perf(_cfg(parallel={"pp": 2}))
    assert r.perf_parts["BUBBLE"] <= one.perf_parts["BUBBLE"] + 1e-15
    assert r.real_parts["PP_WAIT"] > 0


def test_part_coefficients() -> None:
    base = estimator.estimate_perf(_cfg(parallel={"tp": 2, "dp": 2}))
    k = estimator.estimate_perf(_cfg(parallel={"tp": 2, "dp": 2}, options={"part_coefficients": {"MP_COMM": 2.0}}))
    assert k.perf_parts["MP_COMM"] == pytest.approx(2 * base.perf_parts["MP_COMM"])
    assert k.perf_parts["FW_COMPUTE"] == base.perf_parts["FW_COMPUTE"]


def test_score_mode_units() -> None:
    r = estimator.estimate_perf(_cfg(parallel={"tp": 2, "dp": 2}, options={"perf_mode": "score"}))
    assert r.unit == "score" and r.mode == "score"
    import math

    assert math.isnan(r.mfu) and math.isnan(r.tokens_per_s)
    strag = r.stages[r.straggler_stage]
    w = parts.reference_comm_weight(1024, 4096, 1024)
    assert r.perf_parts["MP_COMM"] == pytest.approx(4 * strag.tp_bytes * w)


def test_report_table_and_json() -> None:
    r = estimator.estimate_perf(estimator.load_config("estimator/examples/deepseek-v3-mini-A.yaml"))
    text = parts.format_perf_table(r)
    for name in (*parts.PERF_PARTS, *parts.REAL_PARTS, "straggler", "MFU"):
        assert name in text
    doc = json.loads(json.dumps(r.to_dict()))
    assert doc["real_parts"]["TOTAL"] == r.total and len(doc["stages"]) == 2


def test_cli_estimate_prints_time_parts(capsys: pytest.CaptureFixture[str]) -> None:
    from ndval.harness.cli import main

    assert main(["estimate", "estimator/examples/deepseek-v3-mini-A.yaml"]) == 0
    out = capsys.readouterr().out
    # every PerfPart and RealPart on its own table row, in seconds, with tokens/s and MFU
    rows = {line.split()[0] for line in out.splitlines() if line.strip()}
    assert set(parts.PERF_PARTS) | set(parts.REAL_PARTS) <= rows
    assert "[s/step]" in out and "tokens/s" in out and "MFU" in out


def test_imbalance_helper_feeds_compute() -> None:
    imb = compute.ep_rank_load_imbalance([4, 0, 2, 2], 2)  # loads (4, 4): balanced
    assert imb == 1.0


def test_ep_token_distribution_skews_compute_and_comm() -> None:
    from estimator.experiments.seed import seed_run

    cfg = seed_run("B")  # 32 experts, ep 4
    balanced = estimator.estimate_perf(estimator.load_config(cfg))
    even = estimator.estimate_perf(estimator.load_config({**cfg, "options": {"ep_tokens_per_expert": [1.0] * 32}}))
    assert even.real_parts == balanced.real_parts
    # rank 0 (experts 0..7) gets half of all tokens: 2× the mean rank load
    skew = [3.0] * 8 + [1.0] * 24
    r = estimator.estimate_perf(estimator.load_config({**cfg, "options": {"ep_tokens_per_expert": skew}}))
    s0, s1 = r.stages[1], balanced.stages[1]
    assert s0.ep_bytes == pytest.approx(2 * s1.ep_bytes)
    assert s0.fw_flops > s1.fw_flops
    with pytest.raises(estimator.ConfigError, match="ep_tokens_per_expert"):
        estimator.estimate_perf(estimator.load_config({**cfg, "options": {"ep_tokens_per_expert": [1.0] * 31}}))


def test_selective_modules_order() -> None:
    from estimator.experiments.seed import seed_run

    def rec(modules: list[str]) -> float:
        cfg = seed_run("A")
        cfg["recompute"] = {"mode": "selective", "modules": modules}
        return estimator.estimate_perf(estimator.load_config(cfg)).perf_parts["RECOMPUTE"]

    core, up = rec(["core_attn"]), rec(["mla_up_proj"])
    assert 0 < core < rec(["core_attn", "mla_up_proj"]) and up > 0
    assert rec(["core_attn", "mla_up_proj"]) == pytest.approx(core + up)
    assert rec(["layernorm", "moe_act"]) == 0.0
    assert rec(["moe"]) > rec(["shared_experts"]) > 0


def test_cp_ring_and_ulysses_all_to_all_priced_by_hand() -> None:
    # synthetic GPT, 4 layers, cp = 2 on one node: b·s/cp = 2·1024/2 = 1024 local tokens, B_c = 2,
    # a·d_h = n_kv·d_h = 16·64 = 1024, no recompute (pass calls: ring 1 + 2, all-to-all 1 + 1)
    from estimator.perf import comm, network

    ring = _cfg(parallel={"cp": 2})
    a2a = _cfg(parallel={"cp": 2, "cp_comm_type": "a2a"})
    levels = ring.hardware.levels
    block = 2.0 * 1024 * 1024 * 2  # K and V of the local tokens
    ring_s = 4 * 3 * network.p2p_time_s(block, 1, levels)
    buf = 1024 * 1024 * 2  # Q, K, V and output: tokens · 1024 · B_c each
    a2a_s = 4 * 2 * 4 * network.all_to_all_time_s(buf, 2, 1, levels)
    r_ring, r_a2a = estimator.estimate_perf(ring), estimator.estimate_perf(a2a)
    # per micro-batch; the ring's transfers partly hide beside the attention blocks (estimator.perf.overlap)
    assert r_ring.stages[0].cp_comm + r_ring.stages[0].cp_hidden == pytest.approx(ring_s, rel=1e-12)
    assert r_a2a.stages[0].cp_comm == pytest.approx(a2a_s, rel=1e-12)
    assert r_a2a.perf_parts["CP_COMM"] == pytest.approx(4 * a2a_s, rel=1e-12)  # m = 4
    assert r_a2a.stages[0].cp_bytes == pytest.approx(4 * 2 * 4 * buf / 2)  # (cp−1)/cp of each buffer
    # compute is the same; the ring runs core attention once per KV block, Ulysses once
    assert r_a2a.real_parts["COMP"] == pytest.approx(r_ring.real_parts["COMP"], rel=1e-12)
    from estimator.perf import kernels

    shape = {"moe": False, "layer_ep": 1, "tp": 1, "sequence_parallel": False, "tp_blocks": 2, "cp": 4,
             "flash_attention": True}
    ring_mods = kernels.layer_modules(kernels.layer_shape(ring.model, **shape))
    a2a_mods = kernels.layer_modules(kernels.layer_shape(ring.model, **shape, cp_comm="a2a"))
    assert ring_mods["core_attn"]["FLASH"] == 4 and ring_mods["cp_comm"]["COLLECTIVE"] == 6
    assert a2a_mods["core_attn"]["FLASH"] == 1 and a2a_mods["cp_comm"] == {"COLLECTIVE": 4}
    # GQA: K and V carry n_kv heads only
    gqa = estimator.estimate_perf(_cfg(model={"num_kv_heads": 4}, parallel={"cp": 2, "cp_comm_type": "a2a"}))
    assert gqa.stages[0].cp_bytes == pytest.approx(4 * 2 * (2 * buf + 2 * buf / 4) / 2)
    # full recompute re-runs the forward all-to-alls: pass split 1 : 1 : 1
    full = estimator.estimate_perf(_cfg(parallel={"cp": 2, "cp_comm_type": "a2a"}, recompute={"mode": "full"}))
    fw, bw, rec = full.stages[0].pass_comm()
    assert fw == pytest.approx(bw) and fw == pytest.approx(rec)
    assert comm.pass_comm_factors("cp_a2a", True) == (1.0, 1.0, 1.0)


def test_ulysses_needs_cp_to_divide_the_heads_of_a_tp_rank() -> None:
    cfg = _cfg(parallel={"tp": 4, "cp": 8, "cp_comm_type": "a2a"})  # 16/4 = 4 heads per TP rank
    with pytest.raises(estimator.ConfigError, match=r"parallel\.cp_comm_type"):
        estimator.estimate_perf(cfg)
