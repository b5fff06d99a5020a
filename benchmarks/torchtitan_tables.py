"""torchtitan's long-sequence CP and 2D / AsyncTP tables against ndval, nothing fitted (a check, no criterion).

The shared set holds torchtitan's Tables 1 and 3 (``torchtitan_llama3_h100_202412`` rows of
``step_time_cases.csv`` / ``memory_cases.csv``). The same benchmark page publishes Table 2 (Llama 3.1 8B,
FSDP × CP, 32k–256k tokens) and Table 4 (Llama 3.1 70B, FSDP 32 × TP 8, with and without AsyncTP), all with
torch.compile and Float8 on the same 500 W H100 hosts; their numbers are transcribed below with their source
(:data:`ROWS`). Each row is built from the shared Table 1 Float8 row (hardware, software, recipe notes,
read in place) with the table's layout, batch and full activation checkpointing, and estimated with the
default model. The measured step is ``GBS · seq / (TPS/GPU · GPUs)``; memory is the published max reserved.

Usage::

    .venv/bin/python benchmarks/torchtitan_tables.py
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import estimator
from estimator.experiments.measured import config_from_measured_row, estimate_for_measurement
from ndval.harness import paths

SOURCE = "pytorch/torchtitan@b5bcd76c66 benchmarks/llama3_h100_202412_torchtitan.md"
TEMPLATE = "torchtitan_llama3_h100_202412__t1__8B__FSDP+torch.compile+Float8"
LLAMA_70B = {"model_name": "Llama 3.1 70B", "num_layers": "80", "num_dense_layers": "80", "hidden_size": "8192",
             "ffn_hidden_size": "28672", "num_attention_heads": "64", "num_kv_heads": "8", "head_dim": "128"}
#: (table, row label, column overrides, AsyncTP, GPUs, TPS/GPU, memory GiB): the published rows
ROWS: list[tuple[str, str, dict[str, str], bool, int, float, float]] = [
    *[("Table 2", f"8B FSDP {dp}, CP {cp}, seq {seq}",
       {"seq_length": str(seq), "micro_batch_size": "1", "global_batch_size": str(dp), "dp": str(dp), "cp": str(cp)},
       False, 8, tps, mem)
      for dp, cp, seq, tps, mem in ((8, 1, 32768, 3890, 83.9), (4, 2, 65536, 2540, 84.2), (2, 4, 131072, 1071, 84.0),
                                    (1, 8, 262144, 548, 84.5))],
    *[("Table 4", f"70B FSDP 32, TP 8{' + AsyncTP' if asynctp else ''}",
       {**LLAMA_70B, "seq_length": "8192", "micro_batch_size": "16", "global_batch_size": "512", "dp": "32", "tp": "8"},
       asynctp, 256, tps, mem)
      for asynctp, tps, mem in ((False, 829, 71.9), (True, 876, 67.6))],
]


def row_config(template: dict[str, str], overrides: dict[str, str], asynctp: bool, gpus: int) -> dict:
    """The config of one published row: the template row with the table's columns, full activation
    checkpointing and, for AsyncTP, the technique in its notes."""
    row = {**template, **overrides, "world_size": str(gpus), "recompute": "full", "recompute_modules": "",
           "measured_step_ms": "", "case_id": f"{template['source_id']}__table"}
    if asynctp:
        row["notes"] = row["notes"].replace("techniques: FSDP2, torch.compile", "techniques: FSDP2, TP, AsyncTP, torch.compile")
    return config_from_measured_row(row)


def main() -> int:
    folder = paths.measured_dir()
    if not (folder / "step_time_cases.csv").is_file():
        print(f"no measured rows at {folder} (set NDVAL_SHARED_DIR to the shared folder)", file=sys.stderr)
        return 2
    with (folder / "step_time_cases.csv").open(newline="", encoding="utf-8") as f:
        template = next((r for r in csv.DictReader(f) if r["case_id"] == TEMPLATE), None)
    if template is None:
        print(f"{TEMPLATE} not in {folder / 'step_time_cases.csv'}", file=sys.stderr)
        return 2
    print(f"source: {SOURCE} (Tables 2 and 4; template row {TEMPLATE})")
    print("| table | row | step est ms | step meas ms | error | memory est GiB | memory meas GiB | error |")
    print("|---|---|---|---|---|---|---|---|")
    for table, label, overrides, asynctp, gpus, tps, mem_gib in ROWS:
        cfg = estimator.load_config(row_config(template, overrides, asynctp, gpus))
        step_ms = estimator.estimate_perf(cfg).total * 1e3
        measured_ms = int(overrides["global_batch_size"]) * int(overrides["seq_length"]) / (tps * gpus) * 1e3
        mem_mb, _ = estimate_for_measurement(estimator.estimate_memory(cfg), "max_reserved", "")
        print(f"| {table} | {label} | {step_ms:.0f} | {measured_ms:.0f} | {step_ms / measured_ms - 1:+.1%} | "
              f"{mem_mb / 1024:.1f} | {mem_gib} | {mem_mb / 1024 / mem_gib - 1:+.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
