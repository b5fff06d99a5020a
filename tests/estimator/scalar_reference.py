"""Stored scalar-path outputs for a fixed set of configs (the bundled examples and search layouts of
them), to check that speed work on the scalar path changes no number beyond 1e-12 relative.

The configs are the three bundled examples (``estimator/examples``) and, for each, layouts of a
search space taken every ``STRIDE``-th point in enumeration order, under every profile. Outputs
were computed by the scalar path before the speed work (commit named in the JSON) and are stored
in ``tests/estimator/data/scalar_reference.json``; regenerate only deliberately::

    .venv/bin/python -m tests.estimator.scalar_reference --write
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "scalar_reference.json"
EXAMPLES = ROOT / "estimator" / "examples"
STRIDE = 7

#: (example file, devices, space): a small space per example, spanning pp/vpp splits, tp, ep, recompute
CASES: tuple[tuple[str, int, dict[str, tuple[Any, ...]]], ...] = (
    ("deepseek-v3-671b-h100.yaml", 1024, {
        "parallel.tp": (1, 2, 8), "parallel.pp": (1, 4, 8, 16), "parallel.vpp": (1, 2),
        "parallel.ep": (8, 64), "train.micro_batch_size": (1, 2), "recompute.mode": ("none", "selective", "full"),
    }),
    ("llama3-8b-h100.yaml", 16, {
        "parallel.tp": (1, 2, 4), "parallel.pp": (1, 2, 4), "parallel.vpp": (1, 2),
        "train.micro_batch_size": (1, 2), "recompute.mode": ("none", "selective", "full"),
    }),
    ("deepseek-v3-mini-A.yaml", 32, {
        "parallel.tp": (1, 2), "parallel.pp": (1, 2, 4), "parallel.ep": (1, 2, 4),
        "recompute.mode": ("none", "selective", "full"),
    }),
)
PROFILES = ("sapp-nd", "megatron", "fsdp2")
#: single configs exercising options the spaces above do not: torchtitan SAC, CP, FP8, legacy hacks
EXTRA: tuple[tuple[str, dict[str, Any]], ...] = (
    ("llama3-8b-h100.yaml", {"profile": "fsdp2", "recompute.modules": [], "recompute.selective_ac_option": "2"}),
    ("llama3-8b-h100.yaml", {"profile": "fsdp2", "recompute.modules": [], "recompute.selective_ac_option": "op"}),
    ("llama3-8b-h100.yaml", {"parallel.cp": 2, "parallel.dp": 1, "parallel.cp_comm_type": "a2a"}),
    ("llama3-8b-h100.yaml", {"parallel.cp": 2, "parallel.dp": 1, "profile": "sapp-nd"}),
    ("deepseek-v3-671b-h100.yaml", {"precision.fp8_linear": True}),
    ("deepseek-v3-671b-h100.yaml", {"parallel.overlap_moe_expert_parallel_comm": True, "parallel.tp": 2,
                                    "parallel.dp": 64, "parallel.pp": 1, "parallel.layers_per_stage": None,
                                    "recompute.mode": "none", "hardware.devices": 128}),
    ("deepseek-v3-mini-A.yaml", {"options.dp_comm_zero_hack": True, "options.tp_comm_half_hack": True,
                                 "options.convert_ep_comm_to_time": False, "options.host_launch_overhead": False,
                                 "options.operator_roofline": False, "parallel.tp": 2, "parallel.dp": 8}),
    ("deepseek-v3-mini-A.yaml", {"options.perf_mode": "score"}),
)


def reference_inputs() -> list[tuple[str, dict[str, Any]]]:
    """(example file, overrides) of every stored config, in a fixed order."""
    import estimator
    from estimator.search.space import Layout, layouts

    out: list[tuple[str, dict[str, Any]]] = []
    for name, devices, space in CASES:
        base = estimator.load_config(EXAMPLES / name)
        out.append((name, {}))
        points = [p for p in layouts(base, devices, space) if isinstance(p, Layout)]
        for k, point in enumerate(points[::STRIDE]):
            out.append((name, {**point.as_dict(), "profile": PROFILES[k % len(PROFILES)]}))
    return out + list(EXTRA)


@functools.cache
def _base(name: str) -> Any:
    import estimator

    return estimator.load_config(EXAMPLES / name)


def outputs(name: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Every number of the scalar path for one config: per-stage memory, perf and real parts."""
    import estimator
    from estimator.config.errors import ConfigError
    from estimator.search.evaluate import search_base

    base = _base(name)  # one instance per example: its sections are shared, as in a sweep (warm caches)
    try:
        data = search_base(base, overrides) if overrides else base
        cfg = estimator.load_config(data, overrides or None)
        mem = estimator.estimate_memory(cfg)
        perf = estimator.estimate_perf(cfg)
    except ConfigError as exc:
        return {"error": f"{exc.field}: {exc.rule}"}
    return {
        "stages": [{"total_mb": s.total_mb, "components": s.components, "reserve": s.reserve,
                    "in_flight": list(s.in_flight)} for s in mem.stages],
        "peak_mb": mem.peak_mb, "peak_stage": mem.peak_stage,
        "perf_parts": perf.perf_parts, "real_parts": perf.real_parts, "stage_times_s": perf.stage_times_s,
        "straggler_stage": perf.straggler_stage, "tokens_per_s": perf.tokens_per_s, "mfu": perf.mfu,
    }


def _encode(value: Any) -> Any:
    """JSON-safe: NaN/inf as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def compute_all() -> list[dict[str, Any]]:
    return [{"example": n, "overrides": o, "outputs": _encode(outputs(n, o))} for n, o in reference_inputs()]


def close(a: Any, b: Any, rel: float, where: str = "") -> list[str]:
    """Differences between two output trees beyond ``rel`` relative (exact for non-floats)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{where}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in close(a[k], b[k], rel, f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in close(x, y, rel, f"{where}[{i}]")]
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        if a == b or abs(a - b) <= rel * max(abs(a), abs(b)):
            return []
        return [f"{where}: {a!r} != {b!r}"]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def _write() -> None:
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    doc = {"commit": commit, "configs": compute_all()}
    fd, tmp = tempfile.mkstemp(dir=DATA.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=0, sort_keys=True)
    os.replace(tmp, DATA)
    print(f"wrote {len(doc['configs'])} configs to {DATA}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="overwrite the stored outputs (deliberately only)")
    if ap.parse_args().write:
        _write()
    sys.exit(0)
