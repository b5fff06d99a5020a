"""The cross-field rules of a configuration (spec §3), written once as a table.

Each :class:`Rule` names the field it guards, a predicate over a config whose numbers may be numpy
arrays (one value per layout, :mod:`estimator.search.batched`) that is true where the rule is
broken, and the message for one broken config. The rules run in table order and the first broken
one is the error:

- one config (``EstimatorConfig``'s validator, :func:`first_broken`): the first broken rule is
  raised with its field and message;
- a batch (:func:`first_broken_index`): every row gets the index of its first broken rule, so each
  rejected layout keeps the reason (field) and message the one-config path gives it.

Predicates combine with ``&``/``|`` (never ``and``/``or``) so that they hold for scalars and arrays
alike. A rule marked ``structural`` reads only fields that a batched group shares (profile, model,
pp, vpp, schedule, the pipeline split, recompute): its field and message are the same for the
whole group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from estimator.config.eager_rules import eager_rules
from estimator.config.errors import ConfigError
from estimator.config.mixer_rules import mixer_rules
from estimator.config.rule import Cfg, Rule
from estimator.inputs import pipeline_split, recipes
from estimator.inputs.profiles import (
    OVERLAP_FLAGS,
    megatron_core_layers,
    moe_tp_without_sp,
    moe_tp_without_sp_layout,
    tp_comm_overlap_possible,
)
from estimator.shared.arrays import any_true


def _etp_or_1(etp: Any) -> Any:
    return 1 if etp is None else etp


def _expert_group_broken(cfg: Cfg) -> Any:
    p = cfg.parallel
    return cfg.model.is_moe & ((p.dp * p.tp * p.cp) % (p.ep * _etp_or_1(p.etp)) != 0)


def _profile_ep_broken(cfg: Cfg) -> Any:
    p = cfg.parallel
    return cfg.model.is_moe & (cfg.profile != "sapp-nd") & (p.etp is None) & ((p.dp * p.cp) % p.ep != 0)


def _world_broken(cfg: Cfg) -> Any:
    devices = cfg.hardware.devices
    return (devices is not None) & (devices != cfg.parallel.world_size)


def _world_message(cfg: Cfg) -> str:
    p = cfg.parallel
    return (f"world size dp·tp·pp·cp = {p.dp}·{p.tp}·{p.pp}·{p.cp} = {p.world_size} "
            f"does not match hardware.devices = {cfg.hardware.devices}")


def _gbs_broken(cfg: Cfg) -> Any:
    t = cfg.train
    return (t.global_batch_size is not None) & (_modulo(t.global_batch_size, t.micro_batch_size * cfg.parallel.dp) != 0)


def _recipe_peak(cfg: Cfg) -> str | None:
    """The hardware peak the config's low-precision recipe needs (None without a recipe)."""
    recipe = _recipe(cfg)
    return None if recipe is None else recipe.peak


def _recipe(cfg: Cfg) -> recipes.LinearRecipe | None:
    """The config's low-precision linear recipe (None without one)."""
    return recipes.recipe_of(cfg.precision.linear_recipe, cfg.precision.fp8_linear, cfg.profile)


def _bf16_ends_broken(cfg: Cfg) -> Any:
    """Megatron-Core's checks of ``--first-last-layers-bf16`` under FP8 (``transformer_config.py``): not with
    delayed scaling, and each count at most the layers of one pipeline stage (``num_layers // pp``)."""
    start, end = cfg.precision.bf16_layers_at_ends
    if not (start or end):
        return False
    recipe = _recipe(cfg)
    per_stage = cfg.model.num_layers // cfg.parallel.pp
    return ((recipe is not None) and recipe.name == "delayed") | (start > per_stage) | (end > per_stage)


def _cpu_offloading_broken(cfg: Cfg) -> Any:
    """Megatron-Core's checks of ``--cpu-offloading`` (``transformer_config.py``): fewer layers than the model,
    no pipeline parallelism, no activation recompute; the reference profile has no such term."""
    n = cfg.train.cpu_offloading_num_layers
    if not n:
        return False
    return (n >= cfg.model.num_layers) | (cfg.parallel.pp > 1) | (cfg.recompute.mode != "none") | (
        cfg.profile == "sapp-nd")


def _missing_peak_broken(cfg: Cfg) -> Any:
    """A recipe whose GEMMs run on tensor cores the hardware lacks (FP4 before Blackwell, FP8 before Hopper),
    unless ``options.low_precision_gemms`` is off (then no GEMM runs at that peak)."""
    peak = _recipe_peak(cfg)
    return (peak is not None) and cfg.options.low_precision_gemms and peak not in cfg.hardware.peak_tflops


def _missing_peak_message(cfg: Cfg) -> str:
    recipe = cfg.precision.linear_recipe or recipes.DEFAULT_RECIPE.get(cfg.profile, "delayed")
    peak = _recipe_peak(cfg)
    return (f"recipe {recipe!r} runs its GEMMs at the {peak} peak, but hardware {cfg.hardware.name!r} has no "
            f"{peak} tensor cores (hardware.peak_tflops has {', '.join(sorted(cfg.hardware.peak_tflops))}); "
            "FP4 (nvfp4) needs Blackwell (b200, b300, gb200-nvl72, gb300-nvl72), FP8 Hopper or later")


def _mxfp8_device_broken(cfg: Cfg) -> Any:
    """MXFP8 on a device without MX block-scaled tensor cores (``hardware.mxfp8_gemm`` false: Hopper, Ada):
    TransformerEngine's ``check_recipe_support`` refuses ``MXFP8BlockScaling`` below compute capability 10.0,
    unless ``options.low_precision_gemms`` is off (then no GEMM runs the recipe)."""
    recipe = _recipe(cfg)
    return (recipe is not None) and recipe.name == "mxfp8" and cfg.options.low_precision_gemms and (
        not cfg.hardware.mxfp8_gemm)


def _nmb_broken(cfg: Cfg) -> Any:
    t = cfg.train
    if t.global_batch_size is None or t.num_micro_batches is None:
        return False
    return t.num_micro_batches * t.micro_batch_size * cfg.parallel.dp != t.global_batch_size


def _modulo(a: Any, b: Any) -> Any:
    """``a % b``, 0 when either is None (unset: the rule's guard already excludes it)."""
    return 0 if a is None or b is None else a % b


def example_layers(num_layers: int, chunks: int) -> list[int]:
    """An even-as-possible split (first stages one layer more), for error hints."""
    base, extra = divmod(num_layers, chunks)
    return [base + (1 if v < extra else 0) for v in range(chunks)]


def split_error(cfg: Cfg) -> ConfigError | None:
    """Why the stated split (``estimator.inputs.pipeline_split``) does not place exactly model.num_layers
    layers on pp·vpp virtual stages, or None when it does."""
    m, p = cfg.model, cfg.parallel
    chunks = p.pp * p.vpp
    try:
        if p.pipeline_layout is not None:
            stages = pipeline_split.parse_layout(p.pipeline_layout)
            pipeline_split.check_layout(stages, p.pp, p.vpp, m.num_layers, m.mtp_layers)
        elif p.layers_per_stage is not None:
            return _layers_per_stage_error(p.layers_per_stage, m.num_layers, chunks)
        elif pipeline_split.split_fields_set(p):
            pipeline_split.decoder_layers_per_virtual_stage(p, m.num_layers)
        elif m.num_layers % chunks:
            return ConfigError(
                "parallel.pp", f"model.num_layers ({m.num_layers}) must split evenly over pp·vpp = {chunks} "
                "(or give parallel.layers_per_stage, parallel.pipeline_layout, "
                "parallel.decoder_first/last_pipeline_num_layers)"
            )
    except ConfigError as exc:
        return exc
    return None


def _layers_per_stage_error(counts: list[int], num_layers: int, chunks: int) -> ConfigError | None:
    if len(counts) != chunks:
        return ConfigError("parallel.layers_per_stage", f"needs pp·vpp = {chunks} entries; got {len(counts)}")
    if any(n < 0 for n in counts) or sum(counts) != num_layers:
        return ConfigError(
            "parallel.layers_per_stage", f"entries must be ≥ 0 and sum to model.num_layers ({num_layers})",
            hint=f"a valid example for {num_layers} layers on {chunks} virtual stages: "
            f"{example_layers(num_layers, chunks)}",
        )
    return None


def _split_field(cfg: Cfg) -> str:
    err = split_error(cfg)
    return err.field if err else "parallel"


def _split_message(cfg: Cfg) -> str:
    err = split_error(cfg)
    if err is None:
        return ""
    return f"{err.rule}; {err.hint}" if err.hint else err.rule


def _families_message(cfg: Cfg) -> str:
    families = pipeline_split.split_fields_set(cfg.parallel)
    return (f"give at most one uneven pipeline split; got {' and '.join(families)} "
            "(a valid example: parallel.pipeline_layout 'Et*3|(tt|)*29,m|L' alone)")


def _moe_rules() -> list[Rule]:
    """Expert parallelism: MoE layouts (ep | experts, expert groups in dp·tp·cp) and dense models."""
    return [
        Rule("parallel.ep", lambda c: c.model.is_moe & (c.model.num_experts % c.parallel.ep != 0),
             lambda c: f"must divide model.num_experts ({c.model.num_experts}); got {c.parallel.ep}"),
        Rule("parallel.ep", _expert_group_broken,
             lambda c: f"ep·etp must divide dp·tp·cp ({c.parallel.dp * c.parallel.tp * c.parallel.cp}); "
             f"got ep={c.parallel.ep}, etp={c.parallel.etp} (MoE parallel folding: the expert grid "
             "etp·ep·edp spans the tp·cp·dp ranks of a pipeline stage, Megatron-Core parallel_state."
             "initialize_model_parallel: 'expert_tensor_model_pipeline_parallel_size' = etp·ep·pp must divide "
             "the world size)"),
        Rule("parallel.ep", _profile_ep_broken,
             lambda c: f"must divide dp·cp ({c.parallel.dp * c.parallel.cp}) under '{c.profile}', where etp "
             "defaults to tp (expert groups ep·etp must divide dp·tp·cp); set parallel.etp otherwise"),
        Rule("parallel.ep", lambda c: (not c.model.is_moe) & (c.parallel.ep > 1),
             lambda c: "must be 1 for a dense model (model.num_experts ≤ 1)"),
        Rule("parallel.etp",
             lambda c: (not c.model.is_moe) & (c.parallel.etp is not None) & (_etp_or_1(c.parallel.etp) != 1),
             lambda c: "expert tensor parallelism needs routed experts: leave it unset (or 1) for "
             f"a dense model (model.num_experts ≤ 1); got {c.parallel.etp}"),
    ]


#: every overlap switch any framework profile has (``parallel.<name>``), and the profiles that have it
_OVERLAP_OWNERS: dict[str, tuple[str, ...]] = {
    name: tuple(p for p, flags in OVERLAP_FLAGS.items() if name in flags)
    for name in dict.fromkeys(n for flags in OVERLAP_FLAGS.values() for n in flags)
}


def _set(value: Any) -> bool:
    """An overlap switch stated in the config (None = the framework default; the one bool field with a
    False default, ``overlap_moe_expert_parallel_comm``, counts as stated when true)."""
    return value is not None and value is not False


def _foreign_overlap(cfg: Cfg) -> str | None:
    """The first overlap switch ``cfg`` states that its profile's framework does not have."""
    return next((name for name in _OVERLAP_OWNERS
                 if cfg.profile not in _OVERLAP_OWNERS[name] and _set(getattr(cfg.parallel, name))), None)


def _foreign_overlap_message(cfg: Cfg) -> str:
    name = _foreign_overlap(cfg)
    owners = " / ".join(_OVERLAP_OWNERS.get(name or "", ()))
    own = ", ".join(OVERLAP_FLAGS[cfg.profile]) or "none"
    return (f"is an overlap switch of the '{owners}' profile's framework; profile '{cfg.profile}' has no such switch "
            f"(its overlap switches: {own}; estimator.inputs.profiles.OVERLAP_FLAGS)")


#: Megatron-Core's checks of ``--overlap-moe-expert-parallel-comm`` (``transformer_config.py``@d98e8a64dd), in order
_A2A_CHECKS: tuple[tuple[str, Callable[[Cfg], Any]], ...] = (
    ("'virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1' (parallel.vpp "
     "≥ 2 with pp > 1)", lambda c: (c.parallel.pp > 1) & (c.parallel.vpp < 2)),
    ("'only supported with expert model parallelism' (parallel.ep > 1)", lambda c: c.parallel.ep < 2),
    ("'disable full recomputation' / 'disable recomputation method' (recompute.mode full, recompute.method)",
     lambda c: (c.recompute.mode == "full") | ("full" in (c.recompute.per_stage or ())) | (
         c.recompute.method is not None)),
    ("'disable moe in recompute_modules'", lambda c: "moe" in c.recompute.modules),
    ("'disable moe_shared_expert_overlap'", lambda c: c.parallel.moe_shared_expert_overlap is True),
)


def _a2a_overlap_broken(cfg: Cfg) -> Any:
    if cfg.parallel.overlap_moe_expert_parallel_comm is not True:
        return False
    broken: Any = False
    for _, check in _A2A_CHECKS:
        broken = broken | check(cfg)
    return broken


def _a2a_overlap_message(cfg: Cfg) -> str:
    failed = [text for text, check in _A2A_CHECKS if any_true(check(cfg))]
    return ("Megatron-Core refuses it here (transformer_config.py): " + "; ".join(failed)
            + "; a valid example: parallel: {pp: 4, vpp: 2, schedule: interleaved, ep: 8, overlap_moe_expert_parallel_comm: true}")


def _overlap_rules() -> list[Rule]:
    """Overlap switches: only the profile's framework's own, with the prerequisites that framework checks."""
    return [
        Rule(lambda c: f"parallel.{_foreign_overlap(c) or 'overlap'}", lambda c: _foreign_overlap(c) is not None,
             _foreign_overlap_message, structural=True),
        Rule("parallel.overlap_param_gather",
             lambda c: (c.parallel.overlap_param_gather is True) & np.logical_not(c.parallel.distributed_optimizer),
             lambda c: "needs parallel.distributed_optimizer: true (Megatron-LM arguments.py: '--overlap-param-gather "
             "only supported with distributed optimizer')"),
        Rule("parallel.overlap_param_gather",
             lambda c: (c.parallel.overlap_param_gather is True) & (c.parallel.overlap_grad_reduce is not True),
             lambda c: "needs parallel.overlap_grad_reduce: true (Megatron-LM arguments.py: 'Must use "
             "--overlap-param-gather with --overlap-grad-reduce')"),
        Rule("parallel.tp_comm_overlap",
             lambda c: (c.parallel.tp_comm_overlap is True)
             & np.logical_not(tp_comm_overlap_possible(c.parallel.tp, c.parallel.sequence_parallel)),
             lambda c: "needs parallel.sequence_parallel: true with tp > 1 (Megatron-LM arguments.py: 'Tensor "
             "parallel communication/GEMM overlap can happen only when sequence parallelism is enabled')"),
        Rule("parallel.moe_shared_expert_overlap",
             lambda c: (c.parallel.moe_shared_expert_overlap is True) & (c.model.shared_ffn_total == 0),
             lambda c: "needs shared experts (model.num_shared_experts > 0): it overlaps the shared expert with "
             "the dispatch and combine all-to-alls", structural=True),
        Rule("parallel.overlap_moe_expert_parallel_comm", _a2a_overlap_broken, _a2a_overlap_message),
        Rule("parallel.enable_async_tensor_parallel",
             lambda c: (c.parallel.enable_async_tensor_parallel is True) & (not c.options.torch_compile),
             lambda c: "needs options.torch_compile: true (torchtitan parallelize: 'Async TP requires "
             "--training.compile')"),
    ]


def _layer_rules() -> list[Rule]:
    """Layer split over pp·vpp (spec §3) and the schedule's chunk count: structural."""
    return [
        Rule("parallel.vpp", lambda c: (c.parallel.schedule == "zero_bubble_v") & (c.parallel.vpp != 2),
             lambda c: "must be 2 for schedule 'zero_bubble_v' (two chunks per stage)", structural=True),
        Rule("parallel.vpp", lambda c: (c.parallel.schedule == "interleaved") & (c.parallel.vpp < 2),
             lambda c: "must be ≥ 2 for schedule 'interleaved'", structural=True),
        Rule("parallel.schedule", lambda c: (c.parallel.vpp > 1) & (c.parallel.schedule in ("1f1b", "gpipe")),
             lambda c: f"'{c.parallel.schedule}' has one chunk per stage; use 'interleaved' for vpp > 1",
             structural=True),
        Rule("parallel", lambda c: len(pipeline_split.split_fields_set(c.parallel)) > 1, _families_message,
             structural=True),
        Rule(_split_field, lambda c: split_error(c) is not None, _split_message, structural=True),
    ]


def _train_rules() -> list[Rule]:
    """Sequence and batch divisibility, then recompute and optimizer-shard rules."""
    return [
        Rule("train.seq_length", lambda c: c.train.seq_length % c.parallel.cp != 0,
             lambda c: f"must be divisible by parallel.cp ({c.parallel.cp})"),
        Rule("parallel.cp_comm_type", lambda c: c.model.attention_sinks & (c.parallel.cp > 1)
             & (c.parallel.cp_comm_type != "a2a") & (c.profile == "megatron"),
             lambda c: f"{c.parallel.cp_comm_type!r} with attention sinks (model.attention_sinks) at cp > 1 has no "
             "attention backend: Transformer Engine runs a learnable softmax only in FusedAttention, and under "
             "context parallelism only with cp_comm_type a2a (dot_product_attention/utils.py get_attention_backend); "
             "a valid example: parallel.cp_comm_type: a2a"),
        Rule("train.seq_length",
             lambda c: c.parallel.sequence_parallel & (c.train.seq_length % (c.parallel.tp * c.parallel.cp) != 0),
             lambda c: "must be divisible by tp·cp with sequence parallelism"),
        Rule("train.global_batch_size", _gbs_broken,
             lambda c: f"must be a multiple of micro_batch_size·dp = {c.train.micro_batch_size * c.parallel.dp}"),
        Rule("train.num_micro_batches", _nmb_broken,
             lambda c: "disagrees with global_batch_size/(micro_batch_size·dp)"),
        Rule("train.cross_entropy_fusion",
             lambda c: (c.train.cross_entropy_fusion != "none") & (not megatron_core_layers(c)),
             lambda c: f"is Megatron-LM's --cross-entropy-loss-fusion / --cross-entropy-fusion-impl; profile "
             f"'{c.profile}' without Megatron-FSDP has no such path (a valid example: profile megatron, or fsdp2 "
             "with parallel.fsdp_implementation: megatron, with train: {cross_entropy_fusion: te}, or "
             "cross_entropy_fusion: none)", structural=True),
        Rule("recompute.selective_ac_option",
             lambda c: (c.recompute.selective_ac_option == "op")
             & (c.model.is_moe | (c.model.attention == "mla") | (c.model.hybrid_override_pattern is not None)
                | (c.model.linear_attention_freq is not None)),
             lambda c: "'op' (torchtitan's op-level policy) is modelled for dense MHA/GQA blocks only; "
             "a valid example: model llama3-8b with {mode: selective, selective_ac_option: op}", structural=True),
        *eager_rules(),
        Rule("recompute.per_stage",
             lambda c: (c.recompute.per_stage is not None) and len(c.recompute.per_stage) != c.parallel.pp,
             lambda c: f"needs one entry per pipeline stage ({c.parallel.pp})", structural=True),
        Rule("train.optimizer", lambda c: (c.train.optimizer != "adam") & (c.profile != "megatron"),
             lambda c: f"{c.train.optimizer} is Megatron-Core's (--optimizer muon); profile {c.profile!r} has no Muon "
                       "optimizer: a valid example: profile: megatron, train: {optimizer: dist_muon}"),
        Rule("train.optimizer", lambda c: (c.train.optimizer != "adam") & (c.precision.compute == "fp16"),
             lambda c: "Megatron-Core: 'emerging optimizer with fp16 is not supported'; a valid example: precision: "
                       "{compute: bf16}"),
        Rule("train.optimizer", lambda c: (c.train.optimizer != "adam") & (c.model.hybrid_override_pattern is not None),
             lambda c: "Muon's Newton-Schulz shapes of a hybrid Mamba stack's weights are not modelled; a valid "
                       "example: train: {optimizer: adam}"),
        Rule("precision.linear_recipe", _missing_peak_broken, _missing_peak_message),
        Rule("precision.linear_recipe", _mxfp8_device_broken,
             lambda c: f"recipe 'mxfp8' needs MX block-scaled tensor cores, but hardware {c.hardware.name!r} has none "
                       "(hardware.mxfp8_gemm false; TransformerEngine requires compute capability 10.x: b200, b300, "
                       "gb200-nvl72, gb300-nvl72); on Hopper use a per-tensor or block FP8 recipe, a valid example: "
                       "precision: {linear_recipe: tensorwise}"),
        Rule("precision.bf16_layers_at_ends", _bf16_ends_broken,
             lambda c: "Megatron-Core refuses --first-last-layers-bf16 with delayed scaling and counts above the "
             f"layers of one pipeline stage ({c.model.num_layers // c.parallel.pp}) (transformer_config.py); a valid "
             "example: precision: {linear_recipe: nvfp4, bf16_layers_at_ends: [0, 2]}"),
        Rule("precision.fp8_attention",
             lambda c: c.precision.fp8_attention & c.options.fp8_attention & ("fp8" not in c.hardware.peak_tflops),
             lambda c: f"FP8 attention runs at the fp8 peak, but hardware {c.hardware.name!r} has no fp8 tensor cores "
                       f"(hardware.peak_tflops has {', '.join(sorted(c.hardware.peak_tflops))}); it needs Hopper or "
                       "later; a valid example: precision: {fp8_attention: false}"),
        Rule("precision.compute",
             lambda c: (c.precision.compute == "fp8") & c.options.low_precision_gemms,
             lambda c: "'fp8' would price every operator (attention, norms, softmax, optimizer) at the FP8 peak, "
             "which no framework does; FP8 linear layers are a recipe: a valid example: precision: {compute: bf16, "
             "linear_recipe: mxfp8} (or options.low_precision_gemms: false for the model before recipes)"),
        Rule("train.cpu_offloading_num_layers", _cpu_offloading_broken,
             lambda c: f"Megatron-Core offloads fewer layers than the model has ({c.model.num_layers}), and not with "
             "pipeline parallelism, activation recompute or the reference profile sapp-nd (transformer_config.py: "
             "'CPU offloading can be done only for layers less than ...', 'no support for Pipeline parallelism "
             "with CPU offloading', 'does not work when activation recomputation is enabled'); a valid example: "
             "parallel.pp 1, recompute.mode none, train.cpu_offloading_num_layers 20"),
        Rule("parallel.optimizer_shard_size",
             lambda c: (c.parallel.optimizer_shard_size is not None)
             & (_modulo(c.parallel.dp * c.parallel.tp, c.parallel.optimizer_shard_size) != 0),
             lambda c: "must divide dp·tp"),
    ]


def _kv_heads_broken(cfg: Cfg) -> Any:
    g, t = cfg.model.kv_heads, cfg.parallel.tp
    return (cfg.model.attention != "mla") & (g % t != 0) & (t % g != 0)


def stated_rules(cfg: Cfg) -> list[str]:
    """The rules that hold for ``cfg`` but change what the numbers mean, one sentence each (printed with an
    estimate): a hidden size not divisible by the heads (floored head_dim), KV replication when tp exceeds
    the KV heads, MoE with tensor parallelism but no sequence parallelism under Megatron
    (:func:`moe_tp_without_sp`)."""
    m, t = cfg.model, cfg.parallel.tp
    out = [note] if (note := moe_tp_without_sp(cfg)) else []
    if m.head_dim is None and m.hidden_size % m.num_attention_heads:
        out.append(f"rule hidden-divisible-by-heads: model.hidden_size ({m.hidden_size}) is not divisible by "
                   f"model.num_attention_heads ({m.num_attention_heads}): head_dim = {m.head_size} (floor), so "
                   f"the attention width heads·head_dim = {m.num_attention_heads * m.head_size} is not the hidden "
                   "size; set model.head_dim to say which is meant")
    if m.attention != "mla" and t > m.kv_heads:
        out.append(f"rule kv-replication: parallel.tp ({t}) > KV heads ({m.kv_heads}): each KV head is replicated "
                   f"on {t // m.kv_heads} tensor-parallel ranks; the estimate divides the K/V projections by tp "
                   "(2·g·d/t), so it does not count the replicated copies")
    return out


def _head_rules() -> list[Rule]:
    """Attention heads over tp, the KV heads over tp (or KV replication) and the head size: named rules."""
    return [
        Rule("parallel.tp", lambda c: c.model.num_attention_heads % c.parallel.tp != 0,
             lambda c: f"must divide model.num_attention_heads ({c.model.num_attention_heads}); got {c.parallel.tp} "
             "(rule tp-divides-attention-heads)", name="tp-divides-attention-heads"),
        Rule("parallel.tp", _kv_heads_broken,
             lambda c: f"must divide the KV heads (model.num_kv_heads = {c.model.kv_heads}) or be a multiple of them "
             f"(KV replication); got {c.parallel.tp} (rule tp-divides-kv-heads: each rank holds whole query "
             "groups, Megatron-LM megatron/core/transformer/attention.py)", name="tp-divides-kv-heads"),
        *mixer_rules(),
        Rule("model.hidden_size",
             lambda c: (c.model.head_dim is None) & (c.model.hidden_size < c.model.num_attention_heads),
             lambda c: f"must be at least model.num_attention_heads ({c.model.num_attention_heads}) when "
             f"model.head_dim is not given (head_dim = hidden // heads would be 0); got {c.model.hidden_size} "
             "(rule hidden-divisible-by-heads; set model.head_dim for another head size)",
             structural=True, name="hidden-divisible-by-heads"),
    ]


#: every cross-field rule, in the order they are checked (the first broken one is the error)
RULES: tuple[Rule, ...] = (
    *_head_rules(),
    *_moe_rules(),
    Rule("parallel", _world_broken, _world_message),
    *_overlap_rules(),
    *_layer_rules(),
    *_train_rules(),
)
#: the index :func:`first_broken_index` gives a row that breaks no rule
NO_RULE = len(RULES)


#: rules a strategy search applies on top of :data:`RULES` (both its scalar and batched paths): layouts the
#: framework does not train, which a single estimate prices as given and states (:func:`stated_rules`) but a
#: search must not rank
SEARCH_RULES: tuple[Rule, ...] = (
    Rule("parallel.sequence_parallel", moe_tp_without_sp_layout,
         lambda c: "false at parallel.tp > 1 with routed experts under profile megatron: Megatron-Core's "
         "MoELayer.forward refuses this layout in training (rule moe-tp-needs-sp), so the search leaves it out; "
         "set parallel.sequence_parallel: true in the base config to search tp > 1", name="moe-tp-needs-sp"),
)


#: the rules of a search, in order: :data:`RULES`, then :data:`SEARCH_RULES`
SEARCH_TABLE: tuple[Rule, ...] = (*RULES, *SEARCH_RULES)


def first_broken(cfg: Cfg, rules: tuple[Rule, ...] = RULES) -> tuple[str, str] | None:
    """(field, message) of the first rule of ``rules`` (default :data:`RULES`) ``cfg`` breaks, or None when it keeps
    them all."""
    for rule in rules:
        if rule.broken(cfg):
            return rule.field_of(cfg), rule.message(cfg)
    return None


def first_broken_index(cfg: Cfg, n: int, rules: tuple[Rule, ...] = RULES) -> np.ndarray:
    """Per row of a batch of ``n`` layouts (``cfg``'s numbers arrays of length n or shared
    scalars): the index in ``rules`` (default :data:`RULES`) of the first rule the row breaks, ``len(rules)``
    (:data:`NO_RULE` for :data:`RULES`) if none."""
    first = np.full(n, len(rules), dtype=np.int64)
    for index in range(len(rules) - 1, -1, -1):
        broken = np.broadcast_to(np.asarray(rules[index].broken(cfg), dtype=bool), (n,))
        first[broken] = index
    return first
