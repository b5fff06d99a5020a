"""Megatron's ``overlap_p2p_comm`` (issue 26): with the interleaved schedule the pipeline's steady-state p2p
transfers run beside a model chunk; the fill and drain stay exposed (``overlap.p2p_exposed`` /
``exposed_pp``). Hand-computed values in the comments; configs are the shipped Llama 3 8B example."""

from __future__ import annotations

import random

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.experiments.recipe_notes import apply_recipe_items
from estimator.perf import comm
from estimator.perf.overlap import p2p_exposed
from tests.estimator.scalar_reference import EXAMPLES

LLAMA = EXAMPLES / "llama3-8b-h100.yaml"
#: pp 4 with 2 model chunks per rank, 8 micro-batches (the example: tp 2, dp 2)
INTERLEAVED = {"parallel.pp": 4, "parallel.vpp": 2, "parallel.tp": 1, "parallel.dp": 2, "parallel.schedule": "interleaved"}


def test_exposed_is_the_fill_plus_what_outlasts_each_chunk() -> None:
    # 10 transfers of 1 ms, 2 of them fill / drain: chunk 0.4 ms -> 2·1 + 8·(1 − 0.4) = 6.8 ms; a chunk of 2 ms
    # hides the 8 steady ones: 2 ms; no fill, no chunk: all 10 ms
    assert p2p_exposed(10e-3, 10, 2, 0.4e-3) == pytest.approx(6.8e-3, rel=1e-12)
    assert p2p_exposed(10e-3, 10, 2, 2e-3) == pytest.approx(2e-3, rel=1e-12)
    assert p2p_exposed(10e-3, 10, 0, 0.0) == pytest.approx(10e-3, rel=1e-12)
    assert p2p_exposed(0.0, 0, 0, 1.0) == 0.0
    rng = random.Random(26)
    for _ in range(300):  # 0 ≤ exposed ≤ total; never falls as the transfers get slower or the chunk shorter
        total, n = rng.uniform(0, 1), rng.randint(1, 50)
        fill, chunk = rng.randint(0, n), rng.uniform(0, 0.1)
        e = p2p_exposed(total, n, fill, chunk)
        assert 0.0 <= e <= total + 1e-15
        assert p2p_exposed(total * 1.5, n, fill, chunk) >= e and p2p_exposed(total, n, fill, chunk / 2) >= e


def _perf(**overrides: object) -> estimator.PerfReport:
    return estimator.estimate_perf(estimator.load_config(LLAMA, {**INTERLEAVED, **overrides}))


def test_interleaved_schedule_hides_the_steady_transfers() -> None:
    on, off = _perf(), _perf(**{"parallel.overlap_p2p_comm": False})
    total = off.perf_parts["PP_COMM"]
    cfg = estimator.load_config(LLAMA, INTERLEAVED)
    n = comm.p2p_transfers_on_critical_path(4, cfg.num_micro_batches, 2)
    chunk = max(s.per_micro_batch for s in on.stages) / (2 * 2)  # half the straggler's chunk (vpp 2)
    assert on.perf_parts["PP_COMM"] == pytest.approx(p2p_exposed(total, n, 2 * (4 - 2), chunk), rel=1e-12)
    assert on.perf_parts["PP_COMM"] < total and on.total < off.total
    assert on.overlap["PP_COMM"]["hidden_s"] == pytest.approx(total - on.perf_parts["PP_COMM"], rel=1e-12)
    assert "PP_COMM" not in off.overlap


def test_nothing_hides_without_the_interleaved_schedule_or_the_mechanisms() -> None:
    plain = {"parallel.vpp": 1, "parallel.schedule": "1f1b"}
    assert _perf(**plain).perf_parts["PP_COMM"] == _perf(**plain, **{"parallel.overlap_p2p_comm": False}).perf_parts[
        "PP_COMM"]
    assert _perf(**{"options.comm_overlap": False}).perf_parts["PP_COMM"] == _perf(
        **{"parallel.overlap_p2p_comm": False}).perf_parts["PP_COMM"]


def test_a_framework_without_the_switch_refuses_it() -> None:
    with pytest.raises(ConfigError) as err:
        estimator.load_config(LLAMA, {**INTERLEAVED, "profile": "fsdp2", "parallel.overlap_p2p_comm": True})
    assert err.value.field == "parallel.overlap_p2p_comm"


def test_bridge_rows_without_comm_overlap_config_run_it_off() -> None:
    # Megatron-Core's ModelParallelConfig default is off; Bridge's CommOverlapConfig turns it on for vp > 1
    row = {"notes": "recipe: overlap_grad_reduce=true(ddp; no CommOverlapConfig) | comm_overlap=None | "
                    "recompute=none"}
    config = {"profile": "megatron", "model": {}, "parallel": {"tp": 1, "pp": 4, "vpp": 2}}
    apply_recipe_items(row, config)
    assert config["parallel"]["overlap_p2p_comm"] is False
    with_cfg = {"profile": "megatron", "model": {}, "parallel": {"tp": 1, "pp": 4, "vpp": 2}}
    apply_recipe_items({"notes": "recipe: overlap_grad_reduce=true(ddp; comm_overlap auto) | recompute=none"},
                       with_cfg)
    assert "overlap_p2p_comm" not in with_cfg["parallel"]
