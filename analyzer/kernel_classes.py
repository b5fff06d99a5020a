"""Device kernels by operator class, and the work their recorded shapes imply.

Class names are the step-time model's (``estimator.perf.operators.OP_CLASSES`` plus the
communication and copy classes), so an estimate and a profile of the same run line up:
``gemm`` (matrix engine: GEMM, batched matmul, convolution), ``attention`` (fused flash / fmha
kernels), ``elementwise`` (every other compute kernel: norms, activations, softmax, casts, layout
transforms), ``collective`` (NCCL / HCCL), ``memcpy`` (copies and memsets).

Shapes (Ascend ``kernel_details.csv`` ``Input Shapes`` / ``Output Shapes``, ``;``-separated, dims
``,``-separated) give a GEMM's FLOPs ``2·prod(out)·k`` — ``k`` read from both inputs (``prod(A)/(batch·m)``
and ``prod(B)/n`` or ``prod(B)/(batch·n)``) and used only when they agree — and any kernel's bytes
moved ``Σ prod(shape)·bytes(dtype)`` over inputs and outputs.
"""

from __future__ import annotations

import math
import re

KERNEL_CLASSES = ("gemm", "attention", "elementwise", "collective", "memcpy")

_COLLECTIVE = re.compile(r"nccl|hcom|hccl|allreduce|all_reduce|allgather|all_gather|reducescatter|reduce_scatter|"
                         r"alltoall|all_to_all|broadcast|sendrecv", re.I)
_MEMCPY = re.compile(r"memcpy|memset|tensormove", re.I)
_ATTENTION = re.compile(r"flash|fmha|attention", re.I)
_GEMM = re.compile(r"gemm|matmul|cutlass|cublas|xmma|conv|s884|s1688|s16816|h884|h1688|h16816", re.I)

#: bytes per element of the dtype names profilers write
DTYPE_BYTES = {"float": 4, "float32": 4, "dt_float": 4, "float16": 2, "dt_float16": 2, "half": 2, "bf16": 2,
               "dt_bf16": 2, "bfloat16": 2, "int64": 8, "dt_int64": 8, "int32": 4, "dt_int32": 4, "int8": 1,
               "dt_int8": 1, "uint8": 1, "dt_uint8": 1, "bool": 1, "dt_bool": 1, "double": 8, "float64": 8}


def classify(name: str, op_type: str = "", category: str = "") -> str:
    """The class of one device kernel from its name, its operator type (Ascend ``Type``) and the
    analyzer's event category (``communication`` / ``memcpy`` / ``memset`` win)."""
    text = f"{name} {op_type}"
    if category == "communication" or _COLLECTIVE.search(text):
        return "collective"
    if category in ("memcpy", "memset") or _MEMCPY.search(text):
        return "memcpy"
    if _ATTENTION.search(text):
        return "attention"
    if _GEMM.search(text):
        return "gemm"
    return "elementwise"


def shapes(text: object) -> list[list[int]]:
    """``"81920,4096;8192,512"`` -> ``[[81920, 4096], [8192, 512]]``; empty / N/A -> ``[]``."""
    out: list[list[int]] = []
    for part in str(text or "").strip().strip('"').split(";"):
        dims = [d.strip().strip('"') for d in part.split(",") if d.strip().strip('"')]
        if dims and all(d.isdigit() for d in dims):
            out.append([int(d) for d in dims])
    return out


def gemm_flops(inputs: list[list[int]], output: list[list[int]]) -> float | None:
    """``2·prod(out)·k`` of a (batched) GEMM, or None when the shapes do not determine ``k``."""
    if len(inputs) < 2 or not output or len(output[0]) < 2:
        return None
    out = output[0]
    m, n, batch = out[-2], out[-1], math.prod(out[:-2])
    a, b = math.prod(inputs[0]), math.prod(inputs[1])
    if not (m and n and batch):
        return None
    k_a = a / (batch * m)
    k_b = b / (batch * n) if len(inputs[1]) > 2 else b / n
    if k_a != k_b or k_a < 1 or k_a != int(k_a):
        return None
    return 2.0 * math.prod(out) * k_a


def bytes_moved(inputs: list[list[int]], in_types: object, outputs: list[list[int]], out_types: object) -> float | None:
    """``Σ prod(shape)·bytes(dtype)`` over inputs and outputs; None when a dtype is unknown."""
    total = 0.0
    for dims, types in ((inputs, in_types), (outputs, out_types)):
        names = [t.strip().lower() for t in str(types or "").split(";") if t.strip()]
        if len(names) != len(dims):
            return None
        for shape, dtype in zip(dims, names, strict=True):
            if dtype not in DTYPE_BYTES:
                return None
            total += math.prod(shape) * DTYPE_BYTES[dtype]
    return total
