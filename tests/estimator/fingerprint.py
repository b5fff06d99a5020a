"""Fingerprints of the estimator over a grid of configurations (not a test module: the fingerprint test
and ``python -m tests.estimator.fingerprint OUT.json`` use it).

The grid: the three example models × the three framework profiles × tp, pp, vpp, ep, etp, cp,
micro-batch, recompute mode and pipeline split (even, or Megatron's embedding/loss accounting).
Configurations the rules reject are skipped (counted). A fingerprint is the ``repr`` of the whole
``to_dict()`` of the memory and of the step-time report (exact; NaN equal to itself).
"""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import estimator

EXAMPLES = Path(estimator.__file__).resolve().parent / "examples"
MODELS = ("llama3-8b-h100.yaml", "deepseek-v3-mini-A.yaml", "deepseek-v3-671b-h100.yaml")
PROFILES = ("sapp-nd", "megatron", "fsdp2")
#: (tp, pp, vpp, ep, etp, cp, micro-batch, recompute, split)
GRID: dict[str, tuple[Any, ...]] = {
    "tp": (1, 2, 4),
    "pp": (1, 2, 4),
    "vpp": (1, 2),
    "ep": (1, 4, 16),
    "etp": (None, 1, 2),
    "cp": (1, 2),
    "mb": (1, 2),
    "recompute": ("none", "full", "selective"),
    "split": ("even", "uneven", "accounted"),
}
#: the grid of ``make test`` (11,094 configs, every dimension varied); the full one (17,382) with NDVAL_FINGERPRINT=full
SMALL_GRID: dict[str, tuple[Any, ...]] = {**GRID, "tp": (1, 2)}
DP = 8


def split(num_layers: int, chunks: int, kind: str) -> list[int] | None:
    """Layers per virtual stage: ``even`` (None when L divides evenly, else the remainder on the last
    stages), ``uneven`` (one layer fewer on the first stage, more on the last)."""
    base, extra = divmod(num_layers, chunks)
    if kind == "even":
        return None if extra == 0 else [base] * (chunks - extra) + [base + 1] * extra
    counts = [base] * chunks
    counts[0] -= 1
    counts[-1] += 1 + extra
    return counts


def overrides(profile: str, point: dict[str, Any], num_layers: int, dense: bool) -> dict[str, Any] | None:
    """The overrides of one grid point, or None when it is redundant (ep/etp on a dense model, a split
    without pipeline parallelism)."""
    if dense and (point["ep"] != 1 or point["etp"] is not None):
        return None
    if point["pp"] == 1 and (point["vpp"] != 1 or point["split"] != "even"):
        return None
    accounted = point["split"] == "accounted"
    chunks = point["pp"] * point["vpp"]
    world = DP * point["tp"] * point["pp"] * point["cp"]
    return {
        "profile": profile, "parallel.tp": point["tp"], "parallel.pp": point["pp"], "parallel.vpp": point["vpp"],
        "parallel.dp": DP, "parallel.ep": point["ep"], "parallel.etp": point["etp"], "parallel.cp": point["cp"],
        "parallel.layers_per_stage": None if accounted else split(num_layers, chunks, point["split"]), "parallel.schedule": "interleaved" if point["vpp"] > 1 else "1f1b",
        "parallel.account_for_embedding_in_pipeline_split": accounted,
        "parallel.account_for_loss_in_pipeline_split": accounted,
        "train.micro_batch_size": point["mb"], "recompute.mode": point["recompute"],
        "hardware.devices": world,
    }


def configs(grid: dict[str, tuple[Any, ...]] = GRID) -> Iterator[tuple[str, estimator.EstimatorConfig]]:
    """(key, config) of every valid grid point."""
    for name in MODELS:
        base = estimator.load_config(EXAMPLES / name)
        dense, num_layers = not base.model.is_moe, base.model.num_layers
        for profile in PROFILES:
            for values in itertools.product(*grid.values()):
                point = dict(zip(grid, values, strict=True))
                over = overrides(profile, point, num_layers, dense)
                if over is None:
                    continue
                try:
                    cfg = estimator.load_config(base, over)
                except estimator.ConfigError:
                    continue
                yield f"{name}|{profile}|" + ",".join(f"{k}={v}" for k, v in point.items()), cfg


def fingerprint(cfg: estimator.EstimatorConfig) -> str:
    """The whole memory and step-time reports of ``cfg``; an error's type and message when one is raised."""
    try:
        return repr(estimator.estimate_memory(cfg).to_dict()) + "\n" + repr(estimator.estimate_perf(cfg).to_dict())
    except (estimator.ConfigError, ValueError, ZeroDivisionError) as exc:
        return f"error {type(exc).__name__}: {exc}"


def main(argv: list[str]) -> int:
    grid = SMALL_GRID if "--small" in argv else GRID
    out = {key: fingerprint(cfg) for key, cfg in configs(grid)}
    Path(argv[0]).write_text(json.dumps(out, indent=0, sort_keys=True))
    print(f"{len(out)} configs -> {argv[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
