"""The scalar path's caches (``estimator.shared.memo``, the per-stage ``StageFixed`` of ``memory.stage``, the
per-kind layer parameters) never answer for another config: two configs that differ in one field
give the results of an uncached run, whatever was priced before them, and the store stays bounded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.inputs import derive
from estimator.inputs.derive import stage_layouts
from estimator.inputs.params import layer_params
from estimator.inputs.profiles import resolved_bytes
from estimator.memory.stage import stage_memory
from estimator.shared import memo
from ndval.core import cache

EXAMPLES = Path(estimator.__file__).resolve().parent / "examples"


def _numbers(cfg: estimator.EstimatorConfig) -> tuple[Any, ...]:
    """Every number of both reports (repr: exact, and NaN equal to itself)."""
    mem, perf = estimator.estimate_memory(cfg), estimator.estimate_perf(cfg)
    return repr(mem.to_dict()), repr(perf.to_dict())


def _clear() -> None:
    """Forget every instance's values and every cross-config store (the cache registry)."""
    cache.clear_all()


def _uncached(cfg: estimator.EstimatorConfig) -> tuple[Any, ...]:
    """The numbers of ``cfg`` priced with every store empty (nothing priced before it can answer; the
    fingerprint test compares whole sweeps with the stores bypassed, ``NDVAL_NO_CACHE=1``)."""
    _clear()
    out = _numbers(cfg)
    _clear()
    return out


@pytest.mark.parametrize("field, value", [
    ("recompute.mode", "selective"), ("train.seq_length", 8192), ("train.num_micro_batches", 32),
    ("parallel.distributed_optimizer", False), ("precision.params", "fp32"), ("profile", "fsdp2"),
    ("profile", "sapp-nd"), ("train.gradient_accumulation_fusion", False), ("model.moe_topk", 4),
    ("model.num_dense_layers", 1), ("parallel.layers_per_stage", [4] * 15 + [1]),
])
def test_one_field_apart_gives_the_uncached_numbers(field: str, value: object) -> None:
    base = estimator.load_config(EXAMPLES / "deepseek-v3-671b-h100.yaml")
    other = estimator.load_config(base, {field: value})
    expected = _uncached(other)
    cache.clear_all()
    first = _numbers(base)  # warm every cache on the base config, then price the other one
    assert _numbers(other) == expected
    assert expected != first
    assert _numbers(base) == first


def test_model_copy_is_a_new_instance_for_the_caches() -> None:
    base = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml")
    copied = base.model_copy(update={"train": base.train.model_copy(update={"micro_batch_size": 2})})
    expected = _uncached(estimator.load_config(base, {"train.micro_batch_size": 2}))
    cache.clear_all()
    _numbers(base)
    assert _numbers(copied) == expected


def test_two_models_one_field_apart_have_their_own_layer_params() -> None:
    base = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml")
    wider = estimator.load_config(base, {"model.ffn_hidden_size": base.model.dense_ffn * 2})
    narrow, wide = layer_params(base.model, 0), layer_params(wider.model, 0)
    assert wide.non_expert > narrow.non_expert
    cache.clear_all()
    assert layer_params(wider.model, 0) == wide and layer_params(base.model, 0) == narrow


def test_derived_values_follow_the_instance() -> None:
    base = estimator.load_config(EXAMPLES / "deepseek-v3-671b-h100.yaml")
    fp32 = estimator.load_config(base, {"precision.params": "fp32"})
    deeper = estimator.load_config(base, {"parallel.pp": 8, "parallel.dp": 256,
                                          "parallel.layers_per_stage": [7] + [8] * 6 + [6]})
    assert resolved_bytes(base).params == 2 and resolved_bytes(fp32).params == 4
    assert len(stage_layouts(base)) == base.parallel.pp and len(stage_layouts(deeper)) == 8


def test_store_is_bounded_and_holds_its_instances() -> None:
    cache.clear_all()
    base = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml")
    cfgs = [estimator.load_config(base, {"train.seq_length": 1024 * (1 + k % 4)}) for k in range(memo.MAX_CONFIGS + 9)]
    for cfg in cfgs:
        resolved_bytes(cfg)
        assert len(memo._ENTRIES) <= memo.MAX_CONFIGS
    entry = memo._ENTRIES[id(cfgs[-1])]
    assert entry[0] is cfgs[-1]  # the entry keeps its instance alive, so its id cannot be reused


@pytest.mark.parametrize("name, overrides", [
    ("deepseek-v3-671b-h100.yaml", {"recompute.mode": "selective"}),
    ("deepseek-v3-671b-h100.yaml", {"parallel.pp": 8, "parallel.vpp": 2, "parallel.schedule": "interleaved",
                                    "parallel.dp": 256, "parallel.layers_per_stage": [4] * 15 + [1],
                                    "profile": "sapp-nd"}),
    ("llama3-8b-h100.yaml", {"parallel.pp": 4, "parallel.dp": 1}),  # two middle stages and the head's alike
    ("llama3-8b-h100.yaml", {"profile": "fsdp2", "parallel.pp": 4, "parallel.dp": 1, "recompute.mode": "selective",
                             "recompute.modules": [], "recompute.selective_ac_option": "3"}),
])
def test_stages_sharing_a_signature_equal_their_own_pricing(name: str, overrides: dict[str, Any]) -> None:
    """Stages priced one after another (their μ-independent part reused by signature) equal each
    stage priced alone with every store empty."""
    cfg = estimator.load_config(EXAMPLES / name, overrides)
    layouts = stage_layouts(cfg)
    cache.clear_all()
    together = [stage_memory(cfg, layout).to_dict() for layout in layouts]
    alone = []
    for layout in layouts:
        cache.clear_all()
        alone.append(stage_memory(cfg, layout).to_dict())
    assert together == alone
    assert len({repr(s["components"]) for s in together}) > 1  # the stages differ (μ, extras)


def test_overridden_sections_are_reused_only_for_the_same_section_and_values() -> None:
    """``load_config`` reuses a validated section it built before from the same instance and the same
    field overrides (a sweep's ``hardware.devices``), and validates anything else as usual."""
    base = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml")
    data = {name: getattr(base, name) for name in type(base).model_fields}
    first = estimator.load_config(data, {"hardware.devices": 16, "parallel.dp": 4})
    again = estimator.load_config(data, ["hardware.devices=16", "parallel.dp=4"])
    other = estimator.load_config(data, {"hardware.devices": 32, "parallel.dp": 8})
    assert again.hardware is first.hardware and again.hardware.devices == 16
    assert other.hardware is not first.hardware and other.hardware.devices == 32
    assert first.parallel.dp == 4 and other.parallel.dp == 8
    copy = base.model_copy(update={"hardware": base.hardware.model_copy(update={"hbm_gib": 40.0})})
    data_copy = {name: getattr(copy, name) for name in type(copy).model_fields}
    smaller = estimator.load_config(data_copy, {"hardware.devices": 16, "parallel.dp": 4})
    assert smaller.hardware.hbm_gib == 40.0 and smaller.hardware is not first.hardware
    for _ in range(2):  # a failing override is never kept
        with pytest.raises(estimator.ConfigError, match=r"hardware\.devices"):
            estimator.load_config(data, {"hardware.devices": 0})
    with pytest.raises(estimator.ConfigError, match="world size"):  # the cross-field rules still run
        estimator.load_config(data, {"hardware.devices": 16})


#: one field apart in what the shared stage layouts and their kind runs are keyed on (derive.split_key,
#: derive.kind_key) or in what the shared layer FLOPs read (layers.shared_layer_cost)
_LLAMA_PP4 = {"parallel.pp": 4, "parallel.dp": 1}
_SPLIT_CASES = [
    ("deepseek-v3-671b-h100.yaml", {}, {"model.num_dense_layers": 1}),
    ("deepseek-v3-671b-h100.yaml", {}, {"model.num_dense_layers": 0}),
    ("deepseek-v3-671b-h100.yaml", {}, {"model.mtp_layers": 0}),
    ("deepseek-v3-671b-h100.yaml", {}, {"model.num_experts": 0, "parallel.ep": 1}),
    ("deepseek-v3-671b-h100.yaml", {}, {"model.num_layers": 60, "parallel.layers_per_stage": [4] * 15 + [0]}),
    ("deepseek-v3-671b-h100.yaml", {}, {"parallel.layers_per_stage": [4] * 15 + [1]}),
    ("deepseek-v3-671b-h100.yaml", {}, {"recompute.per_stage": ["selective"] + ["full"] * 15}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"model.num_layers": 28}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"parallel.decoder_first_pipeline_num_layers": 7,
                                         "parallel.decoder_last_pipeline_num_layers": 7}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"parallel.decoder_first_pipeline_num_layers": 9,
                                         "parallel.decoder_last_pipeline_num_layers": 7}),
    ("llama3-8b-h100.yaml", {**_LLAMA_PP4, "parallel.decoder_first_pipeline_num_layers": 9,
                             "parallel.decoder_last_pipeline_num_layers": 7},
     {"parallel.decoder_last_pipeline_num_layers": 5}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"parallel.vpp": 2, "parallel.schedule": "interleaved"}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"parallel.vpp": 2, "parallel.schedule": "zero_bubble_v"}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"parallel.pp": 8, "parallel.tp": 1}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"recompute.mode": "full"}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"recompute.per_stage": ["none", "full", "selective", "none"]}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"recompute.modules": ["core_attn", "mlp"]}),
    ("llama3-8b-h100.yaml", {**_LLAMA_PP4, "options.operator_roofline": False}, {"recompute.modules": ["mlp"]}),
    ("llama3-8b-h100.yaml", {**_LLAMA_PP4, "options.operator_roofline": False, "recompute.mode": "none"},
     {"recompute.mode": "full"}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"train.seq_length": 4096}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"train.micro_batch_size": 2}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"parallel.sequence_parallel": False}),
    ("llama3-8b-h100.yaml", {}, {"parallel.distributed_optimizer": False}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"parallel.tp": 1, "parallel.dp": 2}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"parallel.cp_comm_type": "a2a", "parallel.cp": 2, "parallel.pp": 2}),
    ("llama3-8b-h100.yaml", {}, {"options.dp_comm_overlap": 0.5}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"options.tp_comm_overlap": 0.5}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"precision.params": "fp32"}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"profile": "fsdp2"}),
    ("llama3-8b-h100.yaml", {"profile": "fsdp2"}, {"parallel.fsdp_reshard_after_forward": True}),
    ("llama3-8b-h100.yaml", {"profile": "sapp-nd"}, {"parallel.grad_sharding": True}),
    ("llama3-8b-h100.yaml", {"profile": "sapp-nd"}, {"parallel.optimizer_shard_size": 2}),
    ("llama3-8b-h100.yaml", {}, {"train.hidden_dropout": 0.0}),
    ("deepseek-v3-671b-h100.yaml", {}, {"parallel.ep": 8, "parallel.etp": 1}),
    ("deepseek-v3-671b-h100.yaml", {}, {"parallel.ep": 32}),
    ("deepseek-v3-671b-h100.yaml", {}, {"options.ep_bubble_overlap_ratio": 0.5}),
    ("llama3-8b-h100.yaml", _LLAMA_PP4, {"parallel.cp": 2, "parallel.pp": 2}),
]


@pytest.mark.parametrize("name, base_overrides, change", _SPLIT_CASES)
def test_value_keyed_caches_miss_on_a_field_apart(name: str, base_overrides: dict[str, Any],
                                                  change: dict[str, Any]) -> None:
    """The stage layouts and kind runs shared across configs, and the shared layer FLOPs, never answer
    for a config one field apart: after pricing the base, the other config's layouts, kind runs and
    numbers equal those of a run with every cache empty."""
    base = estimator.load_config(EXAMPLES / name, base_overrides)
    other = estimator.load_config(base, change)
    expected = _uncached(other)
    fresh = derive._stage_layouts(other)
    _clear()
    _numbers(base)
    layouts = stage_layouts(other)
    assert layouts == fresh and [s.layers for s in layouts] == [s.layers for s in fresh]
    for mine, new in zip(layouts, fresh, strict=True):
        assert mine.kind_runs(other.model) == tuple((k, n) for k, _, n in derive.layer_kind_runs(other.model,
                                                                                                 new.layers))
        assert mine.chunk_kinds(other.model)[1] == tuple(
            tuple((k, n) for k, _, n in derive.layer_kind_runs(other.model, c)) for c in new.chunks)
    assert _numbers(other) == expected
    assert expected != _uncached(base)


def test_layouts_shared_by_split_and_kinds_kept_per_model_value() -> None:
    """Configs with the same split share one tuple of layouts; two models apart in num_dense_layers
    read their own kind runs from the shared layouts, whichever was asked first."""
    _clear()
    base = estimator.load_config(EXAMPLES / "deepseek-v3-671b-h100.yaml")
    tp2 = estimator.load_config(base, {"parallel.tp": 2, "parallel.dp": 64})
    dense1 = estimator.load_config(base, {"model.num_dense_layers": 1})
    assert stage_layouts(tp2) is stage_layouts(base) and stage_layouts(dense1) is stage_layouts(base)
    first = stage_layouts(base)[0]
    assert first.kind_runs(base.model) == (("dense", 3),)
    assert first.kind_runs(dense1.model) == (("dense", 1), ("moe", 2))
    assert first.kind_runs(base.model) == (("dense", 3),)


def test_stage_costs_shared_across_the_split_only() -> None:
    """Two configs apart only in the pipeline split and schedule (:data:`estimator.shared.memo.SPLIT_ONLY`) share
    the middle stages' prices; everything else the pricing reads is in the key (every section field
    but those), and the shared prices equal a run with every cache empty."""
    base = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml", _LLAMA_PP4)
    split = estimator.load_config(base, {"parallel.decoder_first_pipeline_num_layers": 9,
                                         "parallel.decoder_last_pipeline_num_layers": 7})
    expected = _uncached(split)
    _clear()
    before = estimator.estimate_perf(base)
    after = estimator.estimate_perf(split)
    assert after.stages[1].per_micro_batch == before.stages[1].per_micro_batch
    assert after.stages[1] is before.stages[1]  # one record (a relabelled copy kept per (cost, stage))
    assert _numbers(split) == expected
    key, held = memo.pricing_key(base) or ((), ())
    parallel_fields = type(base.parallel).model_fields
    assert memo.SPLIT_ONLY.issubset(parallel_fields)
    assert len(key) == len(type(base).model_fields)
    assert len(key[list(type(base).model_fields).index("parallel")]) == len(parallel_fields) - len(memo.SPLIT_ONLY)
    assert base.model in held and base.hardware in held and base.options in held and base.precision in held
    for name in ("train", "parallel", "recompute"):  # the key reads the sections' __dict__: their fields, in order
        section = getattr(base, name)
        assert list(vars(section)) == list(type(section).model_fields)


def test_pricing_memo_shared_only_by_equal_pricing_keys_and_bounded() -> None:
    """Configs apart only in the pipeline split share one price dictionary per user; a config one
    priced field apart, another user or a batched stand-in get their own; the store stays bounded."""
    _clear()
    base = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml")
    split = estimator.load_config(base, {"parallel.vpp": 2, "parallel.schedule": "interleaved"})
    wider = estimator.load_config(base, {"train.micro_batch_size": 2})
    assert memo.pricing_memo(split, "memory") is memo.pricing_memo(base, "memory")
    assert memo.pricing_memo(wider, "memory") is not memo.pricing_memo(base, "memory")
    assert memo.pricing_memo(base, "stage_costs") is not memo.pricing_memo(base, "memory")
    assert memo.pricing_memo(object(), "memory") == {} and memo.pricing_key(object()) is None
    for k in range(memo.MAX_SHARED + 5):
        memo.pricing_memo(estimator.load_config(base, {"train.seq_length": 1024 + 2 * k}), "memory")
        assert len(memo._SHARED) <= memo.MAX_SHARED
