"""Recompute the measured GEMM ratios of ``estimator.inputs.gemm_rates`` (and the SSD scan's HBM share of
``estimator.inputs.ssd_scan``) from an aiconfigurator checkout.

Usage::

    .venv/bin/python tools/gemm_rates.py PATH/TO/aiconfigurator [--version 1.3.0rc20]

Reads ``aic-core/src/aiconfigurator_core/systems/data/<system>/gemm/trtllm/<version>/gemm_perf.parquet`` for the
B200 and each system of :data:`estimator.inputs.gemm_rates.MEASURED_RATIO`, takes the BF16 ``torch_flow`` rows,
and prints per system the median over the shapes both tables hold (``m >= 4096``, ``n, k >= 2048``) of the
throughput ratio against the B200, its interquartile range and the resulting ``gemm_rate``; then the SSD scan's
share from the B200's ``mamba2_perf.parquet`` (TensorRT-LLM 1.3.0rc15). Exits 1 when a median differs from the
recorded one by more than 5e-4.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from estimator.inputs.gemm_rates import MEASURED_RATIO, REFERENCE_PRESET, SYSTEM_PRESET, gemm_rate
from estimator.inputs.hardware import PRESETS
from estimator.inputs.hybrid import MambaDims
from estimator.inputs.ssd_scan import SSD_SCAN_MEMORY
from estimator.perf.mamba import SSD_KERNELS, ssd_scan_bytes

DATA = "aic-core/src/aiconfigurator_core/systems/data/{}/gemm/trtllm/{}/gemm_perf.parquet"
MAMBA = "aic-core/src/aiconfigurator_core/systems/data/b200_sxm/linear_attention/trtllm/1.3.0rc15/mamba2_perf.parquet"
#: the B200 preset's HBM bandwidth (B/s) and kernel latency (s) the share is solved against (estimator.inputs.ssd_scan)
_B200 = PRESETS[REFERENCE_PRESET]["efficiency"]
B200_HBM, B200_KERNEL_S = _B200["hbm_gb_s"] * 1e9, _B200["kernel_latency_us"] * 1e-6
#: the shape filter of the recorded ratios (estimator.inputs.gemm_rates)
MIN_M, MIN_NK = 4096, 2048


def bf16_tflops(table: pd.DataFrame) -> pd.Series:
    """Median TFLOP/s per (m, n, k) of a gemm_perf table's BF16 ``torch_flow`` rows (latency in ms)."""
    rows = table[(table["kernel_source"] == "torch_flow") & (table["gemm_dtype"] == "bfloat16")]
    tflops = 2.0 * rows["m"] * rows["n"] * rows["k"] / (rows["latency"] * 1e-3) / 1e12
    return tflops.groupby([rows["m"], rows["n"], rows["k"]]).median()


def ratio_to_reference(device: pd.Series, reference: pd.Series, min_m: int = MIN_M,
                       min_nk: int = MIN_NK) -> pd.Series:
    """Per-shape throughput ratio device / reference over the shapes both hold with m >= min_m, n, k >= min_nk."""
    m, n, k = (reference.index.get_level_values(i) for i in range(3))
    ref = reference[(m >= min_m) & (n >= min_nk) & (k >= min_nk)]
    dev = device.reindex(ref.index).dropna()
    return dev / ref.reindex(dev.index)


def ssd_shares(table: pd.DataFrame, min_tokens: int = 4096) -> pd.Series:
    """Per ``mamba_chunk_scan_combined`` row of ``min_tokens`` tokens or more: the HBM share under which ndval's scan
    operator (its bytes, five kernels' fixed latency) takes the measured time (latency in ms)."""
    rows = table[(table["kernel_source"] == "mamba_chunk_scan_combined") & (table["num_tokens"] >= min_tokens)]
    cols = ("nheads", "head_dim", "d_state", "n_groups", "chunk_size", "num_tokens", "latency")
    out = []
    for heads, head_dim, state, groups, chunk, tokens, latency_ms in zip(*(rows[c].to_numpy() for c in cols), strict=True):
        d = MambaDims(int(heads), int(head_dim), int(state), int(groups), 4, int(chunk))
        moved = ssd_scan_bytes(float(tokens), d, 2)
        out.append(moved / (B200_HBM * (float(latency_ms) * 1e-3 - SSD_KERNELS[0] * B200_KERNEL_S)))
    return pd.Series(out, dtype=float)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--version", default="1.3.0rc20")
    args = parser.parse_args(argv)

    def read(system: str) -> pd.Series:
        return bf16_tflops(pd.read_parquet(args.checkout / DATA.format(system, args.version)))

    reference = read("b200_sxm")
    status = 0
    print("| system | shapes | median ratio | IQR | recorded | gemm_rate |\n|---|---|---|---|---|---|")
    reference_peak = PRESETS[REFERENCE_PRESET]["peak_tflops"]["bf16"]
    for system, (recorded, _) in MEASURED_RATIO.items():
        q = ratio_to_reference(read(system), reference)
        median = float(q.median())
        print(f"| {system} | {len(q)} | {median:.4f} | {q.quantile(0.25):.3f}-{q.quantile(0.75):.3f} | {recorded:.4f} | "
              f"{gemm_rate(median, PRESETS[SYSTEM_PRESET[system]]['peak_tflops']['bf16'], reference_peak):.4f} |")
        status |= abs(median - recorded) > 5e-4
    shares = ssd_shares(pd.read_parquet(args.checkout / MAMBA))
    median = float(shares.median())
    print(f"\nSSD scan (B200): {len(shares)} rows, median share {median:.4f} (IQR {shares.quantile(0.25):.4f}-"
          f"{shares.quantile(0.75):.4f}), recorded {SSD_SCAN_MEMORY:.4f}")
    status |= abs(median - SSD_SCAN_MEMORY) > 5e-4
    return status


if __name__ == "__main__":
    sys.exit(main())
