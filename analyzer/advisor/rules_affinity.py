"""Affinity-API replacement: host API call sequences that one fused torch_npu API replaces.

Source: msprof-analyze 26.2.0 ``msprof_analyze/advisor/analyzer/schedule/fusion_ops/fusion_ops_analyzer.py`` (the
``aten`` and ``optimizer`` modes: the host events ``aten::*`` / ``npu::*`` / ``AscendCL@aclrtSynchronizeStream*``
and ``Optimizer.step#*`` in time order, prefixes removed, each pattern searched left to right without overlap)
with the patterns of ``rules/timeline_fusion_ops.yaml`` (:mod:`analyzer.advisor.affinity_table`).

Matching is one regular-expression search per pattern over a string with **one character per event** (each name
a pattern uses gets its own character, every other name one shared character), so a match's character span is its
event index span: the matched calls, their count and the host time from the first call's start to the last one's
end come straight from the arrays. Ascend captures only: the fused APIs are torch_npu's.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from analyzer.advisor.affinity_table import ATEN, OPTIMIZER, PATTERNS, SOURCE, AffinityPattern
from analyzer.advisor.finding import Finding, Rule
from analyzer.advisor.inputs import AdvisorInput
from analyzer.ingest import events as ev
from analyzer.thresholds import Thresholds, passes

AFFINITY_API = Rule(
    "advisor.affinity-api", "Host API sequences with a fused affinity API", "schedule",
    ("trace_view.json host events: aten::* / npu::* (and SynchronizeStream, which breaks a sequence), "
     "Optimizer.step#* — name, ts, dur, in time order",),
    ("advisorAffinityMinCount", "advisorTopGroups"),
    SOURCE + "; msprof-analyze 26.2.0 advisor/analyzer/schedule/fusion_ops/fusion_ops_analyzer.py",
    "Replace the listed call sequences by the fused API in the first column (torch_npu.* / torch_npu.optim.NpuFused* "
    "/ mindspeed.ops.*; the 'cann' column is the first CANN version that has it)",
    "Re-capture: the sequence's occurrences fall to zero and the host time per step drops; compare the loss curve "
    "of a few hundred steps before and after",
    "A fused API can differ numerically (accumulation order, fused epsilon) and may need a newer CANN / torch_npu; "
    "fused optimizers keep their state in flat buffers (checkpoint format)", subject="affinity_api")
_OTHER = "\x01"
_ATEN_PREFIXES = ("aten::", "npu::")
_SYNC = "AscendCL@aclrtSynchronizeStream"
_OPT = "Optimizer.step#"


def tokens(pattern: str) -> list[tuple[str, int, int]]:
    """``(name, min, max)`` per item of a table pattern (``name?`` = 0..1, ``name{a,b}`` = a..b)."""
    out = []
    for item in pattern.split():
        m = re.fullmatch(r"(.+?)(?:\{(\d+),(\d+)\}|(\?))?", item)
        assert m is not None
        lo, hi = (int(m.group(2)), int(m.group(3))) if m.group(2) else (0, 1) if m.group(4) else (1, 1)
        out.append((m.group(1), lo, hi))
    return out


def _stream(events: pd.DataFrame, mode: str) -> pd.DataFrame:
    """The host events of ``mode`` in time order, ``key`` = the name with its prefix removed."""
    if mode == ATEN:
        sel = ev.matches(events["name"], lambda v: v.lower().startswith(_ATEN_PREFIXES) or v.startswith(_SYNC))
    else:
        sel = ev.matches(events["name"], lambda v: v.startswith(_OPT))
    idx = np.flatnonzero(sel)
    if len(idx) and "side" in events.columns:
        idx = idx[events["side"].to_numpy()[idx] == ev.SIDE_HOST]
    rows = events.take(idx)
    rows = rows.iloc[np.argsort(rows["ts_us"].to_numpy(dtype="float64"), kind="stable")]
    prefix = "aten::" if mode == ATEN else _OPT
    key = rows["name"].astype(str).str.replace(prefix, "", regex=False)
    return pd.DataFrame({"key": key.to_numpy(), "ts": rows["ts_us"].to_numpy(dtype="float64"),
                         "end": (rows["ts_us"] + rows["dur_us"]).to_numpy(dtype="float64")})


def _alphabet(patterns: tuple[AffinityPattern, ...]) -> dict[str, str]:
    names = sorted({name for p in patterns for name, _, _ in tokens(p.pattern)})
    return {name: chr(0x4E00 + i) for i, name in enumerate(names)}


def _regex(pattern: str, alphabet: dict[str, str]) -> re.Pattern[str]:
    return re.compile("".join(re.escape(alphabet[n]) + ("" if (lo, hi) == (1, 1) else f"{{{lo},{hi}}}")
                              for n, lo, hi in tokens(pattern)))


def _encode(keys: np.ndarray, alphabet: dict[str, str]) -> str:
    """One character per event: its name's character, :data:`_OTHER` for names no pattern uses."""
    codes, uniques = pd.factorize(keys)
    chars = np.array([alphabet.get(str(u), _OTHER) for u in uniques] + [_OTHER])
    return "".join(chars[codes].tolist()) if len(codes) else ""


def matches(stream: pd.DataFrame, patterns: tuple[AffinityPattern, ...]) -> list[tuple[AffinityPattern, int, float]]:
    """``(pattern, occurrences, host µs)`` of every pattern found in ``stream`` (``key``, ``ts``, ``end``)."""
    alphabet = _alphabet(patterns)
    text = _encode(stream["key"].to_numpy(), alphabet)
    ts, end = stream["ts"].to_numpy(), stream["end"].to_numpy()
    out = []
    for p in patterns:
        spans = [(m.start(), m.end()) for m in _regex(p.pattern, alphabet).finditer(text) if m.end() > m.start()]
        if spans:
            host_us = float(sum(end[a:b].max() - ts[a] for a, b in spans))
            out.append((p, len(spans), host_us))
    return out


def affinity_api(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Every table pattern occurring at least ``advisorAffinityMinCount`` times; evidence per (API, pattern)."""
    found = []
    for mode in (ATEN, OPTIMIZER):
        stream = _stream(inp.events, mode)
        if len(stream):
            found += matches(stream, tuple(p for p in PATTERNS if p.mode == mode))
    found = [f for f in found if passes(float(f[1]), th["advisorAffinityMinCount"])]
    if not found:
        return None
    found.sort(key=lambda f: -f[2])
    rows = tuple((p.api, p.pattern, p.cann, n, host_us) for p, n, host_us in found[: int(th.v("advisorTopGroups"))])
    apis = sorted({p.api for p, _, _ in found})
    return Finding(AFFINITY_API, f"{len(found)} call sequence(s) with a fused API: " + ", ".join(apis),
                   ("affinity_api", "sequence", "cann", "occurrences", "host_us"), rows, sum(f[2] for f in found))


RULES = ((AFFINITY_API, affinity_api),)
