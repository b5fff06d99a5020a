"""One MoE layer on 8 H100 against Megatron-Core's MoE-layer benchmark, nothing fitted (the table of
``validation_cases/estimator/moe_layer_h100.case.yaml``).

Each row of ``validation_cases/recorded/mcore_moe_layer_h100.csv`` (Megatron-LM's ``moe_perf`` baseline,
with its source) is priced by :mod:`estimator.experiments.moe_layer`; the table prints the estimated and
measured forward / backward ms, their ratio, the EP exchange's share of the estimate, and the model-free GEMM
efficiency floor ``F / (t · peak)`` each measurement implies (to read beside the factor the preset prices the
experts' grouped GEMMs at), and the MAPE per precision.

Usage::

    .venv/bin/python benchmarks/moe_layer_h100.py
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import estimator
from estimator.experiments import moe_layer
from ndval.core.units import MS_PER_S

DATA = Path(__file__).resolve().parent.parent / "validation_cases" / "recorded" / "mcore_moe_layer_h100.csv"


def main() -> int:
    with DATA.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    print(f"{len(rows)} rows from {DATA.name} (Megatron-LM moe_perf baseline, dgx_h100)")
    head = (f"{'case':32} {'fw est':>7} {'fw meas':>7} {'ratio':>6} {'bw est':>7} {'bw meas':>7} {'ratio':>6} "
            f"{'a2a fw':>7} {'floor fw':>8} {'floor bw':>8}")
    print(head)
    print("-" * len(head))
    ratios: dict[str, list[float]] = {}
    for row in rows:
        cfg = estimator.load_config(moe_layer.layer_config(row, DATA.name))
        t = moe_layer.moe_layer_time(cfg)
        peak = moe_layer.gemm_peak_flops_per_s(cfg)
        fw_ms, bw_ms = t.forward_s * MS_PER_S, t.backward_s * MS_PER_S
        fw_meas, bw_meas = float(row["forward_ms"]), float(row["backward_ms"])
        floor_fw = moe_layer.gemm_efficiency_floor(t.grouped_gemm_flops_forward, fw_meas / MS_PER_S, peak)
        floor_bw = moe_layer.gemm_efficiency_floor(2.0 * t.grouped_gemm_flops_forward, bw_meas / MS_PER_S, peak)
        ratios.setdefault(row["precision"], []).extend([abs(fw_ms / fw_meas - 1.0), abs(bw_ms / bw_meas - 1.0)])
        print(f"{row['case']:32} {fw_ms:7.3f} {fw_meas:7.3f} {fw_ms / fw_meas:6.3f} {bw_ms:7.3f} {bw_meas:7.3f} "
              f"{bw_ms / bw_meas:6.3f} {t.exchange_forward_s * MS_PER_S:7.3f} {floor_fw:8.3f} {floor_bw:8.3f}")
    for precision, errors in ratios.items():
        print(f"{precision}: MAPE over forward and backward {sum(errors) / len(errors):.3f} ({len(errors)} values)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
