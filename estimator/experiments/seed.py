"""The seed issue's six measured configurations A-F (SAPP-ND P1-P4, scaled-down DeepSeek-V3).

Facts (seed §1, reference §5): EP, TP, DP, measured peak HBM (MB) and the reference tool's
recorded estimate (MB) per config, PP = 2 on 32 devices. Everything else about the run is not
published; ``seed_run`` fills it with the assumed values below, each with its reason, and the
model comes from ``validation_cases/models/deepseek-v3-mini.yaml`` (assumed dimensions).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from estimator.config.schema import BUNDLED_CASES_DIR
from ndval.core.render import markdown_table

#: where the facts come from
SEED_SOURCE = (
    "seeds/sapp-nd-validation-issue.zh.md §1 (mindspore-ai/hyper-parallel issue #669 = gitcode #272, "
    "data of PR #827 exp_peak_hbm_validation.xlsx)"
)


@dataclass(frozen=True)
class SeedConfig:
    """One row of the seed's table (MB as the seed writes it; the reference tool's MB are MiB)."""

    label: str
    ep: int
    tp: int
    dp: int
    measured_peak_mb: float
    reference_estimate_mb: float


#: the one home of the A-F numbers (CSV beside the recorded case that checks them)
SEED_TABLE = BUNDLED_CASES_DIR / "recorded" / "seed_a_f.csv"


def load_seed_configs(path: Path = SEED_TABLE) -> dict[str, SeedConfig]:
    """The seed's table A-F from ``path`` (columns config, ep, tp, dp, measured_mb, reference_estimate_mb)."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return {r["config"]: SeedConfig(r["config"], ep=int(r["ep"]), tp=int(r["tp"]), dp=int(r["dp"]),
                                    measured_peak_mb=float(r["measured_mb"]),
                                    reference_estimate_mb=float(r["reference_estimate_mb"])) for r in rows}


SEED_CONFIGS: dict[str, SeedConfig] = load_seed_configs()

#: run settings the seed does not publish: value and reason
ASSUMED_RUN: dict[str, tuple[Any, str]] = {
    "train.seq_length": (4096, "with micro_batch_size 2 gives s·b = 8192, which fits the seed's 2084 MB output activation"),
    "train.micro_batch_size": (2, "see train.seq_length"),
    "train.num_micro_batches": (8, "not published; ≥ pp, so 1F1B in-flight counts do not depend on it"),
    "recompute.mode": (
        "full",
        "the seed says the output-layer activation is 'not covered by recompute', so the layers are recomputed",
    ),
    "parallel.sequence_parallel": (False, "not published; MindSpore runs default to off"),
    "parallel.distributed_optimizer": (True, "the reference's has_op default (optimizer parallel on)"),
    "parallel.etp": (
        1,
        "inferred from the recorded estimates (`ndval reconstruct-seed`): they are exactly additive, "
        "A-E = B-D = C-F = 1208, A-B = E-D = 873, B-C = D-F = 437 MiB, i.e. c + x/ep + y/tp; legacy() "
        "has that structure only with expert tensor parallelism 1 (etp unset = tp halves each routed "
        "expert at TP = 2: residual ~70 MiB; etp = 1: 0)",
    ),
    "hardware": ("ascend-910b", "SAPP-ND targets Ascend (A2/A3); peak-memory arithmetic does not depend on it"),
}


def seed_run(label: str, *, profile: str = "sapp-nd", options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Config dict for seed config ``label`` (A-F) with the assumed run settings.

    ``options``: e.g. ``presets.legacy()`` or ``presets.fixed()``.
    """
    seed = SEED_CONFIGS[label]
    v = {key: value for key, (value, _) in ASSUMED_RUN.items()}
    return {
        "profile": profile,
        "model": {"ref": "models/deepseek-v3-mini.yaml"},
        "train": {
            "seq_length": v["train.seq_length"],
            "micro_batch_size": v["train.micro_batch_size"],
            "num_micro_batches": v["train.num_micro_batches"],
            "flash_attention": True,
        },
        "parallel": {
            "tp": seed.tp,
            "pp": 2,
            "dp": seed.dp,
            "ep": seed.ep,
            "sequence_parallel": v["parallel.sequence_parallel"],
            "distributed_optimizer": v["parallel.distributed_optimizer"],
            "etp": v["parallel.etp"],
            "schedule": "1f1b",
        },
        "recompute": {"mode": v["recompute.mode"]},
        "hardware": {"preset": v["hardware"], "devices": 32},
        "options": dict(options or {}),
    }


#: columns of the A-F accuracy table: name -> (profile, options preset, expert_zero3_sharding)
ACCURACY_VARIANTS: dict[str, tuple[str, str, bool]] = {
    "legacy": ("sapp-nd", "legacy", True),
    "fixed": ("sapp-nd", "fixed", True),
    "fixed, experts not ZeRO-3": ("sapp-nd", "fixed", False),
    "megatron, fixed": ("megatron", "fixed", True),
}


def accuracy_rows() -> list[dict[str, Any]]:
    """Per config A-F: measured, the reference's recorded estimate and ndval's peaks (MiB) per variant."""
    from estimator.config import presets
    from estimator.config.schema import load_config
    from estimator.memory import estimate_memory

    rows = []
    for label, seed in SEED_CONFIGS.items():
        row: dict[str, Any] = {
            "config": label, "ep": seed.ep, "tp": seed.tp, "dp": seed.dp,
            "measured_mb": seed.measured_peak_mb, "reference_mb": seed.reference_estimate_mb,
        }
        for name, (profile, preset_name, zero3) in ACCURACY_VARIANTS.items():
            run = seed_run(label, profile=profile, options=presets.PRESETS[preset_name]())
            run["parallel"]["expert_zero3_sharding"] = zero3
            row[name] = estimate_memory(load_config(run)).peak_mb
        rows.append(row)
    return rows


def accuracy_table_markdown() -> str:
    """The A-F table as Markdown: peaks in MB (MiB) and ratios to measured."""
    names = list(ACCURACY_VARIANTS)
    head = ["config", "EP", "TP", "DP", "measured", "reference (recorded)", *names]
    rows = []
    for r in accuracy_rows():
        meas = r["measured_mb"]
        cells = [r["config"], str(r["ep"]), str(r["tp"]), str(r["dp"]), f"{meas:.0f}",
                 f"{r['reference_mb']:.0f} ({r['reference_mb'] / meas:.2f})"]
        rows.append(cells + [f"{r[n]:.0f} ({r[n] / meas:.2f})" for n in names])
    return markdown_table(head, rows)


if __name__ == "__main__":  # pragma: no cover - `python -m estimator.experiments.seed` prints the A-F table
    print(accuracy_table_markdown())
