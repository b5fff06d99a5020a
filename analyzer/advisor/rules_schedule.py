"""Schedule rules: synchronize-stream co-occurrence, GC pauses, conjectured-GC gaps, fusible operator sequences.

Sources (msprof-analyze 26.2.0, ``msprof_analyze/advisor/``): ``analyzer/schedule/synchronize_stream/
synchronize_stream_checker.py`` + ``rules/en/synchronize.yaml``; ``analyzer/schedule/gc/gc_checker.py`` +
``rules/en/gc.yaml``; ``analyzer/schedule/conjectured_gc/conjectured_gc_checker.py`` + ``rules/en/conjectured_gc.yaml``
(free events from ``dataset/timeline_op_collector/timeline_op_collector.py`` ``FreeEventsCollector``);
``analyzer/schedule/fusible_ops/fusible_operator_checker.py`` + ``rules/en/fusible_operator.yaml``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from analyzer.advisor import kernels as K
from analyzer.advisor.finding import Finding, Rule
from analyzer.advisor.inputs import AdvisorInput
from analyzer.gains import EMPIRICAL, EMPIRICAL_NOTE, Gain
from analyzer.ingest import events as ev
from analyzer.thresholds import Thresholds, passes

_SRC = "msprof-analyze 26.2.0 advisor/"
SYNC_NAME, LAUNCH_NAME = "AscendCL@aclrtSynchronizeStream", "Node@launch"
SYNC = Rule(
    "advisor.sync-stream", "SynchronizeStream right after most launches", "schedule",
    ("trace_view.json host events: AscendCL@aclrtSynchronizeStream*, Node@launch (order, dur)",),
    ("advisorSyncCoOccurrence",),
    _SRC + "analyzer/schedule/synchronize_stream/synchronize_stream_checker.py, rules/en/synchronize.yaml",
    "Check ASCEND_LAUNCH_BLOCKING: when it is 1, unset it (every launch then waits for the device)",
    "Re-capture: the co-occurrence ratio falls under the limit and host time per step drops",
    "Without launch blocking, device errors surface later, at the next synchronisation")
GC = Rule(
    "advisor.gc", "Python garbage-collection pauses", "schedule",
    ("trace_view.json: GC events (torch_npu gc_detect_threshold)",), ("advisorGcMinUs",),
    _SRC + "analyzer/schedule/gc/gc_checker.py, rules/en/gc.yaml",
    "Release references early and avoid cycles; raise the collection threshold (gc.set_threshold) or gc.freeze() "
    "after model set-up; gc.disable() only as a stop-gap",
    "Re-capture with gc_detect_threshold: fewer / shorter GC events and steadier step times",
    "Disabling GC lets cyclic garbage accumulate: watch host memory")
CONJECTURED_GC = Rule(
    "advisor.conjectured-gc", "Long device-free gaps with no host activity (GC suspected)", "schedule",
    ("trace_view.json: Overlap Analysis 'Free' events, AscendCL@* host events",),
    ("advisorGcFreeMinUs", "advisorGcAclRatePerUs", "advisorGcAclTimeRatio"),
    _SRC + "analyzer/schedule/conjectured_gc/conjectured_gc_checker.py, rules/en/conjectured_gc.yaml",
    "Re-capture with torch_npu's GC detection (experimental_config gc_detect_threshold) to confirm; then as for GC "
    "pauses",
    "The gap is gone, or GC events appear inside it",
    "The gap can also be data loading or a host-side stall outside CANN")
FUSIBLE = Rule(
    "advisor.fusible-sequences", "Repeated operator sequences worth fusing", "schedule",
    ("kernel_details.csv: Name, Input/Output Shapes, Start Time(us), Duration(us), aicore_time(us), "
     "aic/aiv mte2 time, aic_fixpipe_time, aiv_mte3_time, Accelerator Core",),
    ("advisorFusibleMinLen", "advisorFusibleMaxLen", "advisorFusibleHostRatio", "advisorFusibleMteRatio",
     "advisorFusibleDurationRatio", "advisorFusibleCount", "advisorTopGroups"),
    _SRC + "analyzer/schedule/fusible_ops/fusible_operator_checker.py, rules/en/fusible_operator.yaml",
    "Fuse the listed sequences (a fused kernel, torch.compile / graph mode, or an existing fused API)",
    "Re-capture: the sequence's occurrences and its wall time per occurrence fall",
    "A custom fused kernel must be maintained across CANN versions; check numerics", subject="sequence")


def _rows_named(events: pd.DataFrame, test: Callable[[str], bool], side: str | None = ev.SIDE_HOST) -> pd.DataFrame:
    """The rows whose name passes ``test`` (and on ``side``): the name test runs once per distinct name and only
    the few matching rows are copied (the event table can hold millions)."""
    idx = np.flatnonzero(ev.matches(events["name"], test))
    if side is not None and len(idx):
        idx = idx[(events["side"].to_numpy()[idx] == side)]
    return events.take(idx)


def _host_named(events: pd.DataFrame, prefix: str) -> pd.DataFrame:
    return _rows_named(events, lambda v: v.startswith(prefix))


def _is_gc(name: str) -> bool:
    """A GC event: torch_npu's ``GC`` rows (gc_detect_threshold), Python's ``GC ...`` / ``Python GC``."""
    return name.lower() in ("gc", "python gc") or name.startswith("GC ")


def sync_stream(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """co-occurrence = (# SynchronizeStream directly preceded by a Node@launch, in time order) / # Node@launch."""
    sync, launch = _host_named(inp.events, SYNC_NAME), _host_named(inp.events, LAUNCH_NAME)
    if sync.empty or launch.empty:
        return None
    ts = np.concatenate([sync["ts_us"].to_numpy(dtype="float64"), launch["ts_us"].to_numpy(dtype="float64")])
    is_sync = np.concatenate([np.ones(len(sync), bool), np.zeros(len(launch), bool)])
    order = np.argsort(ts, kind="stable")
    seq = is_sync[order]
    co = int((seq[1:] & ~seq[:-1]).sum())
    ratio = co / len(launch)
    if not passes(ratio, th["advisorSyncCoOccurrence"]):
        return None
    sync_us = float(sync["dur_us"].sum())
    return Finding(SYNC, f"{len(sync)} SynchronizeStream and {len(launch)} Node@launch, co-occurrence {ratio:.4f}",
                   ("synchronize_stream", "node_launch", "co_occurrences", "ratio", "sync_us"),
                   ((len(sync), len(launch), co, round(ratio, 4), sync_us),), sync_us)


def _removable_gain(gain_id: str, time_us: float, window_us: float | None, th: Thresholds, what: str) -> Gain | None:
    if not window_us:
        return None
    pct = 100.0 * time_us / window_us
    return Gain(gain_id, pct, th.v("gainLowFraction") * pct, pct, "medium", True,
                f"{what} {time_us:,.0f} µs / window {window_us:,.0f} µs = {pct:.2f} %",
                "the pause is removed entirely (upper bound); the low end is gainLowFraction of it")


def gc_pauses(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """GC events lasting at least ``advisorGcMinUs``."""
    gc = _rows_named(inp.events, _is_gc, side=None)
    long = gc[gc["dur_us"].to_numpy() >= th.v("advisorGcMinUs")]
    if long.empty:
        return None
    long = long.sort_values("dur_us", ascending=False)
    rows = tuple((float(t), float(d), int(s)) for t, d, s in
                 zip(long["ts_us"], long["dur_us"], long["step"], strict=True))[: int(th.v("advisorTopGroups"))]
    total = float(long["dur_us"].sum())
    return Finding(GC, f"{len(long)} GC pauses ≥ {th.v('advisorGcMinUs'):g} µs, {total / 1000:.3f} ms in total",
                   ("ts_us", "dur_us", "step"), rows, total, gain=_removable_gain("gc", total, inp.window_us, th, "GC"))


def conjectured_gc(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Free gaps over ``advisorGcFreeMinUs`` holding fewer AscendCL events than ``advisorGcAclRatePerUs`` per µs
    and less than ``advisorGcAclTimeRatio`` of their time in them; only without recorded GC events and with a
    CANN layer (msprof-analyze skips otherwise)."""
    e = inp.events
    if len(_rows_named(e, _is_gc, side=None)):
        return None
    free = _rows_named(e, lambda v: v == "Free", side=None)
    free = free[free["sub"] == "overlap_analysis"]
    free = free[free["dur_us"].to_numpy() > th.v("advisorGcFreeMinUs")]
    acl = _host_named(e, "AscendCL@")
    if free.empty or acl.empty:
        return None
    a0, a1 = acl["ts_us"].to_numpy(dtype="float64"), (acl["ts_us"] + acl["dur_us"]).to_numpy(dtype="float64")
    rows = []
    for t, d in zip(free["ts_us"].to_numpy(dtype="float64"), free["dur_us"].to_numpy(dtype="float64"), strict=True):
        inside = (a1 >= t) & (a0 <= t + d)
        n, busy = int(inside.sum()), float((a1[inside] - a0[inside]).sum())
        if busy / d < th.v("advisorGcAclTimeRatio") and n / d < th.v("advisorGcAclRatePerUs"):
            rows.append((t, d, n, busy))
    if not rows:
        return None
    total = sum(r[1] for r in rows)
    return Finding(CONJECTURED_GC, f"{len(rows)} free gap(s) of {total / 1000:.3f} ms with almost no host activity",
                   ("ts_us", "free_us", "acl_events", "acl_us"), tuple(rows), total,
                   gain=_removable_gain("conjectured-gc", total, inp.window_us, th, "suspected GC gaps"))


def _codes(kd: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    key = K.text(kd, "Name") + "|" + K.text(kd, "Input Shapes") + "|" + K.text(kd, "Output Shapes")
    codes, uniques = pd.factorize(key)
    return codes.astype(np.int64), [str(u) for u in uniques]


def _fusible_arrays(kd: pd.DataFrame) -> dict[str, np.ndarray]:
    kd = kd.iloc[np.argsort(K.numeric(kd, "Start Time(us)"), kind="stable")]
    core, name = K.text(kd, "Accelerator Core").to_numpy(), K.text(kd, "Name").str.lower().to_numpy()
    skip = np.isin(core, ["HCCL", "COMMUNICATION", "AI_CPU"])
    for prefix in ("hcom", "lccl", "lcoc"):
        skip |= np.char.startswith(name.astype(str), prefix)
    nz = np.nan_to_num
    mte = (np.maximum(nz(K.numeric(kd, "aic_mte2_time(us)")), nz(K.numeric(kd, "aiv_mte2_time(us)")))
           + np.maximum(nz(K.numeric(kd, "aic_fixpipe_time(us)")), nz(K.numeric(kd, "aiv_mte3_time(us)"))))
    codes, names = _codes(kd)
    return {"start": nz(K.numeric(kd, "Start Time(us)")), "dur": nz(K.numeric(kd, "Duration(us)")), "mte": mte,
            "core_us": nz(K.numeric(kd, "aicore_time(us)")), "skip": skip, "codes": codes,
            "names": np.array(names, dtype=object)}


def _windows(a: dict[str, np.ndarray], length: int) -> pd.DataFrame:
    """Every run of ``length`` consecutive kernels with no HCCL / AICPU kernel in it: key, wall, npu, mte, flags."""
    n = len(a["dur"]) - length + 1
    if n <= 0:
        return pd.DataFrame()
    idx = np.arange(n)[:, None] + np.arange(length)[None, :]
    ok = ~a["skip"][idx].any(axis=1)
    idx = idx[ok]
    wall = a["start"][idx[:, -1]] + a["dur"][idx[:, -1]] - a["start"][idx[:, 0]]
    npu, mte, core = a["dur"][idx].sum(1), a["mte"][idx].sum(1), a["core_us"][idx].sum(1)
    keys = [tuple(r) for r in a["codes"][idx]]
    return pd.DataFrame({"key": keys, "first": idx[:, 0], "wall": wall, "npu": npu, "mte": mte, "core": core})


def fusible_sequences(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Runs of ``advisorFusibleMinLen + 1`` .. ``advisorFusibleMaxLen`` kernels that are host bound (npu / wall
    under ``advisorFusibleHostRatio``) or MTE bound (mte / aicore over ``advisorFusibleMteRatio``), occurring more
    than ``advisorFusibleCount`` times, and (wall share over ``advisorFusibleDurationRatio`` of the kernel span or
    MTE bound). A sequence contained in a longer kept one is dropped."""
    kd = inp.kernels
    if kd is None or len(kd) < 3 or "Start Time(us)" not in kd.columns:
        return None
    a = _fusible_arrays(kd)
    span = float((a["start"] + a["dur"]).max() - a["start"].min()) or 1.0
    found: list[tuple[tuple[int, ...], pd.Series]] = []
    for length in range(int(th.v("advisorFusibleMinLen")) + 1, int(th.v("advisorFusibleMaxLen")) + 1):
        w = _windows(a, length)
        if w.empty:
            continue
        w["host"] = [passes(float(x), th["advisorFusibleHostRatio"]) for x in w["npu"] / w["wall"].where(w["wall"] > 0)]
        w["mte_b"] = [c > 0 and passes(float(m / c), th["advisorFusibleMteRatio"]) for m, c in zip(w["mte"], w["core"], strict=True)]
        w = w[w["host"] | w["mte_b"]]
        g = w.groupby("key", sort=False).agg(wall=("wall", "sum"), npu=("npu", "sum"), n=("wall", "size"),
                                            mte_b=("mte_b", "any"), host=("host", "any"), first=("first", "min"))
        keep = [passes(float(n), th["advisorFusibleCount"])
                and (bool(m) or passes(float(wall) / span, th["advisorFusibleDurationRatio"]))
                for n, m, wall in zip(g["n"], g["mte_b"], g["wall"], strict=True)]
        found.extend((tuple(k), r) for (k, r), ok in zip(g.iterrows(), keep, strict=True) if ok)  # type: ignore[arg-type]
    found.sort(key=lambda kr: -float(kr[1]["wall"]))
    kept: list[tuple[tuple[int, ...], pd.Series]] = []
    for key, r in found:
        if not any(_contains(k, key) for k, _ in kept):
            kept.append((key, r))
    kept = kept[: int(th.v("advisorTopGroups"))]
    if not kept:
        return None
    names = a["names"]
    rows = tuple((" -> ".join(str(names[c]).split("|")[0] for c in key), len(key), int(r["n"]), float(r["wall"]),
                  float(r["npu"]), bool(r["mte_b"]), bool(r["host"])) for key, r in kept)
    lo, hi = (th.v(k) for k in EMPIRICAL["small-op-fusion"][:2])
    gain = Gain("small-op-fusion", (lo + hi) / 2, lo, hi, "low", False, f"{EMPIRICAL_NOTE}: {EMPIRICAL['small-op-fusion'][2]}",
                "seed §6.2 range; the estimate is its midpoint")
    return Finding(FUSIBLE, f"{len(rows)} repeated sequence(s) worth fusing", ("sequence", "length", "occurrences",
                   "wall_us", "npu_us", "mte_bound", "host_bound"), rows, sum(r[3] for r in rows), gain=gain)


def _contains(longer: tuple[int, ...], shorter: tuple[int, ...]) -> bool:
    n = len(shorter)
    return len(longer) >= n and any(longer[i:i + n] == shorter for i in range(len(longer) - n + 1))


RULES = ((SYNC, sync_stream), (GC, gc_pauses), (CONJECTURED_GC, conjectured_gc), (FUSIBLE, fusible_sequences))
