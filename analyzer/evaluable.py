"""Evidence before verdict: whether a scope carries enough device evidence to be scored at all.

A bottleneck score is a reading of device and host time shares; it means something only when the device
timeline is there and large enough. :func:`assess` says, per scope, whether it is *evaluable*, and when it is
not, every reason, each naming the measured fact and the threshold (``thresholds_default.yaml``, group
``evidence``; value, rationale and source there):

- the accelerator is not one the gates were written for (:data:`CALIBRATED_ACCELERATORS`);
- no device activity (no device work event and no device table such as ``step_trace_time.csv``): a CPU-only
  trace, or tables without a timeline;
- fewer device work events than ``minDeviceEvents`` (when the device time comes from the events);
- a window shorter than ``minWindowUs``;
- fewer steps than ``minSteps``.

A scope that is not evaluable gets no scored verdict (kind ``none``, no candidates, no advice) and states the
reasons; its indicators (the partial facts) are still reported.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer.indicators import IndicatorSet
from analyzer.thresholds import Thresholds, passes

#: accelerators whose timelines the seed's gates and weights apply to: Ascend NPUs (the seed's own device)
#: and CUDA / ROCm GPUs (the same shares under Holistic Trace Analysis' definitions, profiling-formats §3).
#: Meta MTIA traces are read (their device time and shares are reported, HTA reads them too) but no gate
#: was ever stated or checked for that device, so no bottleneck is scored on it.
CALIBRATED_ACCELERATORS: tuple[str, ...] = ("npu", "gpu")
ACCELERATOR_NAMES: dict[str, str] = {"npu": "Ascend NPU", "gpu": "CUDA / ROCm GPU", "mtia": "Meta MTIA"}
#: how a not-evaluable summary begins.
NOT_EVALUABLE = "not evaluable"


@dataclass(frozen=True)
class Evaluability:
    """Whether a scope can be scored, why not, and the facts the rules read."""

    evaluable: bool
    reasons: tuple[str, ...]
    facts: dict[str, Any]

    @property
    def summary(self) -> str:
        """``not evaluable: reason; reason`` (empty when evaluable)."""
        return "" if self.evaluable else f"{NOT_EVALUABLE}: " + "; ".join(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {"evaluable": self.evaluable, "reasons": list(self.reasons), "facts": dict(self.facts)}


def _gate_text(th: Thresholds, key: str) -> str:
    """``minWindowUs >= 1000 us`` (the rationale is in the thresholds table of every report)."""
    return f"{key} {th[key].describe()} not reached"


def assess(ind: IndicatorSet, th: Thresholds, accelerator: str, device_table: bool) -> Evaluability:
    """The evaluability of one scope from its indicators (``device_table``: device time comes from a profiler
    table such as ``step_trace_time.csv`` rather than from the events)."""
    n_dev, wall, steps = ind.value("device_op_count") or 0.0, ind.value("wall_us"), ind.value("step_count") or 0.0
    n_events = ind.value("event_count") or 0.0
    facts: dict[str, Any] = {"accelerator": accelerator, "device_events": int(n_dev), "events": int(n_events),
                             "window_us": None if wall is None else round(wall, 3), "steps": int(steps),
                             "device_time_from_table": device_table}
    reasons: list[str] = []
    if accelerator not in CALIBRATED_ACCELERATORS:
        reasons.append(f"accelerator {ACCELERATOR_NAMES.get(accelerator, accelerator)}: the gates and weights are "
                       f"stated for {', '.join(ACCELERATOR_NAMES[a] for a in CALIBRATED_ACCELERATORS)} only — its device "
                       "time and shares are reported, no bottleneck is scored")
    if n_dev == 0 and not device_table:
        what = (f"a CPU-only capture: {int(n_events):,} host events, 0 device events" if n_events
                else "no event in the analysed window: no trace timeline, or zero-length steps")
        reasons.append(f"no device activity ({what}): there is nothing on the device to judge")
    elif not device_table and not passes(n_dev, th["minDeviceEvents"]):
        reasons.append(f"only {int(n_dev):,} device work events: gate {_gate_text(th, 'minDeviceEvents')}")
    if wall is not None and not passes(wall, th["minWindowUs"]):
        reasons.append(f"window {wall:,.2f} µs: gate {_gate_text(th, 'minWindowUs')}")
    if (wall is not None or not device_table) and not passes(steps, th["minSteps"]):
        reasons.append(f"{int(steps)} steps: gate {_gate_text(th, 'minSteps')}")
    return Evaluability(not reasons, tuple(reasons), facts)
