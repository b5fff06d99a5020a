"""Kind ``recorded.results``: evaluates results recorded from another tool, runs nothing.

The data rows (e.g. the seed's table: measured peak HBM vs the reference tool's estimate per
config) become the result table as they are; an optional ``what_if`` adds a column that applies
the seed's proposed P1 defaults arithmetically to the recorded estimate
(``estimator.inputs.runtime_buffer.p1_what_if_mb``), so a case can show where
each config would land without re-running the reference tool.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from estimator.inputs.runtime_buffer import (
    SEED_SAFETY_BUFFER_MB,
    SEED_TP_SHARDABLE_OVERHEAD_MB,
    p1_what_if_mb,
)
from ndval.harness.kinds import KindError, KindParams, RunContext, register_kind
from ndval.harness.results import RECORDED, RunResult


class P1WhatIf(KindParams):
    """Seed §4.1 defaults applied to a recorded estimate (all sizes in MiB)."""

    estimate: str = Field("estimate_mb", description="column with the recorded estimate (MiB)")
    tp: str = Field("tp", description="column with the tensor-parallel degree")
    out: str = Field("what_if_mb", description="column to write")
    tp_shardable_overhead_mb: float = Field(SEED_TP_SHARDABLE_OVERHEAD_MB, ge=0, description="seed §4.1.2 default")
    safety_buffer_mb: float = Field(SEED_SAFETY_BUFFER_MB, ge=0, description="seed §4.1.1 default, scaled /tp")
    legacy_safety_buffer_mb: float = Field(SEED_SAFETY_BUFFER_MB, ge=0, description="the reference tool's flat buffer")


class RecordedParams(KindParams):
    tool: str = Field("reference tool", description="whose results the rows record (named in the sign-off: "
                                                     "recorded numbers are context, never evidence)")
    what_if: P1WhatIf | None = None


@register_kind("recorded.results", params=RecordedParams)
def run_recorded(ctx: RunContext[RecordedParams]) -> RunResult:
    """Recorded results of another tool against measurements, with an optional P1 what-if column."""
    params: RecordedParams = ctx.params
    table: list[dict[str, Any]] = [dict(r) for r in ctx.rows]
    if not table:
        raise KindError("recorded.results needs data rows")
    wi = params.what_if
    if wi:
        for row in table:
            if wi.estimate not in row or wi.tp not in row:
                raise KindError(f"what_if needs columns {wi.estimate!r} and {wi.tp!r} (row has {sorted(row)})")
            row[wi.out] = p1_what_if_mb(float(row[wi.estimate]), int(row[wi.tp]), wi.tp_shardable_overhead_mb,
                                        wi.safety_buffer_mb, wi.legacy_safety_buffer_mb)
    return RunResult(table=table, golden={"rows": table}, provenance=RECORDED, producer=params.tool)
