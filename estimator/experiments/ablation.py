"""The seed's ablations EXP-1..EXP-4 (seed §4.3.1), each returning a direction table.

* EXP-1: EP_COMM removed from time_sum *and* pipeline time (``part_coefficients.EP_COMM = 0``):
  how BUBBLE moves when EP is put back. For 1F1B with p = 2 and no per-step tail, BUBBLE =
  min(s_i) grows or stays when EP is added, never shrinks (seed §2.3 derivation).
* EXP-2: the DP hack (``comm[DP] = 0``) removed: how BUBBLE moves.
* EXP-3: EP fixed, DP varied through the world size: how PP_WAIT moves.
* EXP-4: the straggler stage of every config: does it move with EP?

Every experiment takes a list of ``(label, config dict)`` and the base options (e.g.
``presets.legacy()``, the reference before the fixes, as the seed ran them); configs are dicts so
the experiments can change options and degrees without touching the caller's objects.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from estimator.config.schema import load_config
from estimator.perf.parts import PerfReport, estimate_perf

Labeled = tuple[str, dict[str, Any]]

#: relative change below which a direction is reported as "=" (float noise)
SAME_REL = 1e-12


def direction(before: float, after: float) -> str:
    """``up`` / ``down`` / ``same`` for a change from ``before`` to ``after`` (relative tolerance 1e-12)."""
    if abs(after - before) <= SAME_REL * max(abs(before), abs(after), 1e-300):
        return "same"
    return "up" if after > before else "down"


def legacy_seconds() -> dict[str, Any]:
    """``presets.legacy()`` with EP comm priced in seconds: the pre-fix model whose BUBBLE and
    PP_WAIT are in one unit, so the ablations' directions are about time, not bytes."""
    from estimator.config import presets

    return {**presets.legacy(), "convert_ep_comm_to_time": True}


def with_options(cfg: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of ``cfg`` with ``options`` merged into its ``options`` (``options`` win)."""
    out = copy.deepcopy(cfg)
    out["options"] = {**out.get("options", {}), **options}
    return out


def perf(cfg: dict[str, Any]) -> PerfReport:
    """``estimate_perf`` of a config dict."""
    return estimate_perf(load_config(cfg))


@dataclass(frozen=True)
class Row:
    """One line of a direction table."""

    label: str
    ep: int
    tp: int
    dp: int
    metric: str
    before: float
    after: float
    direction: str
    straggler_before: int
    straggler_after: int

    def as_list(self) -> list[Any]:
        return [self.label, self.ep, self.tp, self.dp, self.metric, self.before, self.after, self.direction,
                self.straggler_before, self.straggler_after]


HEADERS = ["config", "ep", "tp", "dp", "metric", "before", "after", "direction", "straggler before", "after"]


def _row(label: str, cfg: dict[str, Any], metric: str, before: PerfReport, after: PerfReport, part: str) -> Row:
    p = cfg["parallel"]

    def get(r: PerfReport) -> float:
        return r.perf_parts[part] if part in before.perf_parts else r.real_parts[part]

    return Row(label, p.get("ep", 1), p.get("tp", 1), p.get("dp", 1), metric, get(before), get(after),
               direction(get(before), get(after)), before.straggler_stage, after.straggler_stage)


def exp1_ep_comm_removed(configs: Sequence[Labeled], base: dict[str, Any]) -> list[Row]:
    """EXP-1: BUBBLE without EP_COMM (before) -> with EP_COMM (after), per config."""
    rows = []
    for label, cfg in configs:
        with_ep = with_options(cfg, base)
        coeffs = {**(with_ep["options"].get("part_coefficients") or {}), "EP_COMM": 0.0}
        without = with_options(with_ep, {"part_coefficients": coeffs})
        rows.append(_row(label, cfg, "BUBBLE", perf(without), perf(with_ep), "BUBBLE"))
    return rows


def exp2_dp_hack_removed(configs: Sequence[Labeled], base: dict[str, Any]) -> list[Row]:
    """EXP-2: BUBBLE with the DP hack (before) -> without it (after), per config."""
    rows = []
    for label, cfg in configs:
        hacked = with_options(cfg, {**base, "dp_comm_zero_hack": True})
        real = with_options(cfg, {**base, "dp_comm_zero_hack": False})
        rows.append(_row(label, cfg, "BUBBLE", perf(hacked), perf(real), "BUBBLE"))
    return rows


def dp_fits_ep(parallel: dict[str, Any], dp: int) -> bool:
    """Whether ``dp`` is a valid layout for the fixed EP: ``ep·etp`` divides ``dp·tp·cp`` (spec §3)."""
    p = parallel
    return bool((dp * p.get("tp", 1) * p.get("cp", 1)) % (p.get("ep", 1) * (p.get("etp") or 1)) == 0)


def exp3_dp_varied(cfg: dict[str, Any], dps: Sequence[int], base: dict[str, Any]) -> list[Row]:
    """EXP-3: EP fixed, DP varied (the world size follows): PP_WAIT from one DP to the next.

    A DP that is no valid layout for the fixed EP (:func:`dp_fits_ep`) is left out; the row labelled
    ``dp=X`` compares the previous valid DP (``before``) with ``X`` (``after``)."""
    reports = []
    for dp in dps:
        c = with_options(cfg, base)
        if not dp_fits_ep(c["parallel"], dp):
            continue
        c["parallel"] = {**c["parallel"], "dp": dp}
        p = c["parallel"]
        world = dp * p.get("tp", 1) * p.get("pp", 1) * p.get("cp", 1)
        hw = c.get("hardware")
        c["hardware"] = {**hw, "devices": world} if isinstance(hw, dict) else {"preset": hw, "devices": world}
        c["train"] = {k: v for k, v in c["train"].items() if k != "global_batch_size"}
        reports.append((f"dp={dp}", c, perf(c)))
    rows = []
    for (_, _, r0), (label, c1, r1) in itertools.pairwise(reports):
        rows.append(_row(label, c1, "PP_WAIT", r0, r1, "PP_WAIT"))
    return rows


def exp4_straggler(configs: Sequence[Labeled], base: dict[str, Any]) -> list[list[Any]]:
    """EXP-4: straggler stage and per-stage times (per micro-batch) of each config."""
    out = []
    for label, cfg in configs:
        c = with_options(cfg, base)
        r = perf(c)
        p = c["parallel"]
        out.append([label, p.get("ep", 1), p.get("tp", 1), p.get("dp", 1), r.straggler_stage,
                    " / ".join(f"{s:.4g}" for s in r.stage_times_s)])
    return out


EXP4_HEADERS = ["config", "ep", "tp", "dp", "straggler stage", "stage times per micro-batch"]


def format_rows(rows: Sequence[Row]) -> str:
    """A direction table (tabulate)."""
    from tabulate import tabulate

    return tabulate([r.as_list() for r in rows], headers=HEADERS, floatfmt=".4g")
