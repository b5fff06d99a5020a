"""Kind ``estimator.moe_layer``: one MoE layer's forward and backward per row, beside a layer benchmark.

Each row is one case of a MoE-layer benchmark (Megatron-Core's ``moe_perf``:
``validation_cases/recorded/mcore_moe_layer_h100.csv``); ``estimator.experiments.moe_layer`` builds its
one-layer config and prices the MoE block. The table carries the estimate (``forward_ms``,
``backward_ms``), the measurement (``measured_forward_ms``, ``measured_backward_ms``) and the GEMM
efficiency floor the measurement implies per pass (``gemm_floor_forward``, ``gemm_floor_backward``:
``estimator.experiments.moe_layer.gemm_efficiency_floor`` against the preset's dense peak).
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field

from ndval.core.units import MS_PER_S
from ndval.harness import subjects
from ndval.harness.kinds import KindError, KindParams, RunContext, register_kind
from ndval.harness.kinds.estimator.common import estimator_api, requires_api
from ndval.harness.results import RunResult


class MoELayerParams(KindParams):
    """Columns of the benchmark rows (the config columns are ``estimator.experiments.moe_layer.layer_config``'s)."""

    label: str = Field("case", description="data column naming each row")
    measured_forward: str = Field("forward_ms", description="data column: measured forward ms")
    measured_backward: str = Field("backward_ms", description="data column: measured backward ms")
    options: dict[str, Any] = Field(default_factory=dict, description="estimator options merged into every row")
    keep_columns: list[str] = Field(default_factory=list, description="data columns copied into the result table")


@register_kind("estimator.moe_layer", params=MoELayerParams, requires=requires_api("load_config", "ConfigError"))
def run_moe_layer(ctx: RunContext[MoELayerParams]) -> RunResult:
    """One MoE layer per row: estimated forward / backward ms beside the measured ones and the GEMM floors."""
    params: MoELayerParams = ctx.params
    est = estimator_api("load_config", "ConfigError")
    subject = ctx.subject or subjects.resolve(subjects.BUILTIN)
    if not subject.builtin:
        pytest.skip(f"subject {subject.name!r}: the MoE-layer kind prices ndval's own operators (use --subject ndval)")
    from estimator.experiments import moe_layer

    table: list[dict[str, Any]] = []
    for i, row in enumerate(ctx.rows):
        label = str(row.get(params.label) or f"row{i}")
        try:
            raw = moe_layer.layer_config(row)
            raw["options"] = dict(params.options)
            cfg = est.load_config(raw)
        except est.ConfigError as exc:
            raise KindError(f"row {label!r}: {exc}") from None
        t = moe_layer.moe_layer_time(cfg)
        peak = moe_layer.gemm_peak_flops_per_s(cfg)
        out: dict[str, Any] = {"config": label, "forward_ms": t.forward_s * MS_PER_S,
                               "backward_ms": t.backward_s * MS_PER_S,
                               "exchange_forward_ms": t.exchange_forward_s * MS_PER_S}
        for pass_, column, flops in (("forward", params.measured_forward, t.grouped_gemm_flops_forward),
                                     ("backward", params.measured_backward, 2.0 * t.grouped_gemm_flops_forward)):
            measured = row.get(column)
            if measured in (None, ""):
                raise KindError(f"row {label!r}: column {column}: the measured {pass_} time is empty")
            out[f"measured_{pass_}_ms"] = float(measured)
            out[f"gemm_floor_{pass_}"] = moe_layer.gemm_efficiency_floor(flops, float(measured) / MS_PER_S, peak)
        out |= {c: row[c] for c in params.keep_columns if c in row}
        table.append(out)
    return RunResult(table=table, golden=None, values={"n_rows": len(table)}, producer=subject.name)
