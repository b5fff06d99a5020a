"""Operator roofline (estimator.perf.roofline / operators): hand-priced kernels, FLOP consistency with
the per-layer count, the properties (TOTAL = Σ parts, parts ≥ 0, monotone in HBM bandwidth) and the
sourced efficiency data. SYNTHETIC configs (tests/estimator/_factories.py) and hand-picked sizes."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import estimator
from estimator.inputs import derive
from estimator.inputs.hardware import PRESETS, preset, table_value
from estimator.perf import layers, operators, roofline
from estimator.perf.context import context
from estimator.perf.stage import stage_costs
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, SYNTHETIC_MOE_MODEL, synthetic_run

A100 = preset("a100")


def test_gemm_priced_by_hand_on_the_a100_preset() -> None:
    eff = A100.efficiency
    assert eff is not None and eff.matmul_eff(137.0) == 0.75 and eff.kernel_latency_us == 40.0
    op = operators.gemm("g", (), 4096, 4096, 4096, 2)
    # compute: 2·4096³ / (312e12 · 0.75); memory: 3·4096²·2 B / (2039e9 · 0.7) + 40 µs -> compute binds
    expected = 2 * 4096**3 / (312e12 * 0.75)
    assert roofline.op_pass_s(op, False, eff, 312e12) == pytest.approx(expected, rel=1e-12)
    assert roofline.op_pass_s(op, True, eff, 312e12) == pytest.approx(2 * expected, rel=1e-12)


def test_elementwise_priced_by_hand_memory_plus_latency() -> None:
    eff = A100.efficiency
    assert eff is not None
    op = operators.elementwise("softmax", ("core_attn",), 1e8, bw_kernels=2)
    assert roofline.op_pass_s(op, False, eff, 312e12) == pytest.approx(1e8 / (2039e9 * 0.7) + 40e-6, rel=1e-12)
    assert roofline.op_pass_s(op, True, eff, 312e12) == pytest.approx(1.5e8 / (2039e9 * 0.7) + 80e-6, rel=1e-12)


def test_size_table_is_a_step_function_from_the_largest_threshold_down() -> None:
    table = [(128.0, 0.95), (16.0, 0.9), (1.0, 0.6), (0.0, 0.1)]  # Calculon a100_80g.json matrix float16
    assert [table_value(table, x) for x in (500, 128, 20, 1, 0.5)] == [0.95, 0.95, 0.9, 0.6, 0.1]
    assert table_value([(10.0, 0.7)], 1.0) == 0.7  # below every threshold: the smallest row


@pytest.mark.parametrize("model,flash,ep", [
    (SYNTHETIC_DENSE_MODEL, False, 1), (SYNTHETIC_DENSE_MODEL, True, 1), (SYNTHETIC_MOE_MODEL, True, 2),
])
def test_operator_flops_add_up_to_the_layer_count(model: dict[str, Any], flash: bool, ep: int) -> None:
    cfg = estimator.load_config(synthetic_run(model, profile="megatron", train={"flash_attention": flash},
                                              parallel={"tp": 2, "pp": 1, "dp": 4, "ep": ep}))
    ctx = context(cfg)
    dims = roofline.layer_dims(cfg, ctx)
    for index in range(cfg.model.num_layers):
        ops = roofline.layer_ops(cfg, dims, index)
        counted = sum(op.flops * op.count for op in ops if op.op_class in ("gemm", "attention"))
        assert counted == pytest.approx(layers.layer_cost(cfg, ctx, index, 0).forward, rel=1e-12)
        kinds = {op.op_class for op in ops}
        assert ("attention" in kinds) == flash and "elementwise" in kinds


def _run(**options: Any) -> dict[str, Any]:
    return synthetic_run(SYNTHETIC_MOE_MODEL, profile="megatron", hardware={"preset": "a100-80g", "devices": 8},
                         parallel={"tp": 2, "pp": 2, "dp": 2, "ep": 2}, recompute={"mode": "full"}, options=options)


def test_parts_add_up_nonnegative_and_optimizer_counted_once() -> None:
    report = estimator.estimate_perf(estimator.load_config(_run()))
    assert all(v >= 0 for v in report.perf_parts.values()) and all(v >= 0 for v in report.real_parts.values())
    real = report.real_parts
    assert real["TOTAL"] == pytest.approx(sum(v for k, v in real.items() if k != "TOTAL"), rel=1e-12)
    strag = report.stages[report.straggler_stage]
    assert strag.optimizer > 0 and set(strag.by_class) <= set(operators.OP_CLASSES)
    m = report.num_micro_batches
    assert report.perf_parts["BW_COMPUTE"] == pytest.approx(m * strag.bw_time + strag.optimizer, rel=1e-12)


def test_total_never_falls_when_hbm_bandwidth_drops() -> None:
    totals = []
    for hbm in (4000.0, 2039.0, 1000.0, 300.0):
        data = dict(PRESETS["a100-80g"])
        data["efficiency"] = {**data["efficiency"], "hbm_gb_s": hbm}
        run = _run()
        run["hardware"] = {**data, "devices": 8}
        totals.append(estimator.estimate_perf(estimator.load_config(run)).total)
    assert all(b >= a for a, b in itertools.pairwise(totals)) and totals[-1] > totals[0]


def test_roofline_off_in_legacy_score_and_without_efficiency_data() -> None:
    on = estimator.load_config(_run())
    assert roofline.roofline_active(on)
    for options in ({"operator_roofline": False}, {"perf_mode": "score"}, estimator.config.presets.legacy()):
        cfg = estimator.load_config(_run(**options))
        assert not roofline.roofline_active(cfg)
        assert all(s.optimizer == 0.0 and not s.by_class for s in stage_costs(cfg))
    a2 = estimator.load_config(synthetic_run(SYNTHETIC_MOE_MODEL, hardware={"preset": "ascend-910b", "devices": 8}))
    assert a2.hardware.efficiency is None and not roofline.roofline_active(a2)


def test_every_efficiency_has_a_source() -> None:
    for name in ("a100-80g", "h100-80g", "h200", "b200"):
        eff = preset(name).efficiency
        assert eff is not None
        for field in ("hbm_gb_s", "matmul", "attention_fwd", "attention_bwd", "memory", "kernel_latency_us"):
            assert eff.sources.get(field), (name, field)


def test_selective_recompute_reruns_only_the_listed_modules() -> None:
    base = _run()
    base["recompute"] = {"mode": "selective", "modules": ["core_attn"]}
    sel = stage_costs(estimator.load_config(base))
    full = stage_costs(estimator.load_config(_run()))
    assert all(0 < s.recompute < f.recompute for s, f in zip(sel, full, strict=True))
    layouts = derive.stage_layouts(estimator.load_config(base))
    assert len(layouts) == len(sel)


def test_class_names_are_the_analyzer_kernel_classes_and_the_text_report_shows_them() -> None:
    from analyzer.kernel_classes import KERNEL_CLASSES
    from estimator.perf.report import format_perf_table

    assert set(operators.OP_CLASSES) - {"optimizer"} <= set(KERNEL_CLASSES)
    report = estimator.estimate_perf(estimator.load_config(_run()))
    text = format_perf_table(report)
    assert "operator classes" in text and all(c in text for c in operators.OP_CLASSES)
    assert report.to_dict()["stages"][0]["by_class"] == report.stages[0].by_class
