"""Recipe facts of a measured row (its ``notes``' ``key=value`` items) as config values, with citations.

The Megatron-Bridge performance-summary rows (``source_id`` ``mbridge_perf_summary_blackwell``,
``../shared/data/measured/README.md``) carry what the release's pinned recipe code sets after
``recipe`` in ``notes``: items ``key=value`` separated by `` | `` (labelled lists ``label: a=1, b=2`` and
namespaced keys ``ddp.x=...`` of older releases too; ``unset`` = the recipe leaves
Megatron's default). :func:`recipe_items` reads them; :func:`apply_recipe_items` turns those the
estimator models into config values (cited in ``model.source_facts`` as ``notes: key=value``) and
lists the others in ``model.assumed['recipe_items']`` (recorded, not priced: overlap switches are
the overlap model's, offloading flags have no term; ``dispatcher=flex(...)`` sets
``parallel.moe_token_dispatcher``). :func:`precision_recipe` maps a
row's ``precision`` text (and its ``fp8_recipe`` / ``fp4`` items) to a linear recipe
(:mod:`estimator.inputs.recipes`); :func:`throughput_step_ms` derives the step time of a
throughput-only row.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from estimator.inputs.profiles import tp_comm_overlap_possible

#: a ``key=value`` item of the notes
_ITEM = re.compile(r"^([a-z][a-z0-9_.]*)(?:\([^)]*\))?=(.*)$")  # e.g. pp_layout(list, 16 stages)="..."
#: the items priced by the estimator (the rest are listed as recorded, not priced)
PRICED_ITEMS = frozenset({"overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
                          "moe_shared_expert_overlap", "moe_a2a_overlap", "fp8_recipe", "fp4", "cuda_graph", "recompute", "etp", "sequence_parallel",
                          "distributed_optimizer", "pp_layout", "account_for_embedding_in_pipeline_split",
                          "account_for_loss_in_pipeline_split", "mtp_num_layers", "dispatcher", "te_op_fuser",
                          "fp8_dot_product_attention", "recompute_modules", "first_last_layers_bf16",
                          "cpu_offloading_num_layers", "recompute_method", "recompute_num_layers", "optimizer",
                          "cp_comm_type"})
#: overlap switches of the recipe -> the framework flags (estimator.inputs.profiles.OVERLAP_FLAGS); a switch the
#: notes mark ``[inactive: ...]`` (Bridge turns TP overlap off below TP 2) is off
OVERLAP_ITEMS = {
    "overlap_grad_reduce": "parallel.overlap_grad_reduce", "overlap_param_gather": "parallel.overlap_param_gather",
    "tp_comm_overlap": "parallel.tp_comm_overlap", "moe_shared_expert_overlap": "parallel.moe_shared_expert_overlap",
    "moe_a2a_overlap": "parallel.overlap_moe_expert_parallel_comm",
}
#: a sink-attention (GPT-OSS) row under CP without a cp_comm_type item: the recipe's own setting
_GPT_OSS_CP = ("a2a: NVIDIA-NeMo/Megatron-Bridge@067f987df0 src/megatron/bridge/recipes/gpt_oss/h100/gpt_oss.py sets "
               "cfg.model.cp_comm_type = 'a2a' ('When CP>1 is used ..., a2a is required for TE attention backends with "
               "learnable softmax') in the pretrain recipe its perf recipes start from "
               "(src/megatron/bridge/perf_recipes/gpt_oss/common.py: gpt_oss_120b_pretrain_config)")
#: items that describe the row, not the run (never listed)
_DESCRIPTIVE = frozenset({"recipe_files", "tokens_per_s_per_gpu"})


def recipe_items(notes: str) -> dict[str, str]:
    """The ``key=value`` items of ``notes`` (first value of a repeated key wins).

    A segment is one item, or a labelled list ``label: a=1, b=[x,y], c=true (comment)`` (the base-recipe and
    run-script forms of older releases: ``base recipe (...): tp_comm_overlap=false``, ``run_script.py ...
    branch: moe_a2a_overlap=false, recompute_modules=[...]``), whose items follow the segment's own. A
    namespaced key (``ddp.overlap_grad_reduce``, ``comm_overlap.overlap_grad_reduce``) is also read under its
    last name unless that name has its own item."""
    out: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for raw in notes.split(" | "):
        for part in _segment_items(raw.strip()):
            match = _ITEM.match(part)
            if not match:
                continue
            key, value = match.group(1), match.group(2).strip()
            out.setdefault(key, value)
            if "." in key:
                aliases.setdefault(key.rsplit(".", 1)[1], value)
    for key, value in aliases.items():
        out.setdefault(key, value)
    return out


def _segment_items(segment: str) -> list[str]:
    """``segment`` itself when it is an item, else the comma-separated items after its label's ``": "``
    (commas inside brackets or parentheses stay in their item)."""
    if _ITEM.match(segment) or ": " not in segment:
        return [segment]
    parts, depth, start = [], 0, 0
    tail = segment.split(": ", 1)[1]
    for i, ch in enumerate(tail):
        depth += (ch in "[(") - (ch in "])")
        if ch == "," and depth == 0:
            parts.append(tail[start:i].strip())
            start = i + 1
    parts.append(tail[start:].strip())
    return parts


def precision_recipe(text: str, items: Mapping[str, str], notes: str = "") -> tuple[str | None, str]:
    """(linear recipe or None for BF16, the reason) of a row's ``precision`` text, recipe items and notes."""
    low = text.lower().strip()
    fp8_item = items.get("fp8_recipe", "")
    if low.startswith("nvfp4") or items.get("fp4", "").startswith("e2m1"):
        return "nvfp4", "precision nvfp4 (recipe item fp4=e2m1(fp4_recipe=nvfp4))"
    if low in ("mxfp8", "fp8-mx") or fp8_item.startswith("mxfp8"):
        return "mxfp8", f"precision {low or 'unstated'}: MXFP8 block scaling (recipe item fp8_recipe={fp8_item or 'unset'})"
    if low == "fp8-sc" or fp8_item.startswith("blockwise"):
        return "blockwise", (f"precision {low or 'unstated'}: FP8 blockwise (subchannel) scaling, 1x128 activation and "
                             f"128x128 weight blocks (Bridge compute_dtype fp8_sc; fp8_recipe={fp8_item or 'unset'})")
    if low == "fp8-ds" or fp8_item.startswith("delayed"):
        return "delayed", f"precision {low or 'unstated'}: FP8 delayed scaling (fp8_recipe={fp8_item or 'unset'})"
    if low == "fp8-cs" or fp8_item.startswith("tensorwise"):
        return "tensorwise", f"precision {low}: FP8 current (tensorwise) scaling (fp8_recipe={fp8_item or 'unset'})"
    if low.startswith("fp8 (32x32"):
        return "mxfp8", ("25.09 table footnote: parenthesized values use 32x32 quantization blocks for weights and "
                         "activations; priced as MXFP8 (32-element blocks, the nearest recipe): assumption")
    if not low and "different quantization granularity" in notes:
        return "tensorwise", ("25.09 row without a precision column: its footnote says the parenthesized values "
                              "differ in quantization granularity (32x32), so these are FP8 too; per-tensor current "
                              "scaling assumed")
    if low.startswith("fp8") or "fp8" in low:
        return "tensorwise", f"precision {low}: FP8, recipe not stated: per-tensor current scaling assumed"
    return None, f"precision {low or 'unstated'}: BF16 linear layers"


def _recompute(value: str, modules: str = "", method: str = "", empty_list_rule: bool = True) -> dict[str, Any] | None:
    """``recompute=selective(a,b)`` / ``selective(modules=[])`` / ``full(...)`` / ``none`` as a section; a
    ``selective`` without its own list (``selective (comment)``) takes ``modules`` (a ``recompute_modules=[a,b]``
    item) when given, else Megatron's default list. An explicit empty list (``selective(modules=[])``, a recipe's
    ``recompute_modules = []``) recomputes nothing: Megatron-Core fills its default ``["core_attn"]`` only when
    ``recompute_modules is None`` (NVIDIA/Megatron-LM@d98e8a64dd ``transformer_config.py`` ``__post_init__``), and
    Bridge's ``_set_recompute_overrides`` sets ``selective`` with the list as given (@fcbb603110
    ``scripts/performance/utils/overrides.py``); ``empty_list_rule=False`` reads it as the default list (as before).
    ``full`` reads Megatron's recompute method and layer count from its parentheses or from ``method`` (the
    ``recompute_method=`` / ``recompute_num_layers=`` items):
    ``full(method=block,num_layers=5)`` re-runs the first 5 layers of each model chunk."""
    low = value.lower()
    if low.startswith("selective"):
        inner = low[len("selective"):]
        inner = inner.strip("()") if inner.startswith("(") else modules.lower() if modules.startswith("[") else ""
        names = [n.strip() for n in inner.replace("modules=", "").strip("[]").split(",") if n.strip()]
        if not names and empty_list_rule and "[]" in inner:
            return {"mode": "none", "modules": []}  # an explicit empty list: nothing recomputed
        return {"mode": "selective", "modules": names or ["core_attn"]}  # Megatron's default module list
    if low.startswith("full"):
        section: dict[str, Any] = {"mode": "full", "modules": []}
        text = f"{low} {method.lower()}"
        if (kind := re.search(r"\b(block|uniform)\b", text)) is not None:
            section["method"] = kind.group(1)
        if (count := re.search(r"num_layers\s*[=:]\s*(\d+)", text)) is not None:
            section["num_layers"] = int(count.group(1))
        return section
    if low.startswith("none") or low == "unset":
        return {"mode": "none", "modules": []}
    return None


def _cuda_graph(value: str) -> str:
    low = value.lower()
    if "full_iteration" in low:
        return "full_iteration"
    if low.startswith(("transformer_engine", "local", "true")):
        return "layers"
    return "none"


def _flag(value: str) -> bool | None:
    low = value.lower()
    return True if low.startswith("true") else False if low.startswith("false") else None


def _set(config: dict[str, Any], path: str, value: Any, item: str, cited: dict[str, str]) -> None:
    section, key = path.split(".", 1)
    config.setdefault(section, {})[key] = value
    cited[path] = f"notes: {item}"


#: a row that names LoRA in its case id, model name or notes (``_LoRA``, ``peft=lora``; not MLA's ``q_lora_rank``,
#: ``kv_lora 512``)
_LORA = re.compile(r"(?<![a-z])(?<!q_)(?<!kv_)lora(?![a-z]|_rank)", re.IGNORECASE)
#: the adapter rank a LoRA row states (``dim=16``, ``rank 16``, ``r=16`` after the word LoRA, within one item)
_LORA_RANK = re.compile(r"lora[^|]*?\b(?:dim|rank|r)\s*[=: ]\s*(\d+)", re.IGNORECASE)
#: the targeted linears a LoRA row states (``target_modules=[linear_qkv, linear_proj]``)
_LORA_TARGETS = re.compile(r"target_modules\s*[=:]\s*\[([^\]]*)\]", re.IGNORECASE)
#: where the adapter defaults come from (the config's ``adapter`` section defaults are these)
_BRIDGE_LORA = ("Megatron-Bridge peft.LoRA defaults: dim 32 on linear_qkv, linear_proj, linear_fc1, linear_fc2 "
                "(estimator.config.sections.AdapterConfig)")


def apply_adapter(row: Mapping[str, str], config: dict[str, Any]) -> None:
    """A row that names LoRA (a Bridge LoRA fine-tuning row, a PEFT run) trains adapters beside a frozen base:
    ``adapter: {kind: lora}`` with the rank and target modules the row states, else Bridge's defaults (cited in
    ``model.source_facts``); never priced as full training."""
    text = " ".join(row.get(k) or "" for k in ("case_id", "model_name", "notes"))
    if not _LORA.search(text):
        return
    adapter: dict[str, Any] = {"kind": "lora"}
    cited = config["model"].setdefault("source_facts", {})
    if (rank := _LORA_RANK.search(text)) is not None:
        adapter["rank"] = int(rank.group(1))
    if (targets := _LORA_TARGETS.search(text)) is not None:
        adapter["target_modules"] = [t.strip(" '\"") for t in targets.group(1).split(",") if t.strip(" '\"")]
    config["adapter"] = adapter
    cited["adapter"] = "the row names LoRA" + ("" if "rank" in adapter and "target_modules" in adapter else
                                                 f"; not stated: {_BRIDGE_LORA}")


#: torchtitan's async TP named among a row's techniques (``techniques: FSDP2, TP, torch.compile, AsyncTP``)
_ASYNC_TP = re.compile(r"\basync[ -]?tp\b|async tensor parallel", re.IGNORECASE)


def apply_techniques(row: Mapping[str, str], config: dict[str, Any]) -> None:
    """The torchtitan benchmark's ``techniques:`` item: ``AsyncTP`` (torchtitan
    ``parallelism.enable_async_tensor_parallel``, with torch.compile) on a TP > 1 row under the fsdp2 profile.
    (``torch.compile`` itself: :func:`estimator.experiments.measured._options`.)"""
    techniques = next((item for item in (row.get("notes") or "").split("|") if "techniques:" in item), "")
    if _ASYNC_TP.search(techniques) and config["profile"] == "fsdp2" and config["parallel"].get("tp", 1) > 1:
        _set(config, "parallel.enable_async_tensor_parallel", True, "techniques: AsyncTP",
             config["model"].setdefault("source_facts", {}))


def apply_recipe_items(row: Mapping[str, str], config: dict[str, Any], row_rules: bool = True) -> None:
    """Set the config values the row's recipe items state (see the module docstring), its adapters
    (:func:`apply_adapter`) and its techniques (:func:`apply_techniques`); ``row_rules=False`` reads an explicit empty
    selective-recompute list as Megatron's default list (:func:`_recompute`, the model before)."""
    apply_adapter(row, config)
    apply_techniques(row, config)
    items = recipe_items(row.get("notes") or "")
    if not PRICED_ITEMS.intersection(items):
        return  # not a row with recipe facts
    cited: dict[str, str] = dict(config["model"].get("source_facts") or {})
    overlaps = OVERLAP_ITEMS if config["profile"] == "megatron" else {}  # FSDP rows: the profile's own prefetch
    for item, path in overlaps.items():
        value = items.get(item, "")
        if (flag := _flag(value)) is not None:
            _set(config, path, flag and "[inactive" not in value, f"{item}={value[:60]}", cited)
    if "param_gather=true" in items.get("fp8_recipe", "") + items.get("fp4", ""):
        _set(config, "precision.fp8_param_gather", True, "fp8_param_gather=true", cited)
    if _flag(items.get("fp8_dot_product_attention", "")):  # Megatron-Core --fp8-dot-product-attention
        _set(config, "precision.fp8_attention", True, "fp8_dot_product_attention=true", cited)
    ends = re.match(r"true\(start=(\d+),\s*end=(\d+)\)", items.get("first_last_layers_bf16", ""))
    if ends:  # Megatron --first-last-layers-bf16 with --num-layers-at-start/end-in-bf16
        _set(config, "precision.bf16_layers_at_ends", [int(ends.group(1)), int(ends.group(2))],
             f"first_last_layers_bf16={items['first_last_layers_bf16']}", cited)
    offload = items.get("cpu_offloading_num_layers", "")
    if offload.isdigit() and int(offload) and config["parallel"].get("pp", 1) == 1 and \
            config.get("recompute", {}).get("mode", "none") == "none":  # (Megatron: no PP, no recompute)
        _set(config, "train.cpu_offloading_num_layers", int(offload), f"cpu_offloading_num_layers={offload}", cited)
    elif offload.isdigit() and int(offload):  # the recipe's own layout (the published one differs)
        config["model"].setdefault("assumed", {})["cpu_offloading_num_layers"] = (
            f"recipe item cpu_offloading_num_layers={offload} not applied: Megatron-Core refuses CPU offloading with "
            "pipeline parallelism or recompute, so the published layout ran without it")
    if (cp_type := items.get("cp_comm_type", "").strip().lower()) not in ("", "unset", "none"):
        # Megatron-Core cp_comm_type (p2p ring, a2a Ulysses, allgather); 'a2a+p2p' is refused by the schema,
        # naming parallel.cp_comm_type: its exchange is not modelled
        _set(config, "parallel.cp_comm_type", cp_type, f"cp_comm_type={items['cp_comm_type']}", cited)
    elif config["model"].get("attention_sinks") and config["parallel"].get("cp", 1) > 1:
        config["parallel"]["cp_comm_type"] = "a2a"
        cited["parallel.cp_comm_type"] = _GPT_OSS_CP
    if (opt := items.get("optimizer", "").strip().lower()) in ("muon", "dist_muon"):  # Megatron --optimizer
        _set(config, "train.optimizer", opt, f"optimizer={opt}", cited)
    if (graph := items.get("cuda_graph")) is not None:
        _set(config, "train.cuda_graph", _cuda_graph(graph), f"cuda_graph={graph}", cited)
    layers = items.get("recompute_num_layers", "").strip()
    if layers.isdigit() and items.get("recompute", "unset").lower().startswith(("unset", "none")):
        # Bridge scripts/performance/utils/overrides.py _set_recompute_overrides: a layer count alone sets
        # recompute_granularity full, recompute_method block
        items = {**items, "recompute": f"full(method=block,num_layers={layers})"}
    if (rec := items.get("recompute")) is not None and \
            (section := _recompute(rec, items.get("recompute_modules", ""), " ".join(
                f"{k}={items[k]}" for k in ("recompute_method", "recompute_num_layers") if k in items),
                row_rules)) is not None:
        config["recompute"] = section
        cited["recompute"] = f"notes: recompute={rec}" + "".join(
            f", {k}={items[k]}" for k in ("recompute_modules", "recompute_method", "recompute_num_layers") if k in items)
    if (dist := _flag(items.get("distributed_optimizer", ""))) is not None and config["profile"] != "fsdp2":
        _set(config, "parallel.distributed_optimizer", dist, f"distributed_optimizer={items['distributed_optimizer']}",
             cited)
    if (etp := items.get("etp", "")).isdigit() and config["model"].get("num_experts", 0) > 1:
        _set(config, "parallel.etp", int(etp), f"etp={etp}", cited)
    for item in ("sequence_parallel", "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"):
        if (flag := _flag(items.get(item, ""))) is not None:
            _set(config, f"parallel.{item}", flag and (item != "sequence_parallel" or config["parallel"]["tp"] > 1),
                 f"{item}={items[item]}", cited)
    par = config["parallel"]
    if par.get("tp_comm_overlap") and not tp_comm_overlap_possible(par.get("tp", 1), bool(par.get("sequence_parallel"))):
        _set(config, "parallel.tp_comm_overlap", False, "tp_comm_overlap=true, inactive: Megatron-Bridge "
             "comm_overlap.py disables TP overlap at TP < 2 and without sequence parallelism", cited)
    if config["profile"] == "megatron" and (items.get("comm_overlap", "").startswith("None")
                                            or "no CommOverlapConfig" in (row.get("notes") or "")):
        _set(config, "parallel.overlap_p2p_comm", False, "comm_overlap=None (no CommOverlapConfig): Megatron-Core's "
             "ModelParallelConfig default overlap_p2p_comm=False, which only CommOverlapConfig turns on (vp > 1)", cited)
    matches = "recipe layout matches table" in (row.get("notes") or "")  # else the items describe the preset
    if (layout := items.get("pp_layout", "").strip('"')) and config["parallel"]["pp"] > 1 and matches:
        _set(config, "parallel.pipeline_layout", layout, f"pp_layout={items['pp_layout']}", cited)
        for item in ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"):
            config["parallel"].pop(item, None)  # a layout places E and L itself
    if (dispatcher := items.get("dispatcher", "")).startswith(("flex", "alltoall")) and \
            config["model"].get("num_experts", 0) > 1:
        _set(config, "parallel.moe_token_dispatcher", "flex" if dispatcher.startswith("flex") else "alltoall",
             f"dispatcher={dispatcher[:60]}", cited)
    if _flag(items.get("te_op_fuser", "")) and config["model"].get("num_experts", 0) > 1:
        _set(config, "train.te_op_fuser", True, f"te_op_fuser={items['te_op_fuser']}", cited)
    mtp = items.get("mtp_num_layers", "")
    if mtp[:1].isdigit() and not (row.get("mtp_layers") or "").strip():
        _set(config, "model.mtp_layers", int(mtp[0]), f"mtp_num_layers={mtp}", cited)
    config["model"]["source_facts"] = cited
    unpriced = sorted(k for k in items if k not in PRICED_ITEMS and k not in _DESCRIPTIVE and items[k] != "unset"
                      and k.rsplit(".", 1)[-1] not in PRICED_ITEMS)  # (a namespaced key read under its name)
    if unpriced:
        config["model"].setdefault("assumed", {})["recipe_items"] = (
            "recorded, not priced by this model: " + ", ".join(f"{k}={items[k][:40]}" for k in unpriced))


def throughput_step_ms(row: Mapping[str, str]) -> float | None:
    """Step time of a throughput-only row: ``GBS · seq / (tokens/s/GPU · GPUs)`` in ms (the shared
    README's definition for ``mbridge_perf_summary_blackwell``; also the torchtitan TPS rows), from the
    notes' ``tokens_per_s_per_gpu=``; None when a value is missing."""
    match = re.search(r"tokens_per_s_per_gpu=([0-9.]+)", row.get("notes") or "")
    try:
        gbs, seq, world = (float(row.get(c) or "nan") for c in ("global_batch_size", "seq_length", "world_size"))
    except ValueError:
        return None
    if match is None or not all(v > 0 for v in (gbs, seq, world)):
        return None
    return gbs * seq / (float(match.group(1)) * world) * 1000.0
