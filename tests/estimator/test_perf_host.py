"""Host kernel-launch bound of the step-time model (``options.host_launch_overhead``).

Kernel counts (estimator.perf.kernels) are checked by hand-counted synthetic layers; the bound
``pass time = max(device, host)`` and its guarantees (parts ≥ 0, TOTAL = Σ parts, exact identity
when off / in score mode / under sapp-nd and legacy(), the fast calibration path) on synthetic toy
configs whose kernels are so short that the host is the bottleneck.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import estimator
from estimator.config import presets
from estimator.experiments import calibrate
from estimator.inputs.profiles import HOST_LAUNCH_COST, host_launch_cost_s
from estimator.perf import kernels
from estimator.perf.parts import REAL_PARTS, StageCost, stage_costs
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, SYNTHETIC_MOE_MODEL


def _shape(**kw: Any) -> kernels.LayerShape:
    base: dict[str, Any] = {
        "attention": "mha", "q_compressed": False, "rope": False, "flash_attention": True, "moe": False,
        "local_experts": 0, "shared_experts": False, "layer_ep": 1, "tp": 1, "sequence_parallel": False,
        "tp_blocks": 2, "cp": 1,
    }
    return kernels.LayerShape(**{**base, **kw})


def test_dense_layer_kernel_count_by_hand() -> None:
    # fw: 2 norms + QKV + out GEMM + flash + (fc1, act, fc2) + 2 residual = 10
    # bw: norms 2·2 + GEMMs 4·2 + flash 2 + pointwise 3·1 = 17; full recompute = fw
    k = kernels.layer_pass_kernels(_shape(), "full")
    assert (k.forward, k.backward, k.recompute) == (10, 17, 10)
    assert kernels.layer_pass_kernels(_shape(), "none").recompute == 0
    # selective (core_attn default) re-runs only the flash kernel
    assert kernels.layer_pass_kernels(_shape(), "selective").recompute == 1


def test_kernel_count_follows_structure() -> None:
    base = kernels.layer_pass_kernels(_shape(), "none")
    rope = kernels.layer_pass_kernels(_shape(rope=True), "none")
    assert rope.forward == base.forward + 2 and rope.backward == base.backward + 2
    unfused = kernels.layer_pass_kernels(_shape(flash_attention=False), "none")
    assert unfused.forward == base.forward - 1 + 5  # baddbmm, softmax, dropout, bmm, copy
    tp = kernels.layer_pass_kernels(_shape(tp=2), "none")
    sp = kernels.layer_pass_kernels(_shape(tp=2, sequence_parallel=True), "none")
    assert tp.forward == base.forward + 2 and sp.forward == base.forward + 4
    mla = kernels.layer_pass_kernels(_shape(attention="mla", q_compressed=True), "none")
    assert mla.forward == base.forward + 3 + 2 + 2  # q down/norm/up, kv down/norm/up, RoPE


def test_moe_layer_counts_local_experts_only() -> None:
    moe = {"moe": True, "shared_experts": True, "tp_blocks": 1}
    ep1 = kernels.layer_pass_kernels(_shape(local_experts=8, **moe), "none")
    ep4 = kernels.layer_pass_kernels(_shape(local_experts=2, layer_ep=4, **moe), "none")
    # 6 fewer local experts × 3 kernels, + dispatch and combine all-to-all
    assert ep1.forward - ep4.forward == 6 * 3 - 2


def test_profile_data_has_a_source() -> None:
    cost = HOST_LAUNCH_COST["megatron"]
    assert cost is not None and cost.per_launch_us > 0 and "HolisticTraceAnalysis" in cost.source
    assert HOST_LAUNCH_COST["sapp-nd"] is None


def _cfg(model: dict[str, Any], **options: Any) -> dict[str, Any]:
    """Synthetic toy config: tiny layers on an H100, so the host launch time dominates (raw-peak device
    model: the operator roofline's sourced 20 µs per-kernel latency would outlast a 5 µs launch)."""
    return {
        "profile": "megatron",
        "model": copy.deepcopy(model),
        "train": {"seq_length": 128, "micro_batch_size": 1, "num_micro_batches": 8},
        "parallel": {"tp": 2, "pp": 2, "dp": 2, "ep": 2 if model.get("num_experts") else 1},
        "recompute": {"mode": "full"},
        "hardware": {"preset": "h100-80g", "devices": 8},
        "options": {"operator_roofline": False, **options},
    }


@pytest.mark.parametrize("model", [SYNTHETIC_DENSE_MODEL, SYNTHETIC_MOE_MODEL], ids=["dense", "moe"])
def test_synthetic_host_bound_stage_passes_take_the_host_time(model: dict[str, Any]) -> None:
    cfg = estimator.load_config(_cfg(model))
    per_launch = host_launch_cost_s(cfg)
    assert per_launch > 0
    for s in stage_costs(cfg):
        assert s.kernels_fw > 0 and s.host_fw == pytest.approx(s.kernels_fw * per_launch)
        passes = [(s.fw_time, s.host_fw), (s.bw_time, s.host_bw), (s.rec_time, s.host_rec)]
        comm = s.pass_comm()
        for (t, host), c in zip(passes, comm, strict=True):
            assert t + c >= host * (1 - 1e-12)  # pass time ≥ host launch time
        # toy layers: the host is the bottleneck, pass time = host time
        assert s.per_micro_batch == pytest.approx(s.host_fw + s.host_bw + s.host_rec, rel=1e-9)
    on = estimator.estimate_perf(cfg)
    off = estimator.estimate_perf(estimator.load_config(_cfg(model, host_launch_overhead=False)))
    assert on.total > off.total
    for r in (on, off):
        assert all(r.real_parts[k] >= 0 for k in REAL_PARTS)
        assert r.total == pytest.approx(sum(v for k, v in r.real_parts.items() if k != "TOTAL"), rel=1e-9)
    # the exposed host time lands in COMP only (the spec's parts have no host part)
    for part in ("MP_WAIT", "EP_WAIT", "CP_WAIT", "DP_WAIT"):
        assert on.real_parts[part] == off.real_parts[part]
    assert on.real_parts["COMP"] > off.real_parts["COMP"]


@pytest.mark.parametrize("options", [
    {"host_launch_overhead": False},
    {"perf_mode": "score"},
    presets.legacy(),
], ids=["off", "score", "legacy"])
def test_no_host_term_when_off_in_score_mode_and_legacy(options: dict[str, Any]) -> None:
    cfg = estimator.load_config(_cfg(SYNTHETIC_MOE_MODEL, **options))
    assert all(s.host_fw == s.host_bw == s.host_rec == 0.0 for s in stage_costs(cfg))


def test_sapp_nd_profile_has_no_host_term_and_is_unchanged() -> None:
    raw = _cfg(SYNTHETIC_MOE_MODEL)
    raw["profile"] = "sapp-nd"
    on = estimator.estimate_perf(estimator.load_config(raw))
    raw["options"] = {**raw["options"], "host_launch_overhead": False}
    off = estimator.estimate_perf(estimator.load_config(raw))
    assert on.real_parts == off.real_parts and on.perf_parts == off.perf_parts


def test_micro_batch_size_does_not_change_kernel_count() -> None:
    small = estimator.load_config(_cfg(SYNTHETIC_DENSE_MODEL))
    raw = _cfg(SYNTHETIC_DENSE_MODEL)
    raw["train"]["micro_batch_size"] = 8
    big = estimator.load_config(raw)
    for a, b in zip(stage_costs(small), stage_costs(big), strict=True):
        assert (a.kernels_fw, a.kernels_bw, a.kernels_rec) == (b.kernels_fw, b.kernels_bw, b.kernels_rec)


def test_ep_hidden_in_bubble_never_shortens_a_host_bound_pass() -> None:
    s = StageCost(stage=0, fw_compute=1.0, bw_compute=2.0, recompute=1.0, mp_comm=0.0, ep_comm=3.0, cp_comm=0.0,
                  dp_comm=0.0, ep=2, host_fw=10.0, host_bw=10.0, host_rec=10.0, full_recompute=True)
    assert s.per_micro_batch == 30.0
    assert s.per_micro_batch_ep_hidden(1.0) == 30.0  # host-bound: hiding EP saves nothing
    loose = StageCost(stage=0, fw_compute=1.0, bw_compute=2.0, recompute=1.0, mp_comm=0.0, ep_comm=3.0, cp_comm=0.0,
                      dp_comm=0.0, ep=2, full_recompute=True)
    assert loose.per_micro_batch - loose.per_micro_batch_ep_hidden(1.0) == pytest.approx(3.0)


@pytest.mark.parametrize("roofline", [False, True])
def test_fast_calibration_path_matches_estimate_perf_with_host_term(roofline: bool) -> None:
    cfgs = [estimator.load_config(_cfg(m, operator_roofline=roofline, host_launch_cost_us=30.0))
            for m in (SYNTHETIC_DENSE_MODEL, SYNTHETIC_MOE_MODEL)]
    fast = calibrate.efficiency_estimator(cfgs)
    for i, cfg in enumerate(cfgs):
        for eff in (0.05, 0.5):
            slow = cfg.model_copy(update={"options": cfg.options.model_copy(update={"compute_efficiency": eff})})
            assert fast(i, eff) == pytest.approx(estimator.estimate_perf(slow).total, rel=1e-12)
