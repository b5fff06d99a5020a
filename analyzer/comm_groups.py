"""Communication by parallel group: each collective's group named, mapped to a parallel dimension, and the
exposed communication seconds per step per dimension (the measured side of the estimator's MP / CP / EP /
DP / PP waits).

Where the group comes from:

- **Kineto**: the NCCL events' own args ``Process Group Name`` and ``Process Group Ranks`` (or ``Ranks``)
  (``ingest.kineto.group_rows``: one row per event that names its group);
- **Ascend cluster output**: the rank tuples that key ``cluster_communication.json`` (``"(0, 1, ..., 7)"``;
  per rank ``communication`` is ``step -> group -> op -> info``).

Which dimension a group is: from a **layout** (``tp=…,pp=…,dp=…,ep=…,cp=…``, or an estimator run file read by
the harness) by rank arithmetic — Megatron-LM's rank order, tensor-parallel fastest, then context, data and
pipeline (``rank = tp_i + tp·(cp_i + cp·(dp_i + dp·pp_i))``; expert-parallel groups are the ``ep``
consecutive data-parallel indices, ``ep`` dividing ``dp``): the group is the dimension whose group of its first
rank has exactly its ranks. Without a layout, a group name that says its dimension (``tp``, ``tensor``,
``data``, ``pipeline``, ``expert``, ``context`` ...) is read; otherwise the group is listed unattributed.

Exposed seconds: Kineto — per step and group, ``|∪ group's collectives \\ ∪ compute kernels|`` (the union of
compute of the same rank); Ascend cluster output — no trace to intersect with, so the rank's step
``Communication(Not Overlapped)`` is shared out over the groups in proportion to their ops' elapse (said in
``method``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analyzer import timeline as tl
from analyzer.ingest import events as ev

DIMENSIONS: tuple[str, ...] = ("tp", "cp", "ep", "dp", "pp")
#: the estimator's wait component of each dimension (estimator/perf/assembly.py: RealParts).
WAIT_PART: dict[str, str] = {"tp": "MP_WAIT", "cp": "CP_WAIT", "ep": "EP_WAIT", "dp": "DP_WAIT", "pp": "PP_WAIT"}
_NAME_HINTS: tuple[tuple[str, str], ...] = (
    ("tp", r"(^|[^a-z])(tp|tensor|mp|model)([^a-z]|$)"), ("cp", r"(^|[^a-z])(cp|context)([^a-z]|$)"),
    ("ep", r"(^|[^a-z])(ep|expert|moe)([^a-z]|$)"), ("pp", r"(^|[^a-z])(pp|pipeline|pipe)([^a-z]|$)"),
    ("dp", r"(^|[^a-z])(dp|data)([^a-z]|$)"),
)
US_PER_S = 1e6


class LayoutError(ValueError):
    """A layout that cannot be read or does not fit the ranks: names the source and the rule."""


@dataclass(frozen=True)
class Layout:
    """A parallel layout (degrees); ``source``: where it was read (``--layout``, a run file)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    cp: int = 1
    source: str = "--layout"

    @property
    def world(self) -> int:
        """tp · cp · dp · pp (expert parallelism splits the data-parallel ranks, it adds none)."""
        return self.tp * self.cp * self.dp * self.pp

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {"tp": self.tp, "pp": self.pp, "dp": self.dp, "ep": self.ep, "cp": self.cp, "world": self.world,
                "source": self.source}


def parse_layout(text: str, source: str = "--layout") -> Layout:
    """``tp=2,pp=2,dp=4`` (missing degrees are 1) -> :class:`Layout`; :class:`LayoutError` on an unknown key,
    a degree that is not a positive integer, or ``ep`` not dividing ``dp``."""
    degrees: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in DIMENSIONS:
            raise LayoutError(f"{source}: {part!r}: unknown layout entry (expected {', '.join(d + '=N' for d in DIMENSIONS)})")
        if not value.strip().isdigit() or int(value) < 1:
            raise LayoutError(f"{source}: {key}={value.strip()!r}: a degree must be a positive integer")
        degrees[key] = int(value)
    return validated(Layout(**degrees, source=source))


def validated(layout: Layout) -> Layout:
    """``layout`` when ``ep`` divides ``dp`` (expert groups are made of data-parallel ranks), else LayoutError."""
    if layout.dp % layout.ep:
        raise LayoutError(f"{layout.source}: ep={layout.ep} does not divide dp={layout.dp} (expert-parallel groups "
                          "are made of data-parallel ranks)")
    return layout


def world_mismatch(layout: Layout, world: int, what: str) -> str | None:
    """Why ``layout`` does not fit ``world`` ranks (None when tp·cp·dp·pp = world)."""
    if layout.world == world:
        return None
    return (f"{layout.source}: tp·cp·dp·pp = {layout.world} but {what} has world size {world}: the layout does not "
            "describe this run, so no group is attributed by rank arithmetic")


def dimension_group(layout: Layout, rank: int, dim: str) -> frozenset[int]:
    """The ranks of ``rank``'s group of dimension ``dim`` (Megatron order tp, cp, dp, pp; ep within dp)."""
    tp, cp, dp = layout.tp, layout.cp, layout.dp
    t, c, d, p = rank % tp, (rank // tp) % cp, (rank // (tp * cp)) % dp, rank // (tp * cp * dp)

    def at(t_: int, c_: int, d_: int, p_: int) -> int:
        return t_ + tp * (c_ + cp * (d_ + dp * p_))

    if dim == "tp":
        return frozenset(at(i, c, d, p) for i in range(tp))
    if dim == "cp":
        return frozenset(at(t, i, d, p) for i in range(cp))
    if dim == "dp":
        return frozenset(at(t, c, i, p) for i in range(dp))
    if dim == "ep":
        base = d - d % layout.ep
        return frozenset(at(t, c, base + i, p) for i in range(layout.ep))
    return frozenset(at(t, c, d, i) for i in range(layout.pp))


def dimension_of(layout: Layout, ranks: frozenset[int]) -> list[str]:
    """The dimensions whose group (of the group's lowest rank) is exactly ``ranks`` (several when degrees
    coincide, e.g. ``ep = dp``); empty when none fits."""
    if not ranks or max(ranks) >= layout.world:
        return []
    first = min(ranks)
    return [d for d in DIMENSIONS if getattr(layout, d) > 1 and dimension_group(layout, first, d) == ranks]


def dimension_from_name(name: str) -> str | None:
    """A dimension a group's name states (``tp``, ``tensor_model_parallel``, ``data_parallel`` ...), else None."""
    low = name.lower()
    return next((d for d, pattern in _NAME_HINTS if re.search(pattern, low)), None)


def parse_ranks(text: str) -> frozenset[int] | None:
    """``"[0, 1]"`` / ``"(0, 1)"`` / ``"0,1"`` -> ranks; None when not a rank list."""
    t = text.strip()
    if not t:
        return None
    try:
        value = ast.literal_eval(t if t[0] in "[(" else f"[{t}]")
    except (ValueError, SyntaxError):
        return None
    items = value if isinstance(value, list | tuple) else [value]
    return frozenset(int(x) for x in items) if items and all(isinstance(x, int) for x in items) else None


@dataclass(frozen=True)
class Group:
    """One communication group of a rank and what it cost per step."""

    key: str
    name: str
    ranks: frozenset[int] | None
    dimension: str | None
    how: str
    exposed_s: dict[int, float]
    comm_s: dict[int, float]

    def to_dict(self) -> dict[str, Any]:
        """Plain data (steps as strings: JSON keys)."""
        return {"group": self.key, "name": self.name, "ranks": None if self.ranks is None else sorted(self.ranks),
                "dimension": self.dimension, "attributed_by": self.how,
                "exposed_s_per_step": {str(k): round(v, 9) for k, v in sorted(self.exposed_s.items())},
                "comm_s_per_step": {str(k): round(v, 9) for k, v in sorted(self.comm_s.items())}}


@dataclass(frozen=True)
class CommByGroup:
    """A rank's communication by group and by parallel dimension (seconds per step)."""

    source: str
    method: str
    layout: dict[str, Any] | None
    groups: tuple[Group, ...]
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def per_step(self) -> list[dict[str, Any]]:
        """``[{"step", "<dim>": exposed s, ..., "unattributed": s}]`` (each group counted under its dimension)."""
        steps = sorted({s for g in self.groups for s in g.exposed_s})
        out = []
        for s in steps:
            row: dict[str, Any] = {"step": s}
            for g in self.groups:
                k = g.dimension or "unattributed"
                row[k] = round(row.get(k, 0.0) + g.exposed_s.get(s, 0.0), 9)
            out.append(row)
        return out

    def mean_exposed_s(self) -> dict[str, float]:
        """Mean over steps of the exposed seconds per dimension."""
        rows = self.per_step()
        keys = sorted({k for r in rows for k in r if k != "step"})
        return {k: float(np.mean([r.get(k, 0.0) for r in rows])) for k in keys} if rows else {}

    def to_dict(self) -> dict[str, Any]:
        """Plain data (stable keys)."""
        return {"source": self.source, "method": self.method, "layout": self.layout,
                "groups": [g.to_dict() for g in self.groups], "per_step_exposed_s": self.per_step(),
                "mean_exposed_s_per_step": {k: round(v, 9) for k, v in self.mean_exposed_s().items()},
                "errors": list(self.errors), "notes": list(self.notes)}


def _attribute(name: str, ranks: frozenset[int] | None, layout: Layout | None, where: str) -> tuple[str | None, str, str | None]:
    """``(dimension, how, error)`` of one group."""
    if layout is not None and ranks is not None:
        dims = dimension_of(layout, ranks)
        if dims:
            return "|".join(dims), f"rank arithmetic of {layout.source}", None
        if len(ranks) > 1:
            return None, "", (f"{where}: group {name or sorted(ranks)} (ranks {sorted(ranks)}) fits no dimension of "
                              f"{layout.source} (tp={layout.tp}, cp={layout.cp}, dp={layout.dp}, ep={layout.ep}, "
                              f"pp={layout.pp}; Megatron order tp, cp, dp, pp): left unattributed")
    if name == "p2p" and layout is not None and layout.pp > 1 and layout.cp == 1:
        return "pp", f"p2p ops with {layout.source} (pp > 1, cp = 1: point-to-point traffic is pipeline traffic)", None
    hinted = dimension_from_name(name)
    if hinted:
        return hinted, "group name", None
    return None, "", None


def _split_key(key: str) -> tuple[str, frozenset[int] | None]:
    name, _, ranks = key.partition("|")
    return name, parse_ranks(ranks) if ranks else parse_ranks(name)


def kineto_groups(events: pd.DataFrame, rows: pd.DataFrame, layout: Layout | None, where: str) -> CommByGroup:
    """Per group and step: ``|∪ collectives \\ ∪ compute|`` and ``|∪ collectives|`` (s) of one Kineto rank."""
    comp = events[((events["side"] == ev.SIDE_DEVICE) & (events["category"] == ev.COMPUTE)).to_numpy()]
    comp_u = tl.union(comp["ts_us"].to_numpy(dtype=np.float64),
                      (comp["ts_us"] + comp["dur_us"]).to_numpy(dtype=np.float64))
    groups, errors = [], []
    for key, g in rows.groupby("group", sort=True):
        name, ranks = _split_key(str(key))
        dim, how, err = _attribute(name, ranks, layout, where)
        if err:
            errors.append(err)
        exposed, total = {}, {}
        for step in sorted(int(x) for x in g["step"].unique()):
            s = g[g["step"].to_numpy() == step]
            u = tl.union(s["ts_us"].to_numpy(dtype=np.float64), (s["ts_us"] + s["dur_us"]).to_numpy(dtype=np.float64))
            exposed[step] = tl.subtract(u, comp_u).length_us / US_PER_S
            total[step] = u.length_us / US_PER_S
        groups.append(Group(str(key), name, ranks, dim, how, exposed, total))
    return CommByGroup("Kineto NCCL args Process Group Name / Process Group Ranks",
                       "per step: |∪ the group's collectives − ∪ compute kernels| (step of the launching host event)",
                       None if layout is None else layout.to_dict(), tuple(groups), tuple(errors))


def ascend_groups(communication: Mapping[str, Any], step_table: pd.DataFrame | None, layout: Layout | None,
                  where: str) -> CommByGroup | None:
    """Per group and step of an Ascend rank's ``communication`` (``step -> group -> op -> info``): elapse (s) and
    the step's Communication(Not Overlapped) shared out by elapse."""
    elapse: dict[str, dict[int, float]] = {}
    for step_key, by_group in communication.items():
        digits = re.sub(r"\D", "", str(step_key))
        step = int(digits) if digits else ev.UNKNOWN_STEP
        for group, ops in (by_group or {}).items() if isinstance(by_group, dict) else ():
            for op, info in (ops or {}).items() if isinstance(ops, dict) else ():
                t = (info or {}).get("Communication Time Info") if isinstance(info, dict) else None
                if op != "Total Op Info" and isinstance(t, dict):
                    acc = elapse.setdefault(str(group), {})
                    acc[step] = acc.get(step, 0.0) + float(t.get("Elapse Time(ms)") or 0.0) / 1e3
    if not elapse:
        return None
    exposed_total = _not_overlapped_s(step_table)
    groups, errors = [], []
    for key in sorted(elapse):
        name, ranks = key, parse_ranks(key)
        dim, how, err = _attribute(name, ranks, layout, where)
        if err:
            errors.append(err)
        exp = {s: exposed_total.get(s, 0.0) * v / sum(g.get(s, 0.0) for g in elapse.values())
               for s, v in elapse[key].items() if v > 0}
        groups.append(Group(key, name, ranks, dim, how, exp, dict(elapse[key])))
    return CommByGroup("communication.json groups (cluster_communication.json: rank tuples)",
                       "per step: the step's Communication(Not Overlapped) shared out over the groups by their ops' elapse "
                       "(no trace to intersect with compute)", None if layout is None else layout.to_dict(),
                       tuple(groups), tuple(errors))


def _not_overlapped_s(st: pd.DataFrame | None) -> dict[int, float]:
    col = "Communication(Not Overlapped)"
    if st is None or col not in st.columns or "Step" not in st.columns:
        return {}
    steps = pd.to_numeric(st["Step"], errors="coerce").fillna(ev.UNKNOWN_STEP).astype(int)
    return {int(s): float(v) / US_PER_S for s, v in zip(steps, pd.to_numeric(st[col], errors="coerce").fillna(0.0), strict=True)}


def of_rank(rank: Any, layout: Layout | None, world: int | None) -> CommByGroup | None:
    """The communication by group of one ``dataset.RankData`` (None when the profile names no group); a layout
    whose world size does not match is dropped with an error naming the rule."""
    where = str(rank.files.get("trace") or rank.path)
    errors: list[str] = []
    if layout is not None and world is not None and (why := world_mismatch(layout, world, where)):
        errors.append(why)
        layout = None
    rows = rank.tables.get("comm_groups")
    out: CommByGroup | None
    if rows is not None and len(rows):
        out = kineto_groups(rank.events, rows, layout, where)
    elif rank.communication:
        out = ascend_groups(rank.communication, rank.tables.get("step_trace_time"), layout, where)
    else:
        out = None
    if out is None:
        return None
    return CommByGroup(out.source, out.method, out.layout, out.groups, tuple(errors) + out.errors, out.notes)
