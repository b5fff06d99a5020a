"""Issue acceptance on the seed's configs A-F: units, magnitudes, shares and additivity of the parts."""

from __future__ import annotations

import math

import pytest

import estimator
from estimator.config import presets
from estimator.experiments.seed import SEED_CONFIGS, seed_run
from estimator.perf.parts import PERF_PARTS, REAL_PARTS, PerfReport
from tests.estimator import _seed_hand as hand
from tests.estimator._factories import synthetic_run

LABELS = list(SEED_CONFIGS)


def _perf(label: str, options: dict) -> PerfReport:
    return estimator.estimate_perf(estimator.load_config(seed_run(label, options=options)))


@pytest.mark.parametrize("label", LABELS)
def test_fixed_parts_are_finite_seconds(label: str) -> None:
    r = _perf(label, presets.fixed())
    assert r.unit == "s" and r.mode == "time"
    assert set(r.real_parts) == set(REAL_PARTS) and set(r.perf_parts) == set(PERF_PARTS)
    for name, v in {**r.real_parts, **r.perf_parts}.items():
        assert math.isfinite(v) and v >= 0, name
    # a step of this model is seconds, not bytes: every part below one minute
    assert r.total < 60.0
    # EP_WAIT by hand from the config and the A2 network (tests/estimator/_seed_hand.py)
    assert r.real_parts["EP_WAIT"] == pytest.approx(hand.ep_wait_seconds(label), rel=1e-9)
    assert r.warnings == []


@pytest.mark.parametrize("label", LABELS)
def test_legacy_ep_wait_shows_the_unit_bug(label: str) -> None:
    fixed = _perf(label, presets.fixed()).real_parts["EP_WAIT"]
    legacy = _perf(label, presets.legacy())
    assert legacy.real_parts["EP_WAIT"] >= 1e6 * fixed
    assert any("bytes" in w for w in legacy.warnings)


@pytest.mark.parametrize("label", LABELS)
def test_no_part_above_90_percent_of_total(label: str) -> None:
    r = _perf(label, presets.fixed()).real_parts
    assert max(v for k, v in r.items() if k != "TOTAL") <= 0.9 * r["TOTAL"]


def _seed_total_pp2(r: PerfReport, ratio: float) -> float:
    """Second formulation of TOTAL for pp = 2 (seed §4.3.2, reference §3.4): 1F1B
    ``max_k [(s_j − h_j) + m·s_k]`` over the two stages (j the other one; ``h_j`` the EP time stage j hides
    in the bubble, 0 when ratio = 0) plus the per-step DP tail and the p2p PP_COMM."""
    s, m = r.stage_times_s, r.num_micro_batches
    h = [st.per_micro_batch - st.per_micro_batch_ep_hidden(ratio) if st.ep > 1 else 0.0 for st in r.stages]
    pipeline = max(s[1] - h[1] + m * s[0], s[0] - h[0] + m * s[1])
    return pipeline + max(st.dp_comm for st in r.stages) + r.perf_parts["PP_COMM"]


@pytest.mark.parametrize("preset", ["fixed", "legacy"])
@pytest.mark.parametrize("label", LABELS)
def test_total_is_sum_of_parts(label: str, preset: str) -> None:
    options = presets.PRESETS[preset]()
    r = _perf(label, options)
    assert len(r.stages) == 2
    # TOTAL (the sum of RealParts) equals the schedule's step time computed the seed's way
    assert r.total == pytest.approx(_seed_total_pp2(r, options["ep_bubble_overlap_ratio"]), rel=1e-12)
    parts = sum(v for k, v in r.real_parts.items() if k != "TOTAL")
    assert r.total == pytest.approx(parts, rel=1e-12)
    # and PerfParts and RealParts describe the same step: COMP = FW + BW + RECOMPUTE, PP_WAIT = BUBBLE + PP_COMM
    perf = r.perf_parts
    assert r.total == pytest.approx(sum(perf.values()), rel=1e-12)
    assert r.real_parts["COMP"] == pytest.approx(perf["FW_COMPUTE"] + perf["BW_COMPUTE"] + perf["RECOMPUTE"], rel=1e-12)
    assert r.real_parts["PP_WAIT"] == pytest.approx(perf["BUBBLE"] + perf["PP_COMM"], rel=1e-12)
    if preset == "legacy":  # ratio 0: the reference's Σ s_i + (m − 1)·max s_i (reference §3.4)
        s = r.stage_times_s
        assert r.total == pytest.approx(sum(s) + 7 * max(s) + perf["DP_COMM"] + perf["PP_COMM"], rel=1e-12)


#: SYNTHETIC dense GPT-style model (MHA, GELU, 4h MLP) for which Korthikanti et al. 2022 give the closed form
SYNTHETIC_GPT = {"name": "synthetic-gpt", "num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 1024,
                 "num_attention_heads": 8, "num_kv_heads": 8, "attention": "mha", "num_experts": 0,
                 "vocab_size": 1000, "activation": "gelu", "norm": "layernorm"}


def test_tokens_and_mfu_consistent() -> None:
    r = _perf("A", presets.fixed())
    # seed config A: m·b·s·dp = 8 · 2 · 4096 · 16 = 1 048 576 tokens per step
    assert r.tokens_per_s == pytest.approx(1_048_576 / r.total, rel=1e-12)
    assert 0.0 < r.mfu < 1.0
    # MFU against a published closed form (Korthikanti et al. 2022, model FLOPs per step, no recompute):
    # 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h)), B = global batch = m·b·dp = 4·2·2 = 16 sequences
    run = synthetic_run(model=SYNTHETIC_GPT, profile="megatron", parallel={"tp": 1, "pp": 1, "dp": 2, "ep": 1},
                        train={"seq_length": 512, "micro_batch_size": 2, "num_micro_batches": 4})
    g = estimator.estimate_perf(estimator.load_config(run))
    B, s, layers, h, V = 16, 512, 4, 256, 1000
    flops = 72 * B * s * layers * h * h * (1 + s / (6 * h) + V / (12 * layers * h))
    # H100 SXM5 datasheet: 989 dense bf16 TFLOPS per GPU; 2 GPUs
    assert g.mfu == pytest.approx(flops / (g.total * 2 * 989e12), rel=1e-9)
    assert g.tokens_per_s == pytest.approx(B * s / g.total, rel=1e-12)
