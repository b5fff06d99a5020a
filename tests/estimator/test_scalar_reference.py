"""The scalar path reproduces its stored outputs (tests/estimator/scalar_reference.py) to 1e-12 relative:
speed work (layers of one kind priced once, no deep copies) changes no number."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.estimator import scalar_reference as ref

STORED = json.loads(ref.DATA.read_text(encoding="utf-8"))
REL = 1e-12


def test_reference_covers_the_examples_profiles_and_rejections() -> None:
    configs = STORED["configs"]
    assert {c["example"] for c in configs} == {name for name, _, _ in ref.CASES}
    assert {c["overrides"].get("profile") for c in configs} >= set(ref.PROFILES)
    assert any("error" in c["outputs"] for c in configs)
    assert sum("error" not in c["outputs"] for c in configs) >= 90


def test_same_inputs_as_stored() -> None:
    """The stored set is the one the module enumerates today (a changed space needs a deliberate --write)."""
    assert [[n, o] for n, o in ref.reference_inputs()] == [[c["example"], c["overrides"]] for c in STORED["configs"]]


#: the off-switches of the recipe mechanisms (issue 26): with them every number is the model's before them
OFF = {"options.low_precision_gemms": False, "options.cuda_graphs": False, "options.adapters": False,
       "options.op_sac_recompute": False, "options.grouped_expert_activation": False,
       "options.grouped_gemm_by_tokens": False, "options.flex_dispatch_per_rank": False,
       "options.flex_dispatch_per_node": False,
       "options.grouped_op_fuser": False, "options.fused_quantize": False, "options.quantized_tp_gather": False,
       "options.main_grad_add": False, "options.attention_head_dim": False, "options.fp8_attention": False,
       "options.sfu_softmax": False, "options.fsdp2_copies": False, "options.per_layer_recompute": False,
       "options.a2a_unpaired_steps": False, "options.muon": False, "options.cast_kernel_latency": False,
       "options.offload_copies": False, "options.eager_kernels": False, "options.async_tp_patterns": False,
       "options.loss_parallel_memory": False, "options.moe_probs_in_activation": False,
       "options.expert_bias": False, "options.measured_gemm_rate": False, "options.ssd_scan_memory": False}
#: stored configs whose numbers the recipe mechanisms change (FP8 linears: their GEMMs at the FP8 peak;
#: torchtitan's op-level SAC: what it re-runs, estimator.perf.sac; its layer-level SAC: the layers it re-runs,
#: estimator.inputs.derive.recomputed_layers)
CHANGED_BY_RECIPES = {i for i, c in enumerate(STORED["configs"]) if c["overrides"].get("precision.fp8_linear")
                      or c["overrides"].get("recompute.selective_ac_option") == "op"
                      or str(c["overrides"].get("recompute.selective_ac_option", "")).isdigit()}
#: the overlap mechanisms' off-switch (estimator.perf.overlap): every number as before them
OVERLAP_OFF = {"options.comm_overlap": False}


def _config(name: str, overrides: dict[str, object]) -> Any:
    """The stored config ``overrides`` of example ``name``, built as the stored outputs were."""
    import estimator
    from estimator.search.evaluate import search_base

    base = ref._base(name)
    return estimator.load_config(search_base(base, overrides) if overrides else base, overrides or None)


def _hides_something(name: str, overrides: dict[str, object]) -> bool:
    """A default overlap mechanism (FSDP2 prefetch, the CP ring) hides comm for this config."""
    import estimator

    return bool(estimator.estimate_perf(_config(name, overrides)).overlap)


def _has_local_expert_groups(name: str, overrides: dict[str, object]) -> bool:
    """More than one routed expert per rank: the grouped-expert mechanisms (one activation kernel over
    the local experts, the grouped GEMM by tokens per expert) reprice its MoE layers."""
    cfg = _config(name, overrides)
    return cfg.model.num_experts > cfg.parallel.ep


def _measured_gemm_rate(name: str, overrides: dict[str, object]) -> bool:
    """The hardware holds a measured GEMM rate (``estimator.inputs.gemm_rates``: B300, GB200, GB300)."""
    eff = _config(name, overrides).hardware.efficiency
    return eff is not None and eff.gemm_rate is not None


def _torch_loss_parallel(name: str, overrides: dict[str, object]) -> bool:
    """torch's loss parallelism (fsdp2 by torch ``fully_shard`` with TP > 1): its backward holds one more
    logits-sized copy (``estimator.memory.activation.torch_loss_parallel``)."""
    from estimator.memory import activation

    return bool(activation.torch_loss_parallel(_config(name, overrides)))


@pytest.mark.parametrize("index", range(len(STORED["configs"])))
def test_scalar_outputs_match_stored(index: int) -> None:
    """With the overlap and recipe mechanisms off every stored number is reproduced; with the defaults too,
    except where a framework's default overlap (FSDP2 prefetch, the CP ring) hides comm, a recipe (FP8
    linears) prices its GEMMs at the FP8 peak, a rank holds several routed experts (grouped experts), torch's
    loss parallelism holds one more logits copy or the hardware has a measured GEMM rate."""
    case = STORED["configs"][index]
    off = ref._encode(ref.outputs(case["example"], {**case["overrides"], **OVERLAP_OFF, **OFF}))
    assert ref.close(off, case["outputs"], REL) == []
    got = ref._encode(ref.outputs(case["example"], case["overrides"]))
    if ref.close(got, case["outputs"], REL):
        assert (index in CHANGED_BY_RECIPES or _hides_something(case["example"], case["overrides"])
                or _has_local_expert_groups(case["example"], case["overrides"])
                or _torch_loss_parallel(case["example"], case["overrides"])
                or _measured_gemm_rate(case["example"], case["overrides"]))


def test_recipe_mechanisms_off_reproduce_every_stored_config() -> None:
    """Every stored config (the shipped examples over their layout spaces, every profile) with the issue-26
    off-switches gives its stored numbers: the switches restore the model before the mechanisms."""
    assert CHANGED_BY_RECIPES  # the FP8-linear configs exist (and differ with the switches on)
    for case in STORED["configs"]:
        got = ref._encode(ref.outputs(case["example"], case["overrides"] | OFF | OVERLAP_OFF))
        assert ref.close(got, case["outputs"], REL) == [], case["overrides"]
    changed = STORED["configs"][min(CHANGED_BY_RECIPES)]
    assert ref.close(ref._encode(ref.outputs(changed["example"], changed["overrides"] | OVERLAP_OFF)),
                     changed["outputs"], REL)


def test_overrides_copy_on_write_leave_the_source_unchanged() -> None:
    """load_config no longer deep-copies its source: overrides copy only the mappings on their path."""
    import copy

    import estimator

    base = estimator.load_config(ref.EXAMPLES / "llama3-8b-h100.yaml")
    data = base.model_dump(mode="python")
    snapshot = copy.deepcopy(data)
    cfg = estimator.load_config(data, {"parallel.tp": 4, "parallel.dp": 1, "hardware.devices": 8,
                                       "recompute.modules": ["core_attn", "mlp"]})
    assert data == snapshot
    assert (cfg.parallel.tp, cfg.hardware.devices, cfg.recompute.modules) == (4, 8, ["core_attn", "mlp"])


def test_validated_sections_give_the_same_config_as_their_fields() -> None:
    """An EstimatorConfig source keeps its untouched sections as instances; the result equals loading
    the dumped fields, and a bad override on a kept section is still rejected."""
    import estimator

    base = estimator.load_config(ref.EXAMPLES / "deepseek-v3-671b-h100.yaml")
    overrides = {"parallel.tp": 2, "parallel.dp": 64, "train.micro_batch_size": 2}
    fast = estimator.load_config(base, overrides)
    slow = estimator.load_config(base.model_dump(mode="python"), overrides)
    assert fast == slow
    assert fast.model is base.model
    with pytest.raises(estimator.ConfigError, match=r"model\.hidden_size"):
        estimator.load_config(base, {"model.hidden_size": -1})
