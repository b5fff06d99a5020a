"""Per-layer recompute (estimator.inputs.derive.recomputed_layers): Megatron's ``--recompute-method block
--recompute-num-layers N`` re-runs only the first N layers of each model chunk, torchtitan's layer-level SAC
every n-th layer; memory and step time price the chosen layers as fully recomputed and the others as not
recomputed. Megatron's uniform units of k layers keep one input per unit (derive.unit_inputs). Hand-computed
values and the off-switch ``options.per_layer_recompute``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.experiments.recipe_notes import apply_recipe_items
from estimator.importers import import_megatron
from estimator.inputs import derive
from estimator.memory import activation as act
from estimator.perf.stage import stage_costs

EXAMPLE = Path(estimator.__file__).parent / "examples" / "llama3-8b-h100.yaml"
ONE_STAGE = ("parallel.pp=1", "parallel.dp=4", "recompute.modules=[]")


def _cfg(*overrides: str) -> Any:
    return estimator.load_config(EXAMPLE, list(overrides))


def _block(n: int, *overrides: str) -> Any:
    return _cfg(*ONE_STAGE, "recompute.mode=full", "recompute.method=block", f"recompute.num_layers={n}", *overrides)


def test_block_chooses_the_first_layers_of_every_model_chunk() -> None:
    """Llama 3 8B (32 layers), pp 2 × vpp 2: virtual stages of 8 layers, v0 = 0..7 and v2 = 16..23 on stage 0,
    v1 = 8..15 and v3 = 24..31 on stage 1; block 3 re-runs 0-2, 8-10, 16-18 and 24-26."""
    cfg = _cfg("parallel.vpp=2", "parallel.schedule=interleaved", "recompute.mode=full", "recompute.modules=[]",
               "recompute.method=block", "recompute.num_layers=3")
    assert derive.recomputed_layers(cfg) == frozenset({0, 1, 2, 8, 9, 10, 16, 17, 18, 24, 25, 26})
    assert derive.layer_recompute(cfg, 0, 17) == "full" and derive.layer_recompute(cfg, 0, 19) == "none"
    layout = derive.stage_layouts(cfg)[1]
    assert derive.recomputed_by_kind(cfg, layout) == (("dense", 6),)
    # a stage that is not full keeps its own mode under block
    mixed = _cfg("recompute.mode=full", "recompute.modules=[]", "recompute.per_stage=[full, none]",
                 "recompute.method=block", "recompute.num_layers=2")
    assert derive.recomputed_layers(mixed) == frozenset({0, 1})
    assert derive.layer_recompute(mixed, 1, 16) == "none"
    assert derive.recomputed_layers(_cfg("recompute.mode=full", "recompute.modules=[]")) is None


def test_block_memory_interpolates_between_none_and_full() -> None:
    """One stage (μ = 1): activations(block N) = full + (32 − N)/32 · (none − full), layer by layer; N = 0 is
    none, N = 32 is full."""
    def acts(cfg: Any) -> float:
        return float(estimator.estimate_memory(cfg).stages[0].components["activations"])

    full = acts(_cfg(*ONE_STAGE, "recompute.mode=full"))
    none = acts(_cfg(*ONE_STAGE, "recompute.mode=none"))
    assert none > full
    for n in (0, 5, 32):
        assert acts(_block(n)) == pytest.approx(full + (32 - n) / 32 * (none - full), rel=1e-12)


def test_block_step_time_reruns_only_its_layers() -> None:
    """Recompute seconds and FLOPs scale with the layers re-run (5 of 32); forward and backward do not move; the
    stage's comm is split with recompute share 5/32 (comm.pass_comm_factors)."""
    full = stage_costs(_cfg(*ONE_STAGE, "recompute.mode=full"))[0]
    none = stage_costs(_cfg(*ONE_STAGE, "recompute.mode=none"))[0]
    block = stage_costs(_block(5))[0]
    assert block.recompute == pytest.approx(5 / 32 * full.recompute, rel=1e-12)
    assert none.recompute == 0.0 and block.full_recompute == 5 / 32 and full.full_recompute == 1.0
    assert (block.fw_compute, block.bw_compute) == pytest.approx((full.fw_compute, full.bw_compute), rel=1e-12)
    # TP comm: per layer (2 + f) forward collectives' worth; 27 layers at f = 0 and 5 at f = 1
    per_layer = none.mp_comm / (2 * 32)
    assert block.mp_comm == pytest.approx(per_layer * (2 * 32 + 5), rel=1e-9)
    assert estimator.estimate_perf(_block(0)).total == pytest.approx(
        estimator.estimate_perf(_cfg(*ONE_STAGE, "recompute.mode=none")).total, rel=1e-12)


def test_uniform_units_keep_one_input_per_unit() -> None:
    """Megatron's uniform method with units of 4 (32 layers, one stage): 8 saved inputs instead of 32, the step
    time of full recompute; on a stage without the head (pp 2, 16 layers a stage) the backward re-runs a unit of 4
    layers at once: 4 × the one layer full recompute re-materialises."""
    def stage0(cfg: Any) -> Any:
        return estimator.estimate_memory(cfg).stages[0]

    full = _cfg(*ONE_STAGE, "recompute.mode=full")
    units = _cfg(*ONE_STAGE, "recompute.mode=full", "recompute.method=uniform", "recompute.num_layers=4")
    assert sorted(derive.unit_inputs(units)) == list(range(0, 32, 4))
    one_input = act.full_recompute_bytes(full) / 2**20
    assert stage0(units).components["activations"] == pytest.approx(
        stage0(full).components["activations"] - 24 * one_input, rel=1e-12)
    assert estimator.estimate_perf(units).total == estimator.estimate_perf(full).total
    two = ("parallel.pp=2", "parallel.dp=2", "recompute.modules=[]", "recompute.mode=full")
    full2 = stage0(_cfg(*two)).components["backward_overhead"]
    units2 = stage0(_cfg(*two, "recompute.method=uniform", "recompute.num_layers=4")).components["backward_overhead"]
    assert units2 == pytest.approx(4 * full2, rel=1e-12)
    # a unit of one layer, and the off-switch: full recompute as before
    assert stage0(_cfg(*ONE_STAGE, "recompute.mode=full", "recompute.method=uniform", "recompute.num_layers=1")
                  ).components == stage0(full).components
    assert stage0(_cfg(*ONE_STAGE, "recompute.mode=full", "recompute.method=uniform", "recompute.num_layers=4",
                       "options.per_layer_recompute=false")).components == stage0(full).components


def test_off_switch_prices_block_as_full_recompute() -> None:
    off = ("options.per_layer_recompute=false",)
    full = _cfg(*ONE_STAGE, "recompute.mode=full", *off)
    block = _block(5, *off)
    assert derive.recomputed_layers(block) is None
    assert estimator.estimate_perf(block).total == estimator.estimate_perf(full).total
    assert estimator.estimate_memory(block).peak_mb == estimator.estimate_memory(full).peak_mb


def test_layer_level_sac_step_time_reruns_every_nth_layer() -> None:
    """torchtitan ``selective_ac_option: "2"``: layers 1, 3, .., 31 re-run whole (16 of 32), the others not; the
    switch off keeps the model before it (Megatron's core_attn share)."""
    base = ("profile=fsdp2", "parallel.tp=1", "parallel.pp=1", "parallel.dp=8", "parallel.sequence_parallel=false",
            "parallel.distributed_optimizer=false", "recompute.modules=[]")
    full = stage_costs(_cfg(*base, "recompute.mode=full"))[0]
    sac = _cfg(*base, "recompute.mode=selective", "recompute.selective_ac_option='2'")
    assert derive.recomputed_layers(sac) == frozenset(range(1, 32, 2))
    assert stage_costs(sac)[0].recompute == pytest.approx(full.recompute / 2, rel=1e-12)
    off = stage_costs(_cfg(*base, "recompute.mode=selective", "recompute.selective_ac_option='2'",
                           "options.per_layer_recompute=false"))[0]
    core = stage_costs(_cfg(*base, "recompute.mode=selective", "recompute.modules=[core_attn]"))[0]
    assert off.recompute == core.recompute
    # memory was per layer before the switch and stays so
    mem_on = estimator.estimate_memory(sac).peak_mb
    mem_off = estimator.estimate_memory(_cfg(*base, "recompute.mode=selective", "recompute.selective_ac_option='2'",
                                             "options.per_layer_recompute=false")).peak_mb
    assert mem_on == mem_off


@pytest.mark.parametrize(("overrides", "field", "words"), [
    (("recompute.mode=selective", "recompute.method=block", "recompute.num_layers=2"), "recompute.method",
     "need mode full"),
    (("recompute.mode=full", "recompute.method=block"), "recompute.num_layers", "needs num_layers"),
    (("recompute.mode=full", "recompute.method=uniform", "recompute.num_layers=0"), "recompute.num_layers",
     "at least 1 layer"),
])
def test_bad_recompute_method_names_field_and_rule(overrides: tuple[str, ...], field: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        _cfg(*overrides)
    assert err.value.field == field and words in err.value.rule


def test_megatron_flags_and_recipe_items_set_the_method(tmp_path: Path) -> None:
    args = tmp_path / "args.txt"
    args.write_text("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --vocab-size 32000 "
                    "--recompute-granularity full --recompute-method block --recompute-num-layers 5", encoding="utf-8")
    run = import_megatron(args, world_size=8, hardware="h100-80g")
    cfg = estimator.load_config(run.data)
    assert (cfg.recompute.mode, cfg.recompute.method, cfg.recompute.num_layers) == ("full", "block", 5)
    assert "--recompute-method" not in run.not_modelled
    args.write_text(args.read_text(encoding="utf-8").replace("block", "uniform"), encoding="utf-8")
    uniform = estimator.load_config(import_megatron(args, world_size=8, hardware="h100-80g").data)
    assert (uniform.recompute.method, uniform.recompute.num_layers, derive.recompute_unit(uniform)) == ("uniform", 5, 5)
    for notes in ("recipe: recompute=full(method=block,num_layers=5) | fp8_recipe=tensorwise",
                  "recipe: recompute=unset | recompute_num_layers=5 | fp8_recipe=tensorwise"):  # Bridge's override
        config: dict[str, Any] = {"profile": "megatron", "model": {}, "parallel": {"tp": 1}, "train": {}}
        apply_recipe_items({"notes": notes}, config)
        assert config["recompute"] == {"mode": "full", "modules": [], "method": "block", "num_layers": 5}


@pytest.mark.parametrize(("notes", "rules", "section"), [
    ("recipe: recompute=selective(modules=[]) | fp8_recipe=mxfp8", True, {"mode": "none", "modules": []}),
    ("recipe: recompute=selective | recompute_modules=[] | fp8_recipe=mxfp8", True, {"mode": "none", "modules": []}),
    ("recipe: recompute=selective(modules=[]) | fp8_recipe=mxfp8", False, {"mode": "selective", "modules": ["core_attn"]}),
    ("recipe: recompute=selective (yaml) | fp8_recipe=mxfp8", True, {"mode": "selective", "modules": ["core_attn"]}),
    ("recipe: recompute=selective(mla_up_proj) | fp8_recipe=mxfp8", True, {"mode": "selective",
                                                                          "modules": ["mla_up_proj"]}),
])
def test_an_explicit_empty_selective_list_recomputes_nothing(notes: str, rules: bool, section: dict[str, Any]) -> None:
    """Megatron-Core fills ``["core_attn"]`` only when ``recompute_modules is None``: a recipe's explicit ``[]`` with
    granularity selective recomputes nothing; an unstated list keeps the default (``row_rules=False``: as before)."""
    config: dict[str, Any] = {"profile": "megatron", "model": {}, "parallel": {"tp": 1}, "train": {}}
    apply_recipe_items({"notes": notes}, config, row_rules=rules)
    assert config["recompute"] == section
