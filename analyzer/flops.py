"""Seed §9 ``peakTflops``: FLOPs of the matrix multiplications in ``kernel_details.csv`` turned into a
compute utilisation against the device's peak.

A matmul kernel row carries its operand and result shapes (``Input Shapes`` ``"M,K;N,K;N"``, ``Output Shapes``
``"M,N"``; batched: leading dimensions). The reduction length ``K`` is the dimension of the first operand
that is not ``M`` and of the second that is not ``N`` (either may be transposed); the two must agree, else
the row's shapes are inconsistent and it is left out (counted in the reason). Then

    FLOPs = 2 · numel(out) · K                     (one multiply and one add per term; numel(out) = batch·M·N)
    achieved TFLOPS = Σ FLOPs / Σ Duration(us) · 1e-6
    utilisation %   = 100 · achieved TFLOPS / peakTflops

Only rows whose ``Type`` is a matmul (``MatMul*``, ``BatchMatMul*``, ``GEMM``) and whose shapes parse are
counted; the rest is stated in the reason.
"""

from __future__ import annotations

import math
import re

import pandas as pd

from ndval.core.units import FLOPS_PER_TFLOPS, US_PER_S

MATMUL_TYPE_RE = re.compile(r"^(?:Batch)?MatMul|GEMM", re.IGNORECASE)


def _dims(shape: str) -> tuple[int, ...] | None:
    """``"32,9216"`` -> (32, 9216); None when not a list of positive integers."""
    try:
        dims = tuple(int(x) for x in shape.strip().strip('"').split(","))
    except ValueError:
        return None
    return dims if dims and all(d > 0 for d in dims) else None


def _reduction_dim(last_two: tuple[int, ...], kept: int) -> int | None:
    """Of an operand's last two dimensions, the one that is not ``kept`` (M for A, N for B)."""
    a, b = last_two[-2:]
    return b if a == kept else a if b == kept else None


def matmul_flops(input_shapes: str, output_shapes: str) -> float | None:
    """``2 · numel(out) · K`` for one matmul row (module doc); None when the shapes do not parse or disagree."""
    operands = str(input_shapes).split(";")
    a, b = _dims(operands[0]), _dims(operands[1]) if len(operands) > 1 else None
    out = _dims(str(output_shapes).split(";")[0])
    if a is None or b is None or out is None or min(len(a), len(b), len(out)) < 2:
        return None
    k_a, k_b = _reduction_dim(a, out[-2]), _reduction_dim(b, out[-1])
    if k_a is None or k_a != k_b:
        return None
    return 2.0 * math.prod(out) * k_a


def matmul_tflops(kd: pd.DataFrame | None) -> tuple[float | None, str]:
    """Achieved TFLOPS of the matmul rows of ``kernel_details.csv`` (value, reason when None)."""
    if kd is None:
        return None, "kernel_details.csv not available in this scope"
    missing = [c for c in ("Type", "Input Shapes", "Output Shapes", "Duration(us)") if c not in kd.columns]
    if missing:
        return None, f"kernel_details.csv has no {', '.join(missing)} column(s) (Level0 exports leave shapes out)"
    rows = kd[kd["Type"].astype(str).str.contains(MATMUL_TYPE_RE, na=False)]
    flops = [matmul_flops(i, o) for i, o in zip(rows["Input Shapes"], rows["Output Shapes"], strict=True)]
    dur = pd.to_numeric(rows["Duration(us)"], errors="coerce").tolist()
    pairs = [(f, d) for f, d in zip(flops, dur, strict=True) if f is not None and d == d and d > 0]
    if not pairs:
        return None, (f"no usable matmul kernel rows: {len(rows)} matmul row(s), none with consistent "
                      "operand/result shapes and a duration")
    return sum(f for f, _ in pairs) / sum(d for _, d in pairs) * (US_PER_S / FLOPS_PER_TFLOPS), ""


def utilisation_pct(tflops: float | None, peak_tflops: float) -> float | None:
    """``100 · achieved / peakTflops`` (None when not measured)."""
    return None if tflops is None else 100.0 * tflops / peak_tflops
