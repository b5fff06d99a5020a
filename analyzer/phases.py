"""Steps and phase scopes (overall / prefill / decode) of one rank, with a stated confidence.

Spec §2 facts this module follows: ``step_trace_time.csv`` ``Stage`` is a number (µs), **not** a phase label,
so a Stage/Phase column is used as a label only when its values are labels; vLLM-Ascend captures have no
``ProfilerStep`` and no mstx by default, so steps may have to be inferred from device-activity gaps.

Order of evidence for phases (first that applies wins):

1. ``override`` (the user's ``--phase``): the whole window read as that phase (seed §1 "人工指定");
2. ``labels``: a step table column whose values are ``prefill``/``decode`` labels;
3. ``annotations``: mstx / user / vLLM scope ranges whose names say prefill or decode;
4. ``bimodal``: two step-length modes (long = prefill, short = decode), gated by ``bimodalStepRatio``,
   ``bimodalSeparation`` and ``bimodalMinSteps``;
5. none: overall scope only, confidence low with the reasons.

Steps come from ``ProfilerStep#N`` markers, else vLLM model-step scopes, else device-activity gaps
(``inferredStepGapUs``), else (no trace) the rows of ``step_trace_time.csv``, else the capture window as one
step. The ``overall`` scope is the union of the steps when they come from markers / scopes / the CSV (events
outside them are profiler warm-up and start/stop, as in HTA and torch_npu), else the whole capture window
(seed §1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analyzer import timeline
from analyzer.ingest import events as ev
from analyzer.thresholds import Thresholds

Window = tuple[float, float]
PREFILL, DECODE = "prefill", "decode"
PHASES: tuple[str, ...] = (PREFILL, DECODE)
STEP_RE = re.compile(r"ProfilerStep#(\d+)")
PHASE_RE = re.compile(r"prefill|decode", re.IGNORECASE)
#: vLLM record_function scopes that wrap one model step (VLLM_CUSTOM_SCOPES_FOR_PROFILING=1; spec §2).
VLLM_STEP_RE = re.compile(r"^(execute_model|gpu_model_runner: ?forward|model_runner: ?forward|forward)$", re.IGNORECASE)
LABEL_COLUMNS: tuple[str, ...] = ("Phase", "Stage", "phase", "stage")
MARKER_SOURCE = "ProfilerStep markers"
SCOPE_SOURCE = "vLLM model-step scopes"
TABLE_SOURCE = "step_trace_time.csv rows (no trace: step spans laid end to end)"
NO_STEP_SOURCE = "none (no trace events and no step table)"


@dataclass(frozen=True)
class Step:
    """One step window; ``number`` is N of ``ProfilerStep#N`` (−1 when inferred)."""

    index: int
    number: int
    start_us: float
    end_us: float
    phase: str | None = None

    @property
    def dur_us(self) -> float:
        """Step length, µs."""
        return self.end_us - self.start_us

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {"index": self.index, "number": self.number, "start_us": round(self.start_us, 3),
                "end_us": round(self.end_us, 3), "dur_us": round(self.dur_us, 3), "phase": self.phase}


@dataclass(frozen=True)
class PhasePlan:
    """Steps, the phase of each, the scope windows, and how sure we are."""

    window: Window
    steps: tuple[Step, ...]
    step_source: str
    method: str
    confidence: str
    reason: str
    scopes: dict[str, tuple[Window, ...]] = field(default_factory=dict)
    override: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def dominant(self) -> str | None:
        """The phase with the most wall time (seed §1: overall is read as the dominant phase)."""
        if self.override:
            return self.override
        walls = {p: sum(e - s for s, e in w) for p, w in self.scopes.items() if p in PHASES}
        return max(walls, key=lambda p: walls[p]) if walls else None

    def phase_share_pct(self) -> dict[str, float]:
        """Wall-time share of each phase scope (background for before/after comparability)."""
        total = self.window[1] - self.window[0]
        return {p: 100.0 * sum(e - s for s, e in w) / total for p, w in self.scopes.items()
                if p in PHASES and total > 0}

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "window_us": [round(self.window[0], 3), round(self.window[1], 3)], "step_source": self.step_source,
            "method": self.method, "confidence": self.confidence, "reason": self.reason,
            "override": self.override, "dominant": self.dominant, "notes": list(self.notes),
            "phase_share_pct": {k: round(v, 2) for k, v in self.phase_share_pct().items()},
            "scopes": {k: [[round(a, 3), round(b, 3)] for a, b in v] for k, v in self.scopes.items()},
            "steps": [s.to_dict() for s in self.steps],
        }


def capture_window(events: pd.DataFrame) -> Window:
    """``[first start, last end)`` of all rows (µs, relative)."""
    if events.empty:
        return (0.0, 0.0)
    return (float(events["ts_us"].min()), float((events["ts_us"] + events["dur_us"]).max()))


def marker_steps(events: pd.DataFrame) -> list[Step]:
    """Steps from ``ProfilerStep#N`` rows (category ``step``), ordered by start."""
    rows = events[events["category"] == ev.STEP].sort_values("ts_us")
    out: list[Step] = []
    for name, ts, dur in zip(rows["name"], rows["ts_us"], rows["dur_us"], strict=True):
        m = STEP_RE.search(str(name))
        out.append(Step(len(out), int(m.group(1)) if m else -1, float(ts), float(ts + dur)))
    return out


def zero_length_notes(steps: list[Step], events: pd.DataFrame) -> list[str]:
    """A note when ProfilerStep markers have duration 0: a zero-length step holds no event, so the analysed
    window (the steps) is empty or short — stated with the counts, never a silent empty scope."""
    zero = [s for s in steps if s.end_us <= s.start_us]
    if not zero:
        return []
    if len(zero) < len(steps):
        return [f"{len(zero)} of {len(steps)} ProfilerStep markers have duration 0 (zero-length steps): they hold "
                "no events and add nothing to the analysed window"]
    return [f"all {len(steps)} ProfilerStep markers have duration 0 (zero-length steps): the analysed window (the "
            f"steps) holds none of the trace's {len(events):,} events, so nothing in it can be judged"]


def scope_steps(events: pd.DataFrame) -> list[Step]:
    """Steps from vLLM model-step scopes (annotation rows such as ``execute_model``)."""
    ann = events[(events["category"] == ev.ANNOTATION) & (events["side"] == ev.SIDE_HOST)]
    rows = ann[ev.matches(ann["name"], lambda v: bool(VLLM_STEP_RE.match(v.strip())))].sort_values("ts_us")
    return [Step(i, -1, float(t), float(t + d)) for i, (t, d) in enumerate(zip(rows["ts_us"], rows["dur_us"], strict=True))]


def table_steps(step_table: pd.DataFrame | None) -> list[Step]:
    """Steps from ``step_trace_time.csv`` rows when there is no trace: each step's device span
    (Computing + Communication(Not Overlapped) + Free, µs) laid end to end from 0."""
    cols = ("Computing", "Communication(Not Overlapped)", "Free")
    if step_table is None or step_table.empty or any(c not in step_table.columns for c in cols):
        return []
    spans = step_table.loc[:, list(cols)].apply(pd.to_numeric, errors="coerce").fillna(0.0).sum(axis=1).to_numpy()
    numbers = pd.to_numeric(step_table["Step"], errors="coerce").fillna(-1).astype(int).to_numpy()
    ends = np.cumsum(spans)
    return [Step(i, int(n), float(e - d), float(e)) for i, (n, d, e) in enumerate(zip(numbers, spans, ends, strict=True))]


def gap_steps(events: pd.DataFrame, min_gap_us: float) -> list[Step]:
    """Steps inferred from device-activity gaps: a device-idle gap ≥ ``min_gap_us`` separates two steps."""
    dev = ev.device_work(events)
    busy = timeline.from_events(dev)
    if busy.count < 2:
        return []
    gaps = busy.start_us[1:] - busy.end_us[:-1]
    breaks = np.flatnonzero(gaps >= min_gap_us)
    if breaks.size == 0:
        return []
    starts = np.concatenate([[busy.start_us[0]], busy.start_us[breaks + 1]])
    ends = np.concatenate([busy.end_us[breaks], [busy.end_us[-1]]])
    return [Step(i, -1, float(a), float(b)) for i, (a, b) in enumerate(zip(starts, ends, strict=True))]


def bimodal_split(durs_us: np.ndarray, th: Thresholds) -> tuple[np.ndarray | None, str]:
    """Two step-length modes? Returns (mask of long steps, reason).

    1-D two-means on ``log(dur)`` (exhaustive split of the sorted values, minimal within-mode sum of squares);
    accepted when ``mean(long)/mean(short) ≥ bimodalStepRatio`` and
    ``(mean log long − mean log short) / pooled std ≥ bimodalSeparation``.
    """
    n = durs_us.size
    if n < th.v("bimodalMinSteps"):
        return None, f"{n} step(s) < bimodalMinSteps {th.v('bimodalMinSteps'):g}: cannot show two modes"
    x = np.log(np.maximum(durs_us, 1e-9))
    order = np.argsort(x)
    xs = x[order]
    # within-mode sum of squares of every split k (left = xs[:k]) from prefix sums: SS = Σx² − (Σx)²/m
    k = np.arange(1, n)
    c1, c2 = np.cumsum(xs), np.cumsum(xs**2)
    left = c2[k - 1] - c1[k - 1] ** 2 / k
    right = (c2[-1] - c2[k - 1]) - (c1[-1] - c1[k - 1]) ** 2 / (n - k)
    ss_all = np.maximum(left + right, 0.0)
    best_k = int(k[np.argmin(ss_all)])
    best_ss = float(ss_all[best_k - 1])
    lo, hi = xs[:best_k], xs[best_k:]
    ratio = float(np.exp(hi).mean() / np.exp(lo).mean())
    pooled = float(np.sqrt(best_ss / max(1, n - 2)))
    sep = float((hi.mean() - lo.mean()) / max(pooled, 1e-9))
    desc = f"long/short mean ratio {ratio:.2f}, separation {min(sep, 1e6):.1f} pooled std"
    if ratio < th.v("bimodalStepRatio") or sep < th.v("bimodalSeparation"):
        return None, f"no step-length bimodality ({desc}; needs ratio ≥ {th.v('bimodalStepRatio'):g} and separation ≥ {th.v('bimodalSeparation'):g})"
    long_mask = np.zeros(n, dtype=bool)
    long_mask[order[best_k:]] = True
    return long_mask, f"step-length bimodality: {int(long_mask.sum())} long (prefill) / {int((~long_mask).sum())} short (decode) steps, {desc}"


def _label_of(values: pd.Series) -> dict[str, str] | None:
    """Step -> phase when the column holds labels; None when values are numbers (e.g. Stage in µs)."""
    text = values.dropna().astype(str).str.strip().str.lower()
    if text.empty or not text.str.fullmatch(r"prefill|decode|p|d").all():
        return None
    return {"p": PREFILL, "d": DECODE, PREFILL: PREFILL, DECODE: DECODE}  # mapping applied by caller


def _labels_from_table(table: pd.DataFrame | None, steps: list[Step]) -> tuple[list[Step] | None, str]:
    if table is None or table.empty:
        return None, "no step table"
    for col in LABEL_COLUMNS:
        if col not in table.columns:
            continue
        mapping = _label_of(table[col])
        if mapping is None:
            return None, f"step_trace_time.csv column {col!r} holds numbers (µs), not phase labels (spec §2)"
        by_step = {str(s).strip(): mapping[str(v).strip().lower()] for s, v in zip(table["Step"], table[col], strict=True)}
        labelled = [Step(s.index, s.number, s.start_us, s.end_us, by_step.get(str(s.number))) for s in steps]
        if any(s.phase for s in labelled):
            return labelled, f"phase labels from column {col!r}"
    return None, "no Stage/Phase label column"


def _labels_from_annotations(events: pd.DataFrame, steps: list[Step]) -> tuple[list[Step] | None, list[Window], list[Window], str]:
    ann = events[events["category"] == ev.ANNOTATION]
    ann = ann[ev.matches(ann["name"], lambda v: bool(PHASE_RE.search(v)))]
    if ann.empty:
        return None, [], [], "no mstx / vLLM scope ranges naming prefill or decode"
    kind = pd.Series(np.where(ev.matches(ann["name"], lambda v: "prefill" in v.lower()), PREFILL, DECODE),
                     index=ann.index)
    spans = {p: timeline.from_events(ann[kind == p]) for p in PHASES}
    out = []
    for s in steps:
        cover = {p: timeline.clip(spans[p], s.start_us, s.end_us).length_us for p in PHASES}
        best = max(cover, key=lambda p: cover[p])
        out.append(Step(s.index, s.number, s.start_us, s.end_us, best if cover[best] > 0 else None))
    wins = {p: list(zip(spans[p].start_us.tolist(), spans[p].end_us.tolist(), strict=True)) for p in PHASES}
    return out, wins[PREFILL], wins[DECODE], f"{len(ann)} annotation range(s) (mstx / vLLM scopes) naming the phase"


def _merged(windows: list[Window]) -> tuple[Window, ...]:
    if not windows:
        return ()
    arr = np.asarray(windows, dtype="float64")
    u = timeline.union(arr[:, 0], arr[:, 1])
    return tuple(zip(u.start_us.tolist(), u.end_us.tolist(), strict=True))


def plan_phases(events: pd.DataFrame, th: Thresholds, step_table: pd.DataFrame | None = None,
                override: str | None = None) -> PhasePlan:
    """Find steps and phase scopes of one rank's event table."""
    if override is not None and override not in PHASES:
        raise ValueError(f"phase override must be one of {PHASES}, got {override!r}")
    window = capture_window(events)
    if events.empty and table_steps(step_table):
        steps = table_steps(step_table)
        window = (steps[0].start_us, steps[-1].end_us)
        step_source = TABLE_SOURCE
    else:
        steps, step_source = marker_steps(events), MARKER_SOURCE
    if not steps:
        steps, step_source = scope_steps(events), SCOPE_SOURCE
    if not steps:
        steps, step_source = gap_steps(events, th.v("inferredStepGapUs")), "inferred from device-activity gaps (no step markers)"
    notes: list[str] = zero_length_notes(steps, events) if step_source == MARKER_SOURCE else []
    if not steps and events.empty:  # tables only, no step table: no window to lay a step on (not one 0 µs step)
        step_source = NO_STEP_SOURCE
    elif not steps:
        steps, step_source = [Step(0, -1, *window)], "capture window (no step markers and no step-separating gaps)"
    if len(steps) == 1:
        notes.append("only one step identified: per-step indicators have limited confidence (seed §8)")
    if step_source in (MARKER_SOURCE, SCOPE_SOURCE, TABLE_SOURCE):
        # the profiler's active steps are the analysed window; events outside them are warm-up / profiler
        # start-stop (HTA and torch_npu's step_trace_time use the steps too)
        scopes: dict[str, tuple[Window, ...]] = {"overall": _merged([(s.start_us, s.end_us) for s in steps])}
    else:
        scopes = {"overall": (window,)}
    if override:
        scopes[override] = scopes["overall"]
        return PhasePlan(window, tuple(steps), step_source, "override", "high",
                         f"phase set by the user: the whole window is read as {override}", scopes, override, tuple(notes))
    reasons = []
    labelled, why = _labels_from_table(step_table, steps)
    method = "labels"
    if labelled is None:
        reasons.append(why)
        labelled, pre_w, dec_w, why = _labels_from_annotations(events, steps)
        method = "annotations"
        if labelled is not None:
            if pre_w:
                scopes[PREFILL] = _merged(pre_w)
            if dec_w:
                scopes[DECODE] = _merged(dec_w)
            return PhasePlan(window, tuple(labelled), step_source, method, "high", why, scopes, None, tuple(notes))
        reasons.append(why)
        mask, why = bimodal_split(np.array([s.dur_us for s in steps]), th)
        if mask is None:
            reasons.append(why)
            return PhasePlan(window, tuple(steps), step_source, "none", "low",
                             "no phase split: " + "; ".join(reasons), scopes, None, tuple(notes))
        labelled = [Step(s.index, s.number, s.start_us, s.end_us, PREFILL if m else DECODE)
                    for s, m in zip(steps, mask, strict=True)]
        method = "bimodal"
    for p in PHASES:
        w = [(s.start_us, s.end_us) for s in labelled if s.phase == p]
        if w:
            scopes[p] = _merged(w)
    conf = "high" if method == "labels" else "medium"
    reason = why if method == "labels" else f"{why} (inferred, not labelled: " + "; ".join(reasons) + ")"
    return PhasePlan(window, tuple(labelled), step_source, method, conf, reason, scopes, None, tuple(notes))


