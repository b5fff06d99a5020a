"""Explicit corrections of measured rows whose published configuration cannot be what ran, the GA rule and the
framework rules (what a framework always does with a layout, :func:`framework_rules`).

The shared CSVs are transcribed as published and read-only. Where a row's own columns contradict a
rule the framework enforces (the run could not have started with them), the value the estimate uses
is corrected *here*, by case id, with the rule, the published facts that fix the value and the
evidence for the replacement; :func:`apply_corrections` records each one in ``model.assumed``
(``correction <path>``) so every report of the row shows it. ``enabled=False`` is the off-switch
(the row as published; the estimator then refuses it with the framework's rule).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from estimator.importers.torchtitan import TITAN_EAGER, TITAN_SP

#: the day torchtitan's blocks moved from its own RMSNorm to ``nn.RMSNorm`` (pytorch/torchtitan 3b39d7ab0, #985)
TITAN_NATIVE_RMSNORM = "2025-03-19"

_DSV3_ALT = "mbridge_perf_summary_blackwell__25.09_DeepSeekV3_tokendrop_DGX-GB200_alt32x32"

#: case_id -> {config path: (value used, why)}
CORRECTIONS: dict[str, dict[str, tuple[Any, str]]] = {
    _DSV3_ALT: {
        "parallel.ep": (32, (
            "published EP 64 is impossible with the row's own PP 8 on 256 GPUs: Megatron-Core "
            "(megatron/core/parallel_state.py initialize_model_parallel) raises 'world_size ... is not "
            "divisible by expert_tensor_model_pipeline_parallel size' unless etp·ep·pp divides the world "
            "(1·64·8 = 512 > 256); NVIDIA-NeMo/Megatron-Bridge@067f987df0 docs/performance-summary-archive.md "
            "line 610 prints PP '4 (8)', VP '4 (2)', GA '32 (64)' and a single EP '64' shared by both "
            "values, and GA 64 = GBS 2048 / (MBS 1 · DP 32) confirms PP 8 (DP = 256/8); EP is not "
            "published for the parenthesized run, so the largest EP Megatron-Core accepts there (32, the "
            "whole expert grid of a stage) is used: the value the next release (25.11) published for "
            "DeepSeek-V3 on 256 GB200 at PP 8 (line 569: FP8-MX, PP 8, VP 4, EP 32); assumption")),
    },
}


def apply_corrections(row: Mapping[str, str], config: dict[str, Any], *, enabled: bool = True) -> None:
    """Replace the corrected values of ``row`` in ``config`` and record why in ``model.assumed``."""
    fixes = CORRECTIONS.get((row.get("case_id") or "").strip(), {}) if enabled else {}
    for path, (value, why) in fixes.items():
        section, key = path.split(".", 1)
        config[section][key] = value
        config["model"].setdefault("assumed", {})[f"correction {path}"] = why


def framework_rules(row: Mapping[str, str], config: dict[str, Any], *, enabled: bool = True) -> None:
    """What a row's framework always does with its layout, where the row's cell says otherwise or nothing: a
    torchtitan run with TP > 1 is sequence-parallel (its TP plan shards the norms and the blocks' outputs by
    sequence; :data:`estimator.importers.torchtitan.TITAN_SP`), and its blocks are PyTorch eager ops
    (``train.eager_ops``, :data:`estimator.importers.torchtitan.TITAN_EAGER`), RMSNorm among them when the notes'
    torchtitan commit predates :data:`TITAN_NATIVE_RMSNORM` (``train.eager_rmsnorm``). Recorded in
    ``model.assumed``."""
    framework = (row.get("framework") or "").strip().lower()
    if not (enabled and framework.startswith("torchtitan")):
        return
    assumed = config["model"].setdefault("assumed", {})
    if config["parallel"].get("tp", 1) > 1 and not config["parallel"].get("sequence_parallel"):
        config["parallel"]["sequence_parallel"] = True
        assumed["framework parallel.sequence_parallel"] = (
            f"the row states {row.get('sequence_parallel') or 'nothing'}; {TITAN_SP}")
    train = config["train"]
    train["eager_ops"], assumed["framework train.eager_ops"] = True, TITAN_EAGER
    when = re.search(r"torchtitan [0-9a-f]{7,40} \((\d{4}-\d{2}-\d{2})\)", row.get("notes") or "")
    if when and when.group(1) < TITAN_NATIVE_RMSNORM:
        train["eager_rmsnorm"] = True
        assumed["framework train.eager_rmsnorm"] = (
            f"torchtitan of {when.group(1)}, before its native nn.RMSNorm ({TITAN_NATIVE_RMSNORM}): norms.py RMSNorm, "
            "norm_type 'rmsnorm' in the shipped train configs (pytorch/torchtitan@9dec370)")


def batch_section(ga: int | None, gbs: int | None, mbs: int | None, dp: int | None, step_measured: bool,
                  assumed: dict[str, str], *, enabled: bool = True) -> dict[str, int]:
    """``train``'s ``num_micro_batches`` (the published GA) or ``global_batch_size``. The GA rule (``enabled``;
    off = the published GA as before): a throughput-only row (no measured step: its step is
    ``GBS · seq / (tokens/s/GPU · GPUs)``, the shared README) whose GA contradicts its GBS (``GA · mbs · dp ≠
    GBS``) takes the GBS, so the estimate runs the samples its measured step counts; recorded in ``assumed``."""
    if enabled and ga is not None and gbs is not None and mbs and dp and ga * mbs * dp != gbs and not step_measured:
        assumed["num_micro_batches"] = (f"published GA {ga} contradicts GBS {gbs} (GA·mbs·dp = {ga * mbs * dp}); the "
                                        "step derived from throughput counts GBS samples, so global_batch_size is used")
        return {"global_batch_size": gbs}
    if ga is not None:
        return {"num_micro_batches": ga}
    return {"global_batch_size": gbs} if gbs is not None else {}
