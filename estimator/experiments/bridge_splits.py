"""Pipeline splits of the Megatron-Bridge performance recipes, for rows whose ``notes`` do not state them.

A Bridge row of ``../shared/data/measured/step_time_cases.csv`` (``source_id``
``mbridge_perf_summary_blackwell``) carries its release's recipe facts in ``notes``
(:mod:`estimator.experiments.recipe_notes`). Where those facts do not give a split that fits the
published pp·vpp — the 25.09 rows (their notes quote the perf yaml, not the split flags), the rows
whose 25.09 / 25.11 preset differs from the table — the split comes from the recipe code of the model
family, as Bridge computes it from pp and vpp (every pp/vpp that code accepts, not only these rows):

- **Llama 3.1 405B**: ``account_for_embedding_in_pipeline_split`` and
  ``account_for_loss_in_pipeline_split`` both true — NVIDIA-NeMo/Megatron-Bridge@bf71eba07b
  ``src/megatron/bridge/recipes/llama/llama31_405b.py`` (``pretrain_config`` defaults, lines 47-48,
  passed to the model provider), @7af9601c9d ``src/megatron/bridge/recipes/llama/llama3.py`` (the 405B
  recipe's dict, lines 413-414). 126 + 2 = 128 slots over pp·vpp.
- **Qwen3 235B-A22B**: both true — @bf71eba07b ``src/megatron/bridge/recipes/qwen/qwen3_235b_a22b.py``
  lines 70-71, @7af9601c9d ``src/megatron/bridge/recipes/qwen/qwen3_moe.py`` lines 160-161. 94 + 2 = 96.
- **DeepSeek-V3**: an explicit ``pipeline_model_parallel_layout``, the same list for every (pp, vp)
  with the same number of virtual stages — @bf71eba07b / @7af9601c9d / @21b02e0cfb
  ``src/megatron/bridge/recipes/deepseek/deepseek_v3.py`` ``map_pp_vp_to_layout`` / ``layout_map``:
  4 stages (4,1): ``E t*16 | t*16 | t*16 | t*13 [m] L``; 8 stages (8,1), (4,2): ``E t*8 | (t*8|)*6 |
  t*5 [m] L``; 16 stages (16,1), (8,2), (4,4): ``E t*4 | (t*4|)*14 | t [m] L``; 32 stages: the perf
  scripts' explicit ``"Et|(tt|)*30mL"`` (@bf71eba07b ``scripts/performance/run_script.py`` for pp 4 ×
  vp 8 and pp 8 × vp 4, @7af9601c9d ``scripts/performance/configs/deepseek/deepseek_llm_pretrain.py``
  ``deepseek_v3_h100_config``, pp 8 × vp 4). **Kimi K2** (61 layers, no MTP): the same 4-, 8- and 16-stage
  lists — @21b02e0cfb / @0fbfe7d3e9 ``src/megatron/bridge/recipes/kimi/kimi_k2.py`` ``map_pp_vp_to_layout``
  ((4,1); (8,1), (4,2); (16,1), (8,2), (4,4), (2,8)). The MTP symbols follow the model: the recipe builds the
  last stage as ``["mtp"] * mtp_num_layers + ["loss"]`` (``last_layer``), so a row without MTP
  (25.11 "w/o MTP") has no ``m``. A stage count outside this table is left unset (the row is refused
  with the even-split rule's ConfigError, naming the fields that would state a split).

:func:`apply_bridge_split` sets these in a row's config (cited in ``model.source_facts`` and, where
the published run's recipe differs from the preset, recorded in ``model.assumed``); ``enabled=False``
is the off-switch (the config is left exactly as the notes made it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from estimator.inputs.pipeline_split import parse_layout

BRIDGE_SOURCE = "mbridge_perf_summary_blackwell"
#: source ids of Megatron-Bridge performance tables (every hardware and release: the recipe families' splits are
#: Bridge's, not one table's)
BRIDGE_PREFIX = "mbridge_"
_BRIDGE = "NVIDIA-NeMo/Megatron-Bridge"

#: facts of every Megatron-Bridge source (``mbridge_`` ids; :data:`estimator.experiments.measured.FAMILY_FACTS`):
#: its FSDP rows run Megatron-FSDP, whose parameters and gradients are views of the bucket buffers
FSDP_VIEWS = ("NVIDIA/Megatron-LM@d98e8a64dd megatron/core/distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py: "
              "each parameter's data is get_item_from_bucket(bucket, item_id).view(p.shape) and each gradient a view "
              "of the gradient bucket (no FSDP2 copy-out or copy-in); Bridge's fsdp=true selects Megatron-FSDP")
BRIDGE_FACTS: dict[str, tuple[Any, str]] = {"parallel.fsdp_implementation": ("megatron", FSDP_VIEWS)}
_DSV3 = f"{_BRIDGE}@bf71eba07b,7af9601c9d,21b02e0cfb src/megatron/bridge/recipes/deepseek/deepseek_v3.py layout map"
_DSV3_32 = (f"{_BRIDGE}@bf71eba07b scripts/performance/run_script.py and @7af9601c9d "
            "scripts/performance/configs/deepseek/deepseek_llm_pretrain.py: layout=\"Et|(tt|)*30mL\"")


@dataclass(frozen=True)
class FamilySplit:
    """How a Bridge recipe family splits its decoder layers: accounted embedding + loss slots, or an
    explicit layout per number of virtual stages (decoder layers per stage; E first, [m] L last)."""

    names: tuple[str, ...]
    accounted: bool
    layouts: Mapping[int, tuple[int, ...]]
    citation: str


def _stages(first: int, middle: int, count: int, last: int) -> tuple[int, ...]:
    return (first,) + (middle,) * count + (last,)


#: recipe families by the lower-case start of ``model_name``; see the module docstring for the sources
FAMILIES: tuple[FamilySplit, ...] = (
    FamilySplit(("llama3.1 405b",), True, {},
                f"{_BRIDGE}@bf71eba07b src/megatron/bridge/recipes/llama/llama31_405b.py pretrain_config defaults "
                "account_for_embedding_in_pipeline_split=True, account_for_loss_in_pipeline_split=True "
                "(@7af9601c9d recipes/llama/llama3.py: the same for the 405B recipe)"),
    FamilySplit(("qwen3 235b-a22b",), True, {},
                f"{_BRIDGE}@bf71eba07b src/megatron/bridge/recipes/qwen/qwen3_235b_a22b.py: "
                "account_for_embedding_in_pipeline_split=True, account_for_loss_in_pipeline_split=True "
                "(@7af9601c9d recipes/qwen/qwen3_moe.py: the same for the 235B recipe)"),
    FamilySplit(("deepseek-v3",), False,
                {4: (16, 16, 16, 13), 8: _stages(8, 8, 6, 5), 16: _stages(4, 4, 14, 1), 32: _stages(1, 2, 30, 0)},
                _DSV3),
    FamilySplit(("kimi k2",), False, {4: (16, 16, 16, 13), 8: _stages(8, 8, 6, 5), 16: _stages(4, 4, 14, 1)},
                f"{_BRIDGE}@21b02e0cfb,0fbfe7d3e9 src/megatron/bridge/recipes/kimi/kimi_k2.py map_pp_vp_to_layout"),
)


def family_of(model_name: str) -> FamilySplit | None:
    """The recipe family of a Bridge row's ``model_name`` (e.g. ``DeepSeek-V3 (w/o MTP)``), or None."""
    low = model_name.strip().lower()
    return next((f for f in FAMILIES if low.startswith(f.names)), None)


def layout_string(decoder_per_stage: tuple[int, ...], mtp_layers: int) -> str:
    """Megatron layout text of a per-stage decoder count: ``E`` on the first stage, ``m``·mtp and ``L``
    after the last stage's decoder layers (``estimator.inputs.pipeline_split`` grammar)."""
    parts = ["t" * n for n in decoder_per_stage]
    parts[0] = "E" + parts[0]
    parts[-1] += "m" * mtp_layers + "L"
    return "|".join(parts)


def _has_split(parallel: Mapping[str, Any]) -> bool:
    return bool(parallel.get("pipeline_layout") or parallel.get("layers_per_stage")
                or parallel.get("account_for_embedding_in_pipeline_split")
                or parallel.get("account_for_loss_in_pipeline_split")
                or parallel.get("decoder_first_pipeline_num_layers") is not None
                or parallel.get("decoder_last_pipeline_num_layers") is not None)


def _recipe_mtp(row: Mapping[str, str], model: dict[str, Any]) -> int:
    """MTP depth: the row's cell, else what the config holds, else ``mtp_num_layers=N`` in the notes
    (the 25.09 rows state the base recipe's value inside a run-script item)."""
    if (row.get("mtp_layers") or "").strip() or model.get("mtp_layers"):
        return int(model.get("mtp_layers") or 0)
    found = re.search(r"\bmtp_num_layers=(\d+)", row.get("notes") or "")
    if found:
        model["mtp_layers"] = int(found.group(1))
        model.setdefault("source_facts", {})["model.mtp_layers"] = f"notes: mtp_num_layers={found.group(1)}"
    return int(model.get("mtp_layers") or 0)


def apply_bridge_split(row: Mapping[str, str], config: dict[str, Any], *, enabled: bool = True) -> None:
    """Set the family's split in ``config`` when the row is a Bridge row (a ``mbridge_`` source: any hardware,
    any release) with pp > 1 whose notes gave none."""
    parallel, model = config["parallel"], config["model"]
    family = family_of(row.get("model_name") or "")
    if not enabled or not (row.get("source_id") or "").startswith(BRIDGE_PREFIX) or family is None or \
            parallel["pp"] < 2:
        return
    if _has_split(parallel):
        return
    cited = model.setdefault("source_facts", {})
    if family.accounted:
        for key in ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"):
            parallel[key] = True
            cited[f"parallel.{key}"] = family.citation
        return
    stages = parallel["pp"] * parallel["vpp"]
    per_stage = family.layouts.get(stages)
    if per_stage is None:
        return
    layout = layout_string(per_stage, _recipe_mtp(row, model))
    parse_layout(layout)  # well formed by construction; the config's own checks judge it against pp/vpp
    parallel["pipeline_layout"] = layout
    cited["parallel.pipeline_layout"] = f"{_DSV3_32 if stages == 32 else family.citation} ({stages} virtual stages)"
    notes = row.get("notes") or ""
    if "recipe layout matches table" not in notes and "entries matching this layout" not in notes:
        model.setdefault("assumed", {})["pipeline_layout"] = (
            "the published layout is not the release's recipe preset; the family's recipe layout for "
            f"{stages} virtual stages is assumed (Bridge uses one layout per stage count)")
