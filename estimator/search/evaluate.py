"""Pricing one layout on the scalar path: validate the config, estimate memory, reject what does not
fit, estimate the step time. Every rejected layout keeps a reason key (for counting) and a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from estimator.config.errors import ConfigError
from estimator.config.rules import SEARCH_RULES, first_broken
from estimator.config.schema import EstimatorConfig, load_config
from estimator.memory import estimate_memory
from estimator.perf.parts import estimate_perf
from estimator.search.space import SPLIT_DIM, SPLIT_FIELDS, Layout, SkippedLayout

#: rejection reason for a layout whose peak exceeds device memory minus the margin
REASON_OOM = "OOM"


@dataclass(frozen=True)
class Candidate:
    """One feasible layout: the overrides that define it, its peak memory and step time."""

    overrides: dict[str, Any]
    peak_mb: float
    total_s: float
    tokens_per_s: float
    mfu: float
    split: str = "even"
    peak_stage: int = 0
    #: how its memory was priced: "scalar" (one config at a time) or "batched" (estimator.search.batched)
    path: str = "scalar"

    def key(self) -> tuple[str, ...]:
        """A total order among candidates with equal objective (stable across runs and partitions)."""
        return tuple(f"{k}={v}" for k, v in self.overrides.items())

    def to_dict(self) -> dict[str, Any]:
        return {
            "overrides": dict(self.overrides), "split": self.split, "peak_mb": self.peak_mb,
            "peak_stage": self.peak_stage, "total_s": self.total_s, "tokens_per_s": self.tokens_per_s,
            "mfu": self.mfu, "path": self.path,
        }


@dataclass(frozen=True)
class Rejection:
    """One rejected layout: the reason key it is counted under and the full message."""

    overrides: dict[str, Any]
    reason: str
    message: str


def row_of(outcome: Candidate | Rejection) -> dict[str, Any]:
    """One flat table row (CSV/Parquet) for an evaluated layout."""
    base = dict(outcome.overrides)
    if isinstance(outcome, Rejection):
        return {**base, "feasible": False, "reason": outcome.reason, "message": outcome.message}
    return {**base, "feasible": True, "split": outcome.split, "peak_mb": outcome.peak_mb,
            "total_s": outcome.total_s, "tokens_per_s": outcome.tokens_per_s, "mfu": outcome.mfu,
            "path": outcome.path}


def search_base(base: EstimatorConfig, space: Mapping[str, Any]) -> dict[str, Any]:
    """The base config as data for a sweep: the global batch held fixed (``num_micro_batches``
    dropped, ``global_batch_size`` = micro-batch · dp · micro-batches when the base states only the
    count), and the base's own pipeline split cleared when the sweep places layers itself.
    Sections the sweep does not change stay validated instances (``load_config`` keeps them)."""
    data: dict[str, Any] = {name: getattr(base, name) for name in type(base).model_fields}
    data["parallel"] = base.parallel.model_dump(mode="python")
    train = base.train.model_dump(mode="python")
    if train.get("global_batch_size") is None:
        train["global_batch_size"] = base.train.micro_batch_size * base.parallel.dp * base.num_micro_batches
    train.pop("num_micro_batches", None)
    data["train"] = train
    if {SPLIT_DIM, "parallel.pp", "parallel.vpp"} & set(space):
        data["parallel"] = {k: v for k, v in data["parallel"].items() if k not in SPLIT_FIELDS}
    return data


#: the hint an error on a field a layout overrides carries (as ``load_config`` words it)
OVERRIDE_HINT = "value set by an override"


def reason_of(exc: ConfigError) -> str:
    """The counting key of an invalid layout: the field whose rule it broke."""
    return f"invalid {exc.field or 'config'}"


def load_layout(base_data: Mapping[str, Any], layout: Layout | SkippedLayout) -> EstimatorConfig | Rejection:
    """The validated config of ``layout`` over ``base_data``, or why it is rejected (config rules)."""
    if isinstance(layout, SkippedLayout):
        return Rejection(dict(layout.overrides), layout.reason, layout.message)
    overrides = layout.as_dict()
    try:
        cfg = load_config(base_data, overrides)
    except ConfigError as exc:
        return Rejection(overrides, reason_of(exc), str(exc))
    if (broken := first_broken(cfg, SEARCH_RULES)) is not None:  # a layout the framework does not train
        error = ConfigError(broken[0], broken[1], hint=OVERRIDE_HINT if broken[0] in overrides else None)
        return Rejection(overrides, reason_of(error), str(error))
    return cfg


def finish(
    layout: Layout, cfg: EstimatorConfig, peak_mb: float, peak_stage: int, memory_margin_mb: float,
    path: str = "scalar",
) -> Candidate | Rejection:
    """Reject ``layout`` as OOM when its peak exceeds device memory minus the margin, else price
    its step time (scalar) into a :class:`Candidate`."""
    overrides = layout.as_dict()
    limit_mb = cfg.hardware.hbm_mb - memory_margin_mb
    if peak_mb > limit_mb:
        return Rejection(overrides, REASON_OOM, f"peak {peak_mb:.0f} MiB (stage {peak_stage}) > {limit_mb:.0f} MiB")
    perf = estimate_perf(cfg)
    return Candidate(overrides, peak_mb, perf.total, perf.tokens_per_s, perf.mfu, layout.split, peak_stage, path)


def evaluate(
    base_data: Mapping[str, Any], layout: Layout | SkippedLayout, memory_margin_mb: float = 0.0,
) -> Candidate | Rejection:
    """Price ``layout`` over ``base_data`` (see :func:`search_base`) on the scalar path, or say why
    it is rejected."""
    cfg = load_layout(base_data, layout)
    if isinstance(cfg, Rejection):
        return cfg
    assert isinstance(layout, Layout)
    mem = estimate_memory(cfg)
    return finish(layout, cfg, mem.peak_mb, mem.peak_stage, memory_margin_mb)
