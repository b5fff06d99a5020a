"""SYNTHETIC PyTorch Kineto traces, written by hand for tests only (nothing here is measured data).

A trace is a ``traceEvents`` object with ``distributedInfo``, one ``ProfilerStep#N`` per step, and per device
kernel a host ``cudaLaunchKernel`` (``cuda_runtime``) linked to it by ``correlation``. NCCL kernels carry the
args a real PyTorch 2.x trace gives them: ``Collective name``, ``In msg nelems``, ``dtype``, ``Process Group
Name`` and ``Process Group Ranks``.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_US = 1_700_000_000_000_000  # an epoch-µs base (synthetic)
PID_HOST, TID_HOST, PID_GPU = 1000, 1000, 0


@dataclass(frozen=True)
class Kernel:
    """One device kernel at ``start_us`` (relative to its step) lasting ``dur_us``; a collective when ``coll``."""

    start_us: float
    dur_us: float
    name: str = "void gemm_kernel"
    coll: str = ""
    nelems: int | None = None
    dtype: str = "Float"
    pg_name: str | None = None
    pg_ranks: list[int] | None = None
    stream: int = 7


def collective(start_us: float, dur_us: float, coll: str = "allreduce", **kw: Any) -> Kernel:
    """An NCCL kernel (``ncclDevKernel_<Coll>_...``)."""
    return Kernel(start_us, dur_us, name=f"ncclDevKernel_{coll.capitalize()}_Sum_f32_RING_LL", coll=coll,
                  stream=kw.pop("stream", 20), **kw)


def events(steps: list[list[Kernel]], step_us: float = 10_000.0, rank: int = 0, offset_us: float = 0.0) -> list[dict[str, Any]]:
    """The trace events of ``steps`` (each a list of kernels), steps ``step_us`` apart from ``offset_us``."""
    out: list[dict[str, Any]] = []
    corr = 1
    for i, kernels in enumerate(steps):
        t0 = BASE_US + offset_us + i * step_us
        out.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i + 1}", "pid": PID_HOST,
                    "tid": TID_HOST, "ts": t0, "dur": step_us * 0.95})
        for k in kernels:
            out.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": PID_HOST, "tid": TID_HOST,
                        "ts": t0 + 1 + corr * 0.01, "dur": 0.5, "args": {"correlation": corr}})
            args: dict[str, Any] = {"correlation": corr, "stream": k.stream, "device": 0}
            if k.coll:
                args.update({"Collective name": k.coll, "dtype": k.dtype})
                if k.nelems is not None:
                    args["In msg nelems"] = k.nelems
                if k.pg_name is not None:
                    args["Process Group Name"] = k.pg_name
                if k.pg_ranks is not None:
                    args["Process Group Ranks"] = json.dumps(k.pg_ranks)
            out.append({"ph": "X", "cat": "kernel", "name": k.name, "pid": PID_GPU, "tid": k.stream,
                        "ts": t0 + k.start_us, "dur": k.dur_us, "args": args})
            corr += 1
    return out


def write(path: Path, steps: list[list[Kernel]], rank: int = 0, world: int = 1, **kw: Any) -> Path:
    """Write a gzip Kineto trace of ``steps`` (``kw``: :func:`events` options)."""
    doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
           "deviceProperties": [{"id": 0, "name": "SYNTHETIC GPU"}], "traceEvents": events(steps, rank=rank, **kw)}
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return path
