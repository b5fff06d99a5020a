"""One place that turns a row of the published measurements into an estimator config dict.

Rows of ``../shared/data/measured/memory_cases.csv`` and ``step_time_cases.csv`` share the
configuration columns (see that folder's README). ``config_from_measured_row`` maps them to the
schema of spec §3; bad values raise ``ConfigError`` naming the column. Cells the source left
empty get a stated default recorded in ``model.assumed`` (column -> reason), never a silent guess.
What a source itself publishes about its runs beyond the CSV columns (e.g. a paper's formula
that counts attention scores, a CI config's dropout flags) lives in ``SOURCE_FACTS`` with its
citation, is applied to that source's rows only, and is recorded in ``model.source_facts``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from estimator.config.errors import ConfigError
from estimator.experiments import architecture_notes, bridge_facts, recipe_notes
from estimator.experiments.architecture_notes import MODELLED_ACTIVATIONS, architecture_from_notes
from estimator.experiments.bridge_splits import BRIDGE_FACTS, BRIDGE_PREFIX, apply_bridge_split
from estimator.experiments.row_corrections import apply_corrections, batch_section, framework_rules
from estimator.inputs.recipes import RECIPES
from estimator.inputs.variants import hardware_preset
from ndval.core.units import BYTES_PER_MIB

#: source spelling of selective-recompute modules -> estimator module name
RECOMPUTE_MODULE_ALIASES = {"core_attention": "core_attn"}
#: ``recompute_modules`` cells that name a torchtitan policy (recompute.selective_ac_option), not modules
SAC_POLICY_CELLS = {"op-level sac": "op"}

#: defaults for cells a source left empty: column -> (value, reason)
EMPTY_DEFAULTS: dict[str, tuple[Any, str]] = {
    "activation": ("gelu", "not stated by the source; Megatron GPT default GeLU"),
    "norm": ("layernorm", "not stated by the source; Megatron GPT default LayerNorm"),
    "vocab_size": (50257, "not stated by the source; GPT-2 BPE vocabulary (Megatron GPT examples)"),
    "tied_embeddings": (False, "not stated by the source; Megatron default unties only when asked, assume untied"),
    "precision": ("bf16", "not stated by the source; assume bf16"),
    "distributed_optimizer": (False, "not stated by the source; assume a replicated optimizer"),
    "sequence_parallel": (False, "not stated by the source; assume off"),
    "flash_attention": (True, "not stated by the source; assume flash attention"),
}


#: CI model configs these facts were read from (NVIDIA/Megatron-LM, tests/functional_tests/test_cases/),
#: at the commit named per test (stored versions; the CSV's d98e8a64dd was not re-read, and the CSV
#: notes record the model configs' last change as ab16414a20 for all three)
_MCORE_MOE_CONFIG = "NVIDIA/Megatron-LM@{} tests/functional_tests/test_cases/moe/{}/model_config.yaml"
_KORTHIKANTI_SCORES = (
    "Korthikanti et al. 2022 (arXiv 2205.05198) §4.1 / Table 2 count the attention scores explicitly: "
    "per layer s·b·h·(34 + 5·a·s/h) without recompute (softmax output, dropout mask, dropout output "
    "per score); Megatron-LM of 2022 had no flash attention, so the CSV's empty flash_attention cell "
    "means unfused attention for this source"
)


@dataclass(frozen=True)
class VocabPadding:
    """A source fact ``--make-vocab-size-divisible-by d``: the padded vocabulary follows from the row's
    vocabulary and tp by :func:`megatron_padded_vocab` when the row leaves ``padded_vocab_size`` empty."""

    divisible_by: int


def megatron_padded_vocab(vocab: int, divisible_by: int, tp: int) -> int:
    """Megatron's padded vocabulary: ⌈V / (d·t)⌉·d·t (NVIDIA/Megatron-LM@d98e8a64dd
    megatron/training/vocab_utils.py ``calculate_padded_vocab_size``: ``multiple =
    make_vocab_size_divisible_by * tensor_model_parallel_size``, rounded up to it)."""
    multiple = divisible_by * tp
    return -(-vocab // multiple) * multiple


def _mcore_moe_facts(test: str, commit: str, layout: str | None = None) -> dict[str, tuple[Any, str]]:
    """Facts of one Megatron-LM CI MoE proxy test read from its ``model_config.yaml``."""
    src = _MCORE_MOE_CONFIG.format(commit, test)
    facts: dict[str, tuple[Any, str]] = {
        "train.attention_dropout": (0.0, f"{src}: --attention-dropout 0.0"),
        "train.hidden_dropout": (0.0, f"{src}: --hidden-dropout 0.0"),
        "train.moe_grouped_gemm": (True, f"{src}: --moe-grouped-gemm true"),
        "train.cross_entropy_fusion": ("native", f"{src}: --cross-entropy-loss-fusion true, "
                                       "--cross-entropy-fusion-impl native"),
        "model.padded_vocab_size": (VocabPadding(3232), f"{src}: --make-vocab-size-divisible-by 3232"),
    }
    if layout is not None:
        facts["parallel.overlap_moe_expert_parallel_comm"] = (True, f"{src}: --overlap-moe-expert-parallel-comm")
        facts["parallel.pipeline_layout"] = (
            layout,
            f"{src}: --pipeline-model-parallel-layout '{layout}' = 8 virtual stages of "
            "3, 2, 2, 2, 2, 2, 2, 1 decoder layers (E embedding, m MTP, L loss on the last)",
        )
    return facts


_VTRAIN_MODEL = (
    "VIA-Research/vTrain@f8dda8473a src/model/gpt_modeling.py, the GPT layer vTrain profiles to model these "
    "Megatron-DeepSpeed runs (data/README.md): core attention is unfused - torch.baddbmm (QK^T), "
    "FusedScaleMaskSoftmax, attention dropout, torch.bmm (PV), permute().contiguous() - no flash attention"
)
_VTRAIN_POSITIONS = (
    "VIA-Research/vTrain@f8dda8473a src/model/gpt_modeling.py ShardedGptEmbeddings: learned absolute positions "
    "(self.position_embeddings = nn.Embedding(max_sequence_length, hidden_size), added to the word embeddings); "
    "no rotary embedding in the layer"
)


_SIMUMAX_CEF = (
    "MooreThreads/SimuMax@4dcaae513b docs/strategy.md: the '_cef' cases of docs/b200/b200_release_v1.2_summary.json "
    "run with --cross-entropy-loss-fusion --cross-entropy-fusion-impl te (every SimuMax B200 v1.2 row is a '_cef' case)"
)
_MCORE_7B_CONFIG = ("NVIDIA/Megatron-LM@d98e8a64dd tests/functional_tests/test_cases/gpt/{}/model_config.yaml: "
                    "--no-gradient-accumulation-fusion: true")
_MCORE_7B_BIAS = ("NVIDIA/Megatron-LM@d98e8a64dd tests/functional_tests/test_cases/gpt/{}/model_config.yaml: no "
                  "--disable-bias-linear, so Megatron's default add_bias_linear true")
_MCORE_7B_OVERLAP = ("NVIDIA/Megatron-LM@d98e8a64dd tests/functional_tests/test_cases/gpt/{}/model_config.yaml: "
                     "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather (the CSV notes)")
_MOONLIGHT_RECIPE = ("NVIDIA-NeMo/Megatron-Bridge@600d069b82 src/megatron/bridge/recipes/moonlight/h100/moonlight_16b.py "
                     "moonlight_16b_pretrain_8gpu_h100_bf16_config: moe_shared_expert_overlap (the CSV notes)")


def _mcore_7b_facts(test: str) -> dict[str, tuple[Any, str]]:
    """Facts of one Megatron-LM CI GPT-3 7B test read from its ``model_config.yaml``."""
    return {
        "model.linear_bias": (True, _MCORE_7B_BIAS.format(test)),
        "train.gradient_accumulation_fusion": (False, _MCORE_7B_CONFIG.format(test)),
        "parallel.overlap_grad_reduce": (True, _MCORE_7B_OVERLAP.format(test)),
        "parallel.overlap_param_gather": (True, _MCORE_7B_OVERLAP.format(test)),
    }


#: facts of vTrain's GPT layer, which every vTrain source shares (single-node and multi-node ground
#: truth were profiled with the same Megatron-DeepSpeed layer): applied to each source whose id
#: starts with ``vtrain_``
_VTRAIN_FACTS: dict[str, tuple[Any, str]] = {
    "train.flash_attention": (False, _VTRAIN_MODEL),
    "model.position_embedding": ("learned", _VTRAIN_POSITIONS),
}
#: source-id prefix -> facts of every source of that family
FAMILY_FACTS: dict[str, dict[str, tuple[Any, str]]] = {"vtrain_": _VTRAIN_FACTS, "mbridge_": BRIDGE_FACTS}


#: published facts about a source's runs that its CSV cells leave empty or cannot express:
#: (source_id, model_name or None for every row of the source) -> {config path: (value, citation)}.
#: A CSV cell that states the value wins over a fact (facts fill empty cells only).
SOURCE_FACTS: dict[tuple[str, str | None], dict[str, tuple[Any, str]]] = {
    ("simumax_b200_v1.2", None): {"train.cross_entropy_fusion": ("te", _SIMUMAX_CEF)},
    ("korthikanti2022_fig1", None): {"train.flash_attention": (False, _KORTHIKANTI_SCORES)},
    ("megatron_ci", "gpt3_7b_tp4_pp1_memory_speed"): _mcore_7b_facts("gpt3_7b_tp4_pp1_memory_speed"),
    ("megatron_ci", "gpt3_7b_tp1_pp4_memory_speed"): _mcore_7b_facts("gpt3_7b_tp1_pp4_memory_speed"),
    ("mbridge_recompute_moonlight", None): {"parallel.moe_shared_expert_overlap": (True, _MOONLIGHT_RECIPE)},
    ("megatron_ci", "gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed"): _mcore_moe_facts(
        "gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed", "2afeef845d"
    ),
    ("megatron_ci", "gpt3_mcore_te_tp2_pp2_ep4_etp1_mtp_resume_torch_dist_fp8"): _mcore_moe_facts(
        "gpt3_mcore_te_tp2_pp2_ep4_etp1_mtp_resume_torch_dist_fp8", "16d85528bc"
    ),
    ("megatron_ci", "gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental"): _mcore_moe_facts(
        "gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental", "18e953661e", layout="Et*3|(tt|)*6tmL"
    ),
}


def source_facts(row: Mapping[str, str], bridge: bool = True) -> dict[str, tuple[Any, str]]:
    """Facts that apply to ``row``: its source family's (:data:`FAMILY_FACTS`; for a Megatron-Bridge source also what
    its providers and benchmark scripts set, :mod:`bridge_facts`, unless ``bridge`` is False), its model's (any
    source: ``architecture_notes.model_facts``), then ``SOURCE_FACTS`` source-wide, then per model."""
    source, model = _text(row, "source_id"), _text(row, "model_name")
    family = next((facts for prefix, facts in FAMILY_FACTS.items() if source.startswith(prefix)), {})
    if bridge and source.startswith(BRIDGE_PREFIX):
        family = {**family, **bridge_facts.provider_facts(row), **bridge_facts.benchmark_facts(row)}
    return {**family, **architecture_notes.model_facts(row), **SOURCE_FACTS.get((source, None), {}),
            **SOURCE_FACTS.get((source, model), {})}


#: config path -> CSV column whose non-empty cell wins over a source fact
_FACT_COLUMNS = {"train.flash_attention": "flash_attention", "model.padded_vocab_size": "padded_vocab_size",
                 "model.vocab_size": "vocab_size", "precision.grads": "grad_dtype"}


def _apply_facts(row: Mapping[str, str], config: dict[str, Any], bridge: bool = True) -> None:
    """Set each applicable source fact in ``config`` and cite it in ``model.source_facts``."""
    cited: dict[str, str] = {}
    for path, (value, citation) in source_facts(row, bridge).items():
        column = _FACT_COLUMNS.get(path, "")
        if column and _text(row, column):
            continue
        section, key = path.split(".", 1)
        if isinstance(value, VocabPadding):
            value = megatron_padded_vocab(config["model"]["vocab_size"], value.divisible_by, config["parallel"]["tp"])
        config[section][key] = value
        if column:
            config["model"]["assumed"].pop(column, None)
        cited[path] = citation
    config["model"]["source_facts"] = cited


def _text(row: Mapping[str, str], column: str) -> str:
    return (row.get(column) or "").strip()


_KORTHIKANTI_PAR_OPT = (
    "Korthikanti et al. 2022 (arXiv 2205.05198) Fig. 1 'parameters and optimizer state' (values as "
    "Calculon's validation.py encodes them) counts the transformer layers only: each of the four values "
    "equals 18 B x 12h^2 x L/(t.p) exactly (22B and 175B: 45.5625 GiB, 530B: 31.640625, 1T: 32.958984375), "
    "i.e. 12h^2 weights per layer at 18 B each (fp16 param + fp32 grad + fp32 master + Adam), no "
    "embedding or output layer (the figure is the paper's analytical breakdown, not a measurement)"
)

#: what a source's measurement of a kind covers where it is narrower than the kind's default:
#: (source_id, measured_kind) -> (scope, citation). Scope ``layers``: the transformer layers of the
#: stage only (``StageMemory.static_detail``), without embedding and output layer.
MEASUREMENT_SCOPES: dict[tuple[str, str], tuple[str, str]] = {
    ("korthikanti2022_fig1", "params_optimizer"): ("layers", _KORTHIKANTI_PAR_OPT),
}


def measured_kind_of(row: Mapping[str, str]) -> str:
    """The row's ``measured_kind`` with the source's scope where ``MEASUREMENT_SCOPES`` narrows it
    (``params_optimizer:layers``); the key ``estimate_for_measurement`` takes."""
    kind = _text(row, "measured_kind") or "max_allocated"
    scope = MEASUREMENT_SCOPES.get((_text(row, "source_id"), kind))
    return f"{kind}:{scope[0]}" if scope else kind


class NotStated(ConfigError):
    """A value the estimate needs is empty in the row: the source did not state it.

    The row is *not evaluable* (never guessed, never dropped); ``field`` names the column.
    """

    def __init__(self, column: str) -> None:
        super().__init__(column, "not stated by the source (empty cell); the estimate needs it")


def _int(row: Mapping[str, str], column: str, *, required: bool = False) -> int | None:
    raw = _text(row, column)
    if not raw:
        if required:
            raise NotStated(column)
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(column, f"expected an integer, got {raw!r}") from None
    if value != int(value) or value < 0:
        raise ConfigError(column, f"expected a non-negative integer, got {raw!r}")
    return int(value)


def _bool(row: Mapping[str, str], column: str) -> bool | None:
    raw = _text(row, column).lower()
    if not raw:
        return None
    if raw in ("true", "yes", "1"):
        return True
    if raw in ("false", "no", "0"):
        return False
    raise ConfigError(column, f"expected true/false, got {raw!r}")


def _default(column: str, assumed: dict[str, str]) -> Any:
    value, reason = EMPTY_DEFAULTS[column]
    assumed[column] = reason
    return value


def _model(row: Mapping[str, str], assumed: dict[str, str]) -> dict[str, Any]:
    num_layers = _int(row, "num_layers", required=True)
    arch = _text(row, "arch") or "dense"
    num_experts = _int(row, "num_experts") or 0
    if arch == "moe" and num_experts <= 1:
        raise ConfigError("num_experts", "arch is 'moe' but num_experts ≤ 1")
    attention = _text(row, "attention") or "mha"
    if attention not in ("mha", "gqa", "mla"):
        raise ConfigError("attention", f"unknown attention {attention!r}")
    activation = _text(row, "activation") or _default("activation", assumed)
    if activation not in MODELLED_ACTIVATIONS:
        raise ConfigError("activation", f"activation {activation!r} is not modelled ({', '.join(MODELLED_ACTIVATIONS)})")
    norm = _text(row, "norm") or _default("norm", assumed)
    vocab = _int(row, "vocab_size") or _int(row, "padded_vocab_size") or _default("vocab_size", assumed)
    tied = _bool(row, "tied_embeddings")
    notes = _text(row, "notes").lower()
    architecture_notes.check_unmodelled_features(notes, _text(row, "model_name"))
    model: dict[str, Any] = {
        "name": _text(row, "model_name") or "model",
        "num_layers": num_layers,
        "num_dense_layers": (_int(row, "num_dense_layers") or 0) if num_experts > 1 else 0,
        "hidden_size": _int(row, "hidden_size", required=True),
        "ffn_hidden_size": _int(row, "ffn_hidden_size"),
        "num_attention_heads": _int(row, "num_attention_heads", required=True),
        "num_kv_heads": _int(row, "num_kv_heads"),
        "head_dim": _int(row, "head_dim"),
        "attention": attention,
        "num_experts": num_experts,
        "moe_topk": _int(row, "moe_topk") or 1,
        # the README's shared width is the TOTAL: a width with an empty count is one shared expert (Nemotron-3)
        "num_shared_experts": _int(row, "num_shared_experts") or (1 if _int(row, "shared_expert_ffn_hidden_size") else 0),
        "moe_ffn_hidden_size": _int(row, "moe_ffn_hidden_size"),
        "shared_expert_ffn_hidden_size": _int(row, "shared_expert_ffn_hidden_size"),
        "mtp_layers": _int(row, "mtp_layers") or 0,
        "vocab_size": vocab,
        "padded_vocab_size": _int(row, "padded_vocab_size"),
        "tied_embeddings": tied if tied is not None else _default("tied_embeddings", assumed),
        "activation": activation,
        "norm": norm,
        "position_embedding": "learned" if "learned absolute position" in notes else "rope",
        **architecture_from_notes(notes, attention),
    }
    if model["mtp_layers"] and not _int(row, "mtp_layers"):
        assumed["mtp_layers"] = architecture_notes.REPEATED_MTP_REASON
    if attention == "mla":
        for column in ("q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_rope_head_dim", "v_head_dim"):
            model[column] = _int(row, column)
    return model


def _precision(row: Mapping[str, str], assumed: dict[str, str], footnote_rule: bool = True) -> dict[str, Any]:
    text = _text(row, "precision").lower() or _default("precision", assumed)
    precision: dict[str, Any] = {"compute": "fp16" if text.startswith("fp16") else "bf16"}
    if "fp8" in text:  # e.g. "bf16+fp8 (--fp8-format hybrid, --fp8-recipe tensorwise)"
        precision["fp8_linear"] = True
        if (flag := re.search(r"--fp8-recipe (\w+)", text)) and flag.group(1) in RECIPES:
            precision["linear_recipe"] = flag.group(1)
    notes = _text(row, "notes")
    items = recipe_notes.recipe_items(notes)
    # (row rule: a 25.09 "fp8 (32x32 ...)" row takes the footnote's recipe even without recipe items)
    stated = text in ("mxfp8", "nvfp4", "fp8-mx", "fp8-cs", "fp8-sc", "fp8-ds") or (
        footnote_rule and text.startswith("fp8 (32x32"))
    if "cuda_graph" in items or "fp8_recipe" in items or stated:
        recipe, reason = recipe_notes.precision_recipe(_text(row, "precision"), items, notes)
        precision.pop("fp8_linear", None)
        if recipe is not None:
            precision["linear_recipe"] = recipe
        assumed["linear_recipe"] = reason
    grads = _text(row, "grad_dtype").lower()
    if grads:
        if grads not in ("fp32", "bf16", "fp16"):
            raise ConfigError("grad_dtype", f"unknown dtype {grads!r}")
        precision["grads"] = grads
    if "bf16 moments" in _text(row, "optimizer").lower():
        precision["optimizer_states"] = "bf16"
    return precision


def _recompute(row: Mapping[str, str]) -> dict[str, Any]:
    mode = _text(row, "recompute") or "none"
    if mode not in ("none", "selective", "full"):
        raise ConfigError("recompute", f"unknown recompute {mode!r} (none, selective, full)")
    cell = _text(row, "recompute_modules")
    if cell.lower() in SAC_POLICY_CELLS:
        return {"mode": mode, "selective_ac_option": SAC_POLICY_CELLS[cell.lower()]}
    modules = [m.strip() for m in cell.split(",") if m.strip()]
    return {"mode": mode, "modules": [RECOMPUTE_MODULE_ALIASES.get(m, m) for m in modules]}


def _options(row: Mapping[str, str]) -> dict[str, Any]:
    """Options the row's notes state: ``techniques: ... torch.compile`` (torchtitan tables)."""
    techniques = next((item for item in _text(row, "notes").split("|") if "techniques:" in item), "")
    return {"torch_compile": True} if "torch.compile" in techniques else {}


def config_from_measured_row(row: Mapping[str, str], profile: str = "megatron", *,
                             recipe_splits: bool = True, row_rules: bool = True) -> dict[str, Any]:
    """Config dict (spec §3) for one measured row; ``distributed_optimizer: fsdp`` selects ``fsdp2``.

    ``recipe_splits``: the Bridge recipe families' pipeline splits where the notes state none
    (:mod:`estimator.experiments.bridge_splits`) and the documented row corrections
    (:mod:`estimator.experiments.row_corrections`); False = the row as its notes give it. ``row_rules``: a
    throughput-only row whose GA contradicts its GBS runs the GBS (:func:`row_corrections.batch_section`), and a 25.09 "fp8 (32x32 ...)"
    row takes its footnote's recipe without recipe items (:func:`_precision`), and an empty ``distributed_optimizer``
    column with the recipe item ``fsdp=true(...)`` reads as ``fsdp`` (not under ``FSDP column = 0``), and a Megatron-Bridge
    row takes what its providers and benchmark scripts set (dropout, gradient dtype, fused loss:
    :mod:`estimator.experiments.bridge_facts`); False = as before.
    Raises ``ConfigError`` whose ``field`` is the offending CSV column.
    """
    assumed: dict[str, str] = {}
    model = _model(row, assumed)
    dist = _text(row, "distributed_optimizer").lower()
    notes = row.get("notes") or ""
    if not dist and row_rules and recipe_notes.recipe_items(notes).get("fsdp", "").startswith("true") and \
            "FSDP column = 0" not in notes:  # (a table stating FSDP 0 ran DDP: its recipe item is the recipe's own)
        dist, assumed["distributed_optimizer"] = "fsdp", "fsdp: the notes' recipe item fsdp=true(...) (column empty)"
    dist_opt: bool | None
    if dist == "fsdp":
        profile, dist_opt = "fsdp2", True
    elif dist:
        dist_opt = _bool(row, "distributed_optimizer")
    else:
        dist_opt = _default("distributed_optimizer", assumed)
    sp = _bool(row, "sequence_parallel")
    flash_text = _text(row, "flash_attention").lower()
    flash = (not flash_text.startswith("no")) if flash_text else _default("flash_attention", assumed)
    vpp = _int(row, "vpp") or 1
    world = _int(row, "world_size")  # only checks dp·tp·pp·cp; not needed by the estimate
    train: dict[str, Any] = {
        "seq_length": _int(row, "seq_length", required=True),
        "micro_batch_size": _int(row, "micro_batch_size", required=True),
        "flash_attention": flash,
    }
    ga, gbs, mbs, dp = (_int(row, c) for c in ("num_micro_batches", "global_batch_size", "micro_batch_size", "dp"))
    train.update(batch_section(ga, gbs, mbs, dp, bool(_text(row, "measured_step_ms")), assumed, enabled=row_rules))
    parallel: dict[str, Any] = {
        "tp": _int(row, "tp", required=True),
        "pp": _int(row, "pp", required=True),
        "vpp": vpp,
        "dp": _int(row, "dp", required=True),
        "cp": _int(row, "cp") or 1,
        "ep": _int(row, "ep") or 1,
        "etp": _int(row, "etp"),
        "sequence_parallel": sp if sp is not None else _default("sequence_parallel", assumed),
        "schedule": "interleaved" if vpp > 1 else "1f1b",
        "distributed_optimizer": dist_opt,
    }
    model["assumed"] = assumed
    config = {
        "profile": profile,
        "model": model,
        "train": train,
        "parallel": parallel,
        "recompute": _recompute(row),
        "precision": _precision(row, assumed, row_rules),
        "hardware": {"preset": hardware_preset(_text(row, "hardware")), **({"devices": world} if world else {})},
    }
    if options := _options(row):
        config["options"] = options
    _apply_facts(row, config, bridge=row_rules)
    architecture_notes.check_hybrid_facts(row, model)
    recipe_notes.apply_recipe_items(row, config, row_rules=row_rules)
    apply_bridge_split(row, config, enabled=recipe_splits)
    apply_corrections(row, config, enabled=recipe_splits)
    framework_rules(row, config, enabled=row_rules)
    return config


# --------------------------------------------------------------------------------------------
# like-for-like comparison


def stage_for_rank(report: Any, measured_rank: str) -> Any:
    """The stage a measurement refers to: ``per_stage:i`` -> stage i, ``last_rank`` -> last stage,
    ``max_over_ranks`` / ``max_over_reported_ranks`` / unstated -> the peak stage (measured README)."""
    rank = (measured_rank or "").strip()
    if rank.startswith("per_stage:"):
        i = int(rank.split(":", 1)[1])
        if i >= len(report.stages):
            raise ValueError(f"measured_rank {rank!r} but the estimate has {len(report.stages)} stage(s)")
        return report.stages[i]
    if rank == "last_rank":
        return report.stages[-1]
    return report.stages[report.peak_stage]


def estimate_for_measurement(report: Any, measured_kind: str, measured_rank: str) -> tuple[float, str]:
    """(estimate MiB, what it is) for a measurement of ``measured_kind`` at ``measured_rank``.

    The one like-for-like mapping of the measured CSVs (used by the ``estimator.memory`` kind and
    ``estimator.experiments.measured_accuracy``); raises ValueError for an unknown kind or a missing stage.

    Like for like (measured README): ``max_allocated`` -> stage total (allocated bytes at the
    peak); ``max_reserved`` -> the stage's reserved estimate (allocated + the caching allocator's
    idle blocks, ``estimator.memory.fsdp2``; equal to the total where no term is modelled);
    ``allocated_steady`` (after the optimizer step) -> params + optimizer states + grads + the
    run-long framework allocations (``StageMemory.steady_mb``, ``estimator.memory.framework``);
    ``params_optimizer`` -> params + optimizer states + grads;
    ``activations`` -> the activations component. ``<kind>:layers`` (``measured_kind_of``, a source
    whose breakdown covers the transformer layers only) -> the layers' params + optimizer states +
    grads, without embedding and output layer.
    """
    stage = stage_for_rank(report, measured_rank)
    kind = (measured_kind or "max_allocated").strip()
    comp = stage.components
    if kind == "max_allocated":
        return stage.total_mb, f"stage {stage.stage} total"
    if kind == "max_reserved":
        return getattr(stage, "reserved_mb", stage.total_mb), f"stage {stage.stage} reserved"
    if kind in ("allocated_steady:layers", "params_optimizer:layers"):
        return stage.static_detail.total.total / BYTES_PER_MIB, f"stage {stage.stage} layers' params+optimizer_states+grads"
    if kind == "allocated_steady":
        steady = sum(comp[k] for k in ("params", "optimizer_states", "grads"))
        steady += float(sum(getattr(stage, "persistent", {}).values()))
        return steady, f"stage {stage.stage} params+optimizer_states+grads+persistent"
    if kind == "params_optimizer":
        static = sum(comp[k] for k in ("params", "optimizer_states", "grads"))
        return static, f"stage {stage.stage} params+optimizer_states+grads"
    if kind == "activations":
        return comp["activations"], f"stage {stage.stage} activations"
    raise ValueError(f"unknown measured_kind {kind!r}")
