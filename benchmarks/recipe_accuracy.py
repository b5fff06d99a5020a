"""Issue 26 acceptance table: the Megatron-Bridge Blackwell rows and the torchtitan Float8 rows, nothing fitted.

Every row of ``step_time_cases.csv`` with ``source_id`` ``mbridge_perf_summary_blackwell`` (and the
torchtitan Float8 rows of ``torchtitan_llama3_h100_202412``, step and memory) is built with
``estimator.experiments.measured`` (its recipe items from ``notes``: ``estimator.experiments.recipe_notes``)
and estimated with the default model (``fixed()``: operator roofline on the preset's sourced
efficiencies, the recipe's low-precision GEMMs, CUDA graphs, host launch bound). The measured step
time of a throughput-only row is ``GBS · seq / (tokens/s/GPU · GPUs)`` (the shared README). A row the
estimator refuses (ConfigError) is listed with its reason. Prints the per-row table (estimate,
measured, error) and per system the rows, refused rows, MAPE and Spearman against the issue's
targets (Bridge: no row refused, MAPE ≤ 15 % and Spearman ≥ 0.9 per system with ≥ 5 rows;
torchtitan Float8: step within 15 %, memory within 10 %).

Usage::

    .venv/bin/python benchmarks/recipe_accuracy.py [--rows] [--json] [--off]

``--off`` prices with the recipe / CUDA-graph / op-level-SAC / fused-cast / quantized-gather / main_grad-add /
measured-GEMM-rate / SSD-scan-share mechanisms switched off and without the Bridge recipe splits, row corrections
and the GA / footnote rules
(``config_from_measured_row(recipe_splits=False, row_rules=False)``): the model before them.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import estimator
from estimator.config.errors import ConfigError
from estimator.experiments import calibrate
from estimator.experiments.measured import config_from_measured_row, estimate_for_measurement
from estimator.experiments.recipe_notes import throughput_step_ms
from ndval.harness import paths

BRIDGE = "mbridge_perf_summary_blackwell"
TITAN = "torchtitan_llama3_h100_202412"
OFF = {"low_precision_gemms": False, "cuda_graphs": False, "op_sac_recompute": False,
       "grouped_expert_activation": False, "grouped_gemm_by_tokens": False, "flex_dispatch_per_rank": False,
       "grouped_op_fuser": False, "flex_dispatch_per_node": False, "fused_quantize": False, "quantized_tp_gather": False, "main_grad_add": False,
       "cast_kernel_latency": False,
       "attention_head_dim": False, "fp8_attention": False, "sfu_softmax": False,
       "fsdp2_copies": False, "per_layer_recompute": False,
       "a2a_unpaired_steps": False, "muon": False, "offload_copies": False, "cp_gather_memory": False,
       "eager_kernels": False, "async_tp_patterns": False, "loss_parallel_memory": False,
       "moe_probs_in_activation": False, "expert_bias": False, "measured_gemm_rate": False, "ssd_scan_memory": False}


def _config(row: dict[str, str], off: bool) -> Any:
    raw = config_from_measured_row(row, recipe_splits=not off, row_rules=not off)
    if off:
        raw["options"] = {**raw.get("options", {}), **OFF}
    return estimator.load_config(raw)


def step_rows(rows: list[dict[str, str]], off: bool) -> list[dict[str, Any]]:
    """Per row: system, case, estimate and measured step ms (or the refusal)."""
    out = []
    for row in rows:
        measured = float(row["measured_step_ms"]) if row["measured_step_ms"] else throughput_step_ms(row)
        entry: dict[str, Any] = {"case": row["case_id"].split("__", 1)[1], "system": row["hardware"].split(" ")[0],
                                 "precision": row["precision"] or "-", "measured_ms": measured}
        try:
            entry["estimate_ms"] = estimator.estimate_perf(_config(row, off)).total * 1e3
        except ConfigError as exc:
            entry["refused"] = f"{exc.field}: {exc.rule}"[:160]
        out.append(entry)
    return out


def memory_rows(rows: list[dict[str, str]], off: bool) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        report = estimator.estimate_memory(_config(row, off))
        est_mb, _ = estimate_for_measurement(report, row["measured_kind"], row.get("measured_rank", ""))
        out.append({"case": row["case_id"].split("__", 1)[1], "system": "H100", "precision": row["precision"],
                    "measured_gib": float(row["measured_gib"]), "estimate_gib": est_mb / 1024})
    return out


def summary(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per system: rows, refused, MAPE %, Spearman (systems with ≥ 5 judged rows), target met."""
    out = []
    for system in sorted({e["system"] for e in entries}):
        sel = [e for e in entries if e["system"] == system]
        ok = [e for e in sel if "estimate_ms" in e and e["measured_ms"]]
        acc = calibrate.accuracy([e["estimate_ms"] for e in ok], [e["measured_ms"] for e in ok], ["all"] * len(ok))
        refused = len(sel) - len(ok)
        met = refused == 0 and (len(ok) < 5 or (acc.mape_pct <= 15.0 and acc.spearman_pooled >= 0.9))
        out.append({"system": system, "rows": len(sel), "refused": refused, "judged": len(ok),
                    "mape_pct": acc.mape_pct, "spearman": acc.spearman_pooled, "met": met})
    return out


def _print_rows(entries: list[dict[str, Any]], unit: str) -> None:
    print(f"| system | case | precision | estimate {unit} | measured {unit} | error |")
    print("|---|---|---|---|---|---|")
    for e in entries:
        est, meas = e.get(f"estimate_{unit}"), e.get(f"measured_{unit}")
        err = f"{(est - meas) / meas:+.1%}" if est is not None and meas else e.get("refused", "refused")
        print(f"| {e['system']} | {e['case']} | {e['precision']} | {'' if est is None else f'{est:.1f}'} | "
              f"{'' if meas is None else f'{meas:.1f}'} | {err} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="print every row")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--off", action="store_true", help="recipe, CUDA-graph, op-SAC mechanisms and recipe splits off")
    args = parser.parse_args(argv)
    folder = paths.measured_dir()
    with (folder / "step_time_cases.csv").open(newline="", encoding="utf-8") as f:
        steps = list(csv.DictReader(f))
    with (folder / "memory_cases.csv").open(newline="", encoding="utf-8") as f:
        mems = list(csv.DictReader(f))
    bridge = step_rows([r for r in steps if r["source_id"] == BRIDGE], args.off)
    titan = step_rows([r for r in steps if r["source_id"] == TITAN and "Float8" in r["case_id"]], args.off)
    titan_mem = memory_rows([r for r in mems if r["source_id"] == TITAN and "Float8" in r["case_id"]], args.off)
    result = {"bridge": summary(bridge), "torchtitan_float8_step": titan, "torchtitan_float8_memory": titan_mem}
    if args.json:
        print(json.dumps(result | ({"bridge_rows": bridge} if args.rows else {}), indent=2))
        return 0
    if args.rows:
        _print_rows(bridge, "ms")
    print("\n| system | rows | refused | judged | MAPE | Spearman | target (no refusal; MAPE ≤ 15 %, ρ ≥ 0.9) | met |")
    print("|---|---|---|---|---|---|---|---|")
    for s in result["bridge"]:
        print(f"| {s['system']} | {s['rows']} | {s['refused']} | {s['judged']} | {s['mape_pct']:.1f} % | "
              f"{s['spearman']:.3f} | no refusal; MAPE ≤ 15 %, ρ ≥ 0.9 | {'yes' if s['met'] else 'NO'} |")
    print("\ntorchtitan Float8 (step within 15 %, memory within 10 %):")
    _print_rows(titan, "ms")
    _print_rows(titan_mem, "gib")
    return 0


if __name__ == "__main__":
    sys.exit(main())
