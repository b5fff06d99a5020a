"""The Muon optimizer (``train.optimizer: muon | dist_muon``; estimator.perf.muon, estimator.memory.static):
one momentum per linear weight, the Newton-Schulz GEMMs of its step, layer-wise sharding with ``dist_muon``.
Hand-computed values and the off-switch ``options.muon``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.experiments.recipe_notes import apply_recipe_items
from estimator.importers import import_megatron
from estimator.inputs.derive import stage_layouts
from estimator.inputs.params import layer_params
from estimator.memory.static import layer_static
from estimator.perf.context import config_context
from estimator.perf.held import optimizer_ops
from estimator.perf.muon import NS_STEPS, newton_schulz_flops, newton_schulz_ops

EXAMPLE = Path(estimator.__file__).parent / "examples" / "llama3-8b-h100.yaml"


def _cfg(*overrides: str) -> Any:
    return estimator.load_config(EXAMPLE, list(overrides))


def test_newton_schulz_flops_by_hand() -> None:
    """Quintic step on 2048 × 7168: X·Xᵀ 2·2048²·7168, A·A 2·2048³, B·X 2·2048²·7168; five steps."""
    assert newton_schulz_flops(2048, 7168) == 5 * (4 * 2048**2 * 7168 + 2 * 2048**3)
    assert newton_schulz_flops(7168, 2048) == newton_schulz_flops(2048, 7168)  # the short side is m


def test_muon_states_by_hand() -> None:
    """Llama 3 8B layer, tp 2, dp 2, distributed optimizer (12 B over dp), fp32 master and states. Adam: held·12/2.
    muon: the norms keep Adam's 12 B over dp, the linear weights 8 B (master + one momentum) on every rank;
    dist_muon: those 8 B over dp·cp = 2."""
    lp = layer_params(_cfg().model, 0)
    held = lp.held_non_expert(2)
    linear = held - lp.norm
    adam = layer_static(_cfg(), 0).non_expert.optimizer_states
    assert adam == pytest.approx(held * 12 / 2, rel=1e-12)
    muon = layer_static(_cfg("train.optimizer=muon"), 0).non_expert.optimizer_states
    assert muon == pytest.approx(lp.norm * 12 / 2 + linear * 8, rel=1e-12)
    dist = layer_static(_cfg("train.optimizer=dist_muon"), 0).non_expert.optimizer_states
    assert dist == pytest.approx(lp.norm * 12 / 2 + linear * 8 / 2, rel=1e-12)
    off = layer_static(_cfg("train.optimizer=dist_muon", "options.muon=false"), 0)
    assert off == layer_static(_cfg(), 0)


def test_newton_schulz_ops_of_a_stage() -> None:
    """Stage 0 of Llama 3 8B (16 layers) with dist_muon over dp·cp = 2: per weight 5·16/2 = 40 steps of three GEMMs
    on the full (TP-gathered) matrices: the QKV split into q 4096 × 4096, k and v 4096 × 1024 (muon_split_qkv), out
    4096 × 4096, fc1 4096 × 28672, fc2 14336 × 4096."""
    cfg = _cfg("train.optimizer=dist_muon")
    layout = stage_layouts(cfg)[0]
    ops = newton_schulz_ops(cfg, config_context(cfg), layout)
    shapes = {(op.name, op.shape) for op in ops}
    assert ("muon_ns_xxt", (4096, 28672, 4096)) in shapes and ("muon_ns_bx", (1024, 1024, 4096)) in shapes
    xxt = {op.shape: op.count for op in ops if op.name == "muon_ns_xxt"}
    assert xxt[1024, 4096, 1024] == NS_STEPS * 16 / 2 * 2  # k and v
    assert xxt[4096, 4096, 4096] == NS_STEPS * 16 / 2 * 2  # q and out
    assert xxt[4096, 28672, 4096] == xxt[4096, 14336, 4096] == NS_STEPS * 16 / 2
    total = sum(op.flops * op.count for op in ops)
    by_hand = 16 / 2 * sum(newton_schulz_flops(k, n) for k, n in ((4096, 4096), (4096, 1024), (4096, 1024),
                                                                      (4096, 4096), (4096, 28672), (14336, 4096)))
    assert total == pytest.approx(by_hand, rel=1e-12)
    plain = newton_schulz_ops(_cfg("train.optimizer=muon"), config_context(cfg), layout)
    assert sum(op.count for op in plain) == 2 * sum(op.count for op in ops)  # plain Muon: every rank runs all
    assert newton_schulz_ops(_cfg(), config_context(cfg), layout) == []
    # the element-wise update reads and writes one momentum, not two, for the Muon weights
    adam_bytes = sum(op.bytes * op.count for op in optimizer_ops(_cfg(), config_context(_cfg()), layout)
                     if op.name == "adam")
    muon_bytes = sum(op.bytes * op.count for op in optimizer_ops(cfg, config_context(cfg), layout) if op.name == "adam")
    assert 0 < muon_bytes < adam_bytes


def test_muon_step_time_and_off_switch() -> None:
    on = estimator.estimate_perf(_cfg("train.optimizer=dist_muon"))
    adam = estimator.estimate_perf(_cfg())
    off = estimator.estimate_perf(_cfg("train.optimizer=dist_muon", "options.muon=false"))
    assert on.total > adam.total and off.total == adam.total and off.perf_parts == adam.perf_parts


@pytest.mark.parametrize(("overrides", "words"), [
    (("train.optimizer=muon", "profile=fsdp2"), "Megatron-Core's"),
    (("train.optimizer=dist_muon", "precision.compute=fp16"), "fp16 is not supported"),
])
def test_muon_refusals(overrides: tuple[str, ...], words: str) -> None:
    with pytest.raises(ConfigError) as err:
        _cfg(*overrides)
    assert err.value.field == "train.optimizer" and words in err.value.rule


def test_muon_from_megatron_flags_and_recipe_items(tmp_path: Path) -> None:
    args = tmp_path / "args.txt"
    base = "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --vocab-size 32000 "
    args.write_text(base + "--optimizer muon --use-layer-wise-distributed-optimizer", encoding="utf-8")
    assert estimator.load_config(import_megatron(args, world_size=8, hardware="h100-80g").data).train.optimizer == "dist_muon"
    args.write_text(base + "--optimizer muon", encoding="utf-8")
    assert estimator.load_config(import_megatron(args, world_size=8, hardware="h100-80g").data).train.optimizer == "muon"
    args.write_text(base + "--optimizer sgd", encoding="utf-8")
    assert "--optimizer" in import_megatron(args, world_size=8, hardware="h100-80g").not_modelled
    config: dict[str, Any] = {"profile": "megatron", "model": {}, "parallel": {"tp": 1}, "train": {}}
    apply_recipe_items({"notes": "recipe: optimizer=dist_muon | fp8_recipe=mxfp8"}, config)
    assert config["train"]["optimizer"] == "dist_muon"
