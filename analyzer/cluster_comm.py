"""Cluster view of communication: per-rank wait vs transfer time and the slowest links.

Sources (profiling-formats §1.8-§1.9, §1.12; times in the files are **ms**, converted to µs here):

- per rank, **wait vs transfer**: ``communication.json`` ``Communication Time Info`` of every op
  (``Total Op Info`` skipped) — ``Transit Time(ms)`` is transfer, ``Wait Time(ms)`` waiting for the
  peer (notify wait), ``Idle Time(ms)`` the rest of the op's elapse (``Elapse = Transit + Wait +
  Idle``); for a DB export the same columns of ``analysis.db`` ``CommAnalyzerTime``;
- **links**: ``communication_matrix.json`` (``"src-dst"`` entries per op with ``Transport Type``,
  ``Transit Size(MB)``, ``Transit Time(ms)``) or ``analysis.db`` ``CommAnalyzerMatrix``. A link's
  bandwidth = Σ size / Σ time over the ops it carried (GB/s = MB/ms); the slowest links are those
  with the lowest bandwidth (``LOCAL`` copies inside one device excluded; links with no transit
  time skipped).

Kineto traces carry neither; their ranks get no split and no links (said in ``source``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ndval.core.units import US_PER_MS

TOTAL_KEY = "Total Op Info"
LOCAL_TRANSPORT = "LOCAL"


@dataclass(frozen=True)
class CommSplit:
    """One rank's communication time split (µs, summed over its ops)."""

    rank: int
    transfer_us: float
    wait_us: float
    idle_us: float
    elapse_us: float
    source: str

    @property
    def wait_pct(self) -> float | None:
        """100 · wait / elapse (None without elapse)."""
        return 100.0 * self.wait_us / self.elapse_us if self.elapse_us > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "transfer_us": round(self.transfer_us, 3), "wait_us": round(self.wait_us, 3),
                "idle_us": round(self.idle_us, 3), "elapse_us": round(self.elapse_us, 3),
                "wait_pct": None if self.wait_pct is None else round(self.wait_pct, 3), "source": self.source}


@dataclass(frozen=True)
class Link:
    """One src -> dst link over one transport, summed over the ops it carried."""

    src: int
    dst: int
    transport: str
    size_mb: float
    time_ms: float

    @property
    def bandwidth_gbps(self) -> float:
        """Σ size / Σ time (MB/ms = GB/s)."""
        return self.size_mb / self.time_ms if self.time_ms > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        return {"link": f"{self.src}->{self.dst}", "transport": self.transport, "size_mb": round(self.size_mb, 3),
                "time_ms": round(self.time_ms, 6), "bandwidth_gbps": round(self.bandwidth_gbps, 3)}


def split_from_communication_json(rank: int, data: dict[str, Any], source: str) -> CommSplit | None:
    """Σ over steps and ops of ``Communication Time Info`` (``Total Op Info`` skipped)."""
    tot = {"Transit Time(ms)": 0.0, "Wait Time(ms)": 0.0, "Idle Time(ms)": 0.0, "Elapse Time(ms)": 0.0}
    found = False
    for kinds in data.values():
        for ops in (kinds or {}).values() if isinstance(kinds, dict) else ():
            for name, op in (ops or {}).items() if isinstance(ops, dict) else ():
                info = op.get("Communication Time Info") if isinstance(op, dict) and name != TOTAL_KEY else None
                if isinstance(info, dict):
                    found = True
                    for k in tot:
                        tot[k] += _num(info.get(k))
    if not found:
        return None
    return CommSplit(rank, tot["Transit Time(ms)"] * US_PER_MS, tot["Wait Time(ms)"] * US_PER_MS,
                     tot["Idle Time(ms)"] * US_PER_MS, tot["Elapse Time(ms)"] * US_PER_MS, source)


def split_from_analysis_db(rank: int, table: pd.DataFrame, source: str) -> CommSplit | None:
    """The same sums from ``analysis.db`` ``CommAnalyzerTime`` (ms columns)."""
    if not len(table) or "elapse_time" not in table.columns:
        return None
    col = {c: float(pd.to_numeric(table[c], errors="coerce").fillna(0.0).sum()) * US_PER_MS
           for c in ("transit_time", "wait_time", "idle_time", "elapse_time") if c in table.columns}
    return CommSplit(rank, col.get("transit_time", 0.0), col.get("wait_time", 0.0), col.get("idle_time", 0.0),
                     col.get("elapse_time", 0.0), source)


def links_from_matrix_json(data: dict[str, Any]) -> list[Link]:
    """Links of one ``communication_matrix.json``, summed per (src, dst, transport)."""
    rows = []
    for kinds in data.values():
        for ops in (kinds or {}).values() if isinstance(kinds, dict) else ():
            for name, pairs in (ops or {}).items() if isinstance(ops, dict) else ():
                if name == TOTAL_KEY or not isinstance(pairs, dict):
                    continue
                for pair, v in pairs.items():
                    src, _, dst = str(pair).partition("-")
                    if isinstance(v, dict) and src.isdigit() and dst.isdigit():
                        rows.append((int(src), int(dst), str(v.get("Transport Type", "")),
                                     _num(v.get("Transit Size(MB)")), _num(v.get("Transit Time(ms)"))))
    return _sum_links(rows)


def links_from_analysis_db(table: pd.DataFrame) -> list[Link]:
    """Links of ``analysis.db`` ``CommAnalyzerMatrix``."""
    need = ("src_rank", "dst_rank", "transport_type", "transit_size", "transit_time")
    if not len(table) or any(c not in table.columns for c in need):
        return []
    rows = [(int(s), int(d), str(t), _num(z), _num(m)) for s, d, t, z, m in table[list(need)].itertuples(index=False)
            if str(s).isdigit() and str(d).isdigit()]
    return _sum_links(rows)


def _sum_links(rows: Iterable[tuple[int, int, str, float, float]]) -> list[Link]:
    acc: dict[tuple[int, int, str], list[float]] = {}
    for src, dst, transport, size, time in rows:
        a = acc.setdefault((src, dst, transport), [0.0, 0.0])
        a[0] += size
        a[1] += time
    return [Link(s, d, t, v[0], v[1]) for (s, d, t), v in acc.items()]


def slowest_links(links: Iterable[Link], top: int = 5) -> list[Link]:
    """The ``top`` links of lowest bandwidth (``LOCAL`` and zero-time links excluded), one entry per
    (src, dst, transport) over all ranks' matrices (a link seen by both ends is summed once each:
    its bandwidth is the same ratio)."""
    merged: dict[tuple[int, int, str], Link] = {}
    for link in links:
        if link.transport == LOCAL_TRANSPORT or link.time_ms <= 0 or link.size_mb <= 0:
            continue
        merged.setdefault((link.src, link.dst, link.transport), link)
    return sorted(merged.values(), key=lambda x: (x.bandwidth_gbps, x.src, x.dst))[:top]


def _num(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return 0.0
    return out if out == out else 0.0


def _read_json(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def rank_comm(rank: Any) -> tuple[CommSplit | None, list[Link], str]:
    """``(split, links, note)`` of one ``dataset.RankData`` (text or DB export; Kineto: none)."""
    split = None
    if rank.communication is not None:
        split = split_from_communication_json(rank.rank, rank.communication, "communication.json")
    elif "analysis_db.CommAnalyzerTime" in rank.tables:
        split = split_from_analysis_db(rank.rank, rank.tables["analysis_db.CommAnalyzerTime"], "analysis.db CommAnalyzerTime")
    matrix = _read_json(rank.files.get("communication_matrix.json"))
    if matrix is not None:
        links = links_from_matrix_json(matrix)
    elif "analysis_db.CommAnalyzerMatrix" in rank.tables:
        links = links_from_analysis_db(rank.tables["analysis_db.CommAnalyzerMatrix"])
    else:
        links = []
    note = "" if split is not None or links else "no communication.json / communication_matrix.json / CommAnalyzer tables"
    return split, links, note
