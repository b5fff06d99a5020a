"""Recipe facts of a published row: the ``name=value`` items its notes give after ``recipe`` (the
Megatron-Bridge rows of ``../shared/data/measured/``, whose README lists them: overlap switches,
pipeline-split flags, etp, MTP depth as each release's pinned recipe code sets them), turned into the
config fields they state. Used by :func:`estimator.experiments.measured.config_from_measured_row`; a
CSV cell that states a value wins over the notes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from estimator.config.errors import ConfigError
from estimator.inputs import pipeline_split


def _text(row: Mapping[str, str], column: str) -> str:
    return (row.get(column) or "").strip()


#: overlap switches a row's ``recipe:`` notes state (Megatron-Bridge names) -> the ``parallel`` switch
#: (``estimator.inputs.profiles.OVERLAP_FLAGS``); Bridge's ``moe_a2a_overlap`` sets Megatron-Core's
#: ``overlap_moe_expert_parallel_comm`` (Bridge ``training/comm_overlap.py``)
RECIPE_OVERLAP_SWITCHES = {
    "overlap_grad_reduce": "overlap_grad_reduce",
    "overlap_param_gather": "overlap_param_gather",
    "tp_comm_overlap": "tp_comm_overlap",
    "moe_shared_expert_overlap": "moe_shared_expert_overlap",
    "moe_a2a_overlap": "overlap_moe_expert_parallel_comm",
}


def recipe_items(row: Mapping[str, str]) -> dict[str, str]:
    """``name=value`` items of a row's notes after ``recipe`` (the recipe facts of the Megatron-Bridge
    rows, ``../shared/data/measured/README.md``); a name like ``pp_layout(list, 16 stages)`` is keyed by
    its first word."""
    notes = _text(row, "notes")
    if "recipe" not in notes:
        return {}
    out: dict[str, str] = {}
    for item in notes.split("recipe", 1)[1].split(" | "):  # (a layout string holds '|' without spaces)
        name, sep, value = item.strip().partition("=")
        words = name.split("(")[0].split()
        key = words[-1] if words else ""
        if sep and key and key.replace("_", "").isalnum():
            out.setdefault(key, value.strip())
    return out


def recipe_split(row: Mapping[str, str], parallel: Mapping[str, Any], mtp_layers: int = 0) -> dict[str, Any]:
    """Pipeline split and expert-TP facts a row's recipe states and its cells leave empty: Megatron's
    ``account_for_embedding/loss_in_pipeline_split``, a ``pp_layout`` string (kept only when its
    virtual stages are the row's pp·vpp and its ``m`` count the row's MTP depth: otherwise the
    published run used another layout, which the notes do not state) and ``etp`` (an integer; the CSV
    ``etp`` cell wins)."""
    items = recipe_items(row)
    out: dict[str, Any] = {}
    for name in ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"):
        if items.get(name, "").startswith("true"):
            out[name] = True
    layout = items.get("pp_layout", "").strip('"')
    if layout and "account_for_embedding_in_pipeline_split" not in out:
        try:
            stages = len(pipeline_split.parse_layout(layout))
            mtp = pipeline_split.expand_layout(layout).count("m")
        except ConfigError:
            stages = mtp = 0
        if stages == parallel["pp"] * parallel["vpp"] and mtp == mtp_layers:
            out["pipeline_layout"] = layout
    if parallel.get("etp") is None and items.get("etp", "").isdigit():
        out["etp"] = int(items["etp"])
    return out


def recipe_overlap(row: Mapping[str, str], parallel: Mapping[str, Any], profile: str,
                   shared_experts: bool) -> dict[str, bool]:
    """The Megatron overlap switches a row's ``recipe:`` notes state as ``name=true`` / ``name=false``
    (``unset`` and anything else: the framework's default). A switch the run could not use is left
    out, as Megatron / Bridge drop it: TP comm overlap without tp > 1 and sequence parallelism (Bridge
    ``comm_overlap.py`` "disables TP overlap when TP<2"), the EP overlaps without ep > 1 or shared
    experts, the parameter all-gather overlap without the distributed optimizer or the gradient
    overlap; none under the ``fsdp2`` profile (its own prefetch applies)."""
    if profile != "megatron":
        return {}
    out: dict[str, bool] = {}
    for name, value in recipe_items(row).items():
        state = value.split("(")[0].split("[")[0].strip()
        if name in RECIPE_OVERLAP_SWITCHES and state in ("true", "false") and "[inactive" not in value:
            out[RECIPE_OVERLAP_SWITCHES[name]] = state == "true"
    usable = {
        "tp_comm_overlap": parallel["tp"] > 1 and bool(parallel["sequence_parallel"]),
        "overlap_moe_expert_parallel_comm": parallel["ep"] > 1,
        "moe_shared_expert_overlap": parallel["ep"] > 1 and shared_experts,
        "overlap_param_gather": bool(parallel["distributed_optimizer"]) and out.get("overlap_grad_reduce", False),
    }
    return {k: v for k, v in out.items() if usable.get(k, True) or not v}
