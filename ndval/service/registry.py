"""The datasets a server was started with: ids, safety checks, loading once, cached analyses.

Only the paths given on the command line are served, each under an id derived from its name (URLs
carry ids, never paths). Before a dataset is read, its tree is walked: a symbolic link that resolves
outside the dataset's own folder makes the dataset fail with the link named, so a link cannot
smuggle another file into the server. A dataset that fails (not a profile, unreadable, escaping
link) is listed with its reason and never stops the others.

Loading goes through the analyzer's public API (``analyzer.load_dataset``, ``analyzer.analyze``,
``analyzer.compare``). A dataset is read once; analyses are cached per ``(phase scope, threshold
set digest)``; the swimlane index of a rank is built once, on first use.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import analyzer
from analyzer.thresholds import resolve
from ndval.core.hashing import sha256_text
from ndval.service.lanes import RankLanes, build_rank_lanes

PENDING, LOADING, READY, FAILED = "pending", "loading", "ready", "failed"
#: what a dataset id may look like (also what the routes accept before looking one up).
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
#: phase scopes a client may ask for: ``overall`` = no override; the others re-run the analysis
#: under that phase override (seed §1 "人工指定").
PHASE_SCOPES: tuple[str, ...] = ("overall", "prefill", "decode")


class DatasetError(Exception):
    """A request the registry refuses; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _slug(path: Path) -> str:
    """``control.json.gz`` -> ``control``; ``msinsight-level1`` -> ``msinsight-level1``."""
    name = path.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix) and name != suffix:
            name = name[: -len(suffix)]
            break
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:60] or "dataset"
    return slug if ID_PATTERN.match(slug) else "dataset"


def assign_ids(paths: Iterable[Path]) -> list[str]:
    """One id per path, unique (``name``, ``name-2``, ...); a bare ``trace_view.json`` or
    ``ASCEND_PROFILER_OUTPUT`` is named after its parent folder."""
    ids: list[str] = []
    for p in paths:
        base = _slug(p.parent if p.name in ("trace_view.json", "ASCEND_PROFILER_OUTPUT") else p)
        candidate, n = base, 1
        while candidate in ids:
            n += 1
            candidate = f"{base}-{n}"
        ids.append(candidate)
    return ids


def escaping_links(root: Path) -> list[str]:
    """Symbolic links under ``root`` (a folder) whose target lies outside ``root``, as
    ``relative -> target`` (empty for a file or a clean tree). Links are not followed."""
    if not root.is_dir():
        return []
    base = root.resolve()
    out = []
    for folder, dirs, files in os.walk(base, followlinks=False):
        for name in dirs + files:
            p = Path(folder) / name
            if not p.is_symlink():
                continue
            target = p.resolve()
            if target != base and base not in target.parents:
                out.append(f"{p.relative_to(base)} -> {target}")
    return sorted(out)


def tree_size_bytes(root: Path) -> int | None:
    """Bytes of the regular files of a dataset (the file itself, or its folder's tree); None when
    something in it cannot be read."""
    try:
        if root.is_file():
            return root.stat().st_size
        return sum((Path(d) / f).stat().st_size for d, _, fs in os.walk(root, followlinks=False) for f in fs
                   if not (Path(d) / f).is_symlink())
    except OSError:
        return None


def thresholds_digest(thresholds: dict[str, Any]) -> str:
    """A short digest naming a threshold set (cache key part): sha256 of its JSON form."""
    blob = json.dumps(thresholds, sort_keys=True, default=str)
    return sha256_text(blob)[:12]


def _step_count(rank: Any) -> int:
    """Profiler steps of one rank: distinct ``step`` of its step markers, else rows of step_trace_time.csv."""
    ev = rank.events
    if len(ev):
        marks = ev.loc[ev["category"] == "step", "step"]
        n = int(marks[marks >= 0].nunique())
        if n:
            return n
    st = rank.tables.get("step_trace_time")
    return 0 if st is None else len(st)


@dataclass
class Entry:
    """One dataset given on the command line."""

    id: str
    path: Path
    max_events: int | None = None
    status: str = PENDING
    error: str = ""
    dataset: Any = None
    load_s: float | None = None
    size_bytes: int | None = None
    analyses: dict[tuple[str, str], Any] = field(default_factory=dict)
    lanes: dict[int, RankLanes] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def load(self) -> None:
        """Read the dataset once (safety walk first); failures are recorded, never raised."""
        with self.lock:
            if self.status in (READY, FAILED):
                return
            self.status, t0 = LOADING, time.perf_counter()
            self.size_bytes = tree_size_bytes(self.path)
            try:
                if not self.path.exists():
                    raise FileNotFoundError(f"{self.path}: does not exist")
                links = escaping_links(self.path)
                if links:
                    more = f"; and {len(links) - 5} more" if len(links) > 5 else ""
                    raise PermissionError(f"{self.path}: refused — {len(links)} symbolic link(s) pointing outside "
                                          f"the dataset: {'; '.join(links[:5])}{more}")
                self.dataset = analyzer.load_dataset(self.path, max_events=self.max_events)
                self.status = READY
            except Exception as exc:  # any failure is this dataset's own; the others are still served
                self.status, self.error = FAILED, f"{type(exc).__name__}: {exc}"
            self.load_s = time.perf_counter() - t0

    def ready_dataset(self) -> Any:
        """The loaded dataset (loads it when needed); 409 when it failed."""
        self.load()
        if self.status != READY:
            raise DatasetError(409, f"dataset {self.id!r} failed to load: {self.error}")
        return self.dataset

    def describe(self) -> dict[str, Any]:
        """The listing row (``/api/datasets``)."""
        row: dict[str, Any] = {"id": self.id, "name": self.path.name, "status": self.status,
                               "size_bytes": self.size_bytes}
        if self.status == FAILED:
            row["reason"] = self.error
        if self.status == READY:
            ds = self.dataset
            row.update({"kind": ds.source_format, "ranks": [r.rank for r in ds.ranks],
                        "steps": max((_step_count(r) for r in ds.ranks), default=0),
                        "events": sum(len(r.events) for r in ds.ranks),
                        "load_s": None if self.load_s is None else round(self.load_s, 3),
                        "warnings": len(ds.warnings)})
        return row

    def analysis(self, phase: str, thresholds: Any, digest: str) -> Any:
        """The analysis under ``phase`` (``overall`` = no override) and the threshold set, cached."""
        if phase not in PHASE_SCOPES:
            raise DatasetError(400, f"phase must be one of {', '.join(PHASE_SCOPES)}, got {phase!r}")
        ds = self.ready_dataset()
        key = (phase, digest)
        with self.lock:
            if key not in self.analyses:
                self.analyses[key] = analyzer.analyze(ds, thresholds=thresholds,
                                                      phase_override=None if phase == "overall" else phase)
            return self.analyses[key]

    def capture_fidelity(self, rank: int) -> dict[str, Any]:
        """What the swimlane of ``rank`` can show: events dropped at ingest (bad ts/dur, event budget)
        and where totals come from — a sampled trace draws fewer events than the capture held."""
        rd = self.ready_dataset().rank(rank)
        dropped = rd.dropped_events
        count, reason = int(dropped[0]), str(dropped[1])
        return {"complete": count == 0 and rd.totals_source == "trace", "dropped_events": count,
                "dropped_reason": reason, "totals_source": rd.totals_source}

    def rank_lanes(self, rank: int | None) -> RankLanes:
        """The swimlane index of ``rank`` (default: the lowest rank), built once."""
        ds = self.ready_dataset()
        ranks = [r.rank for r in ds.ranks]
        rank = ranks[0] if rank is None else rank
        if rank not in ranks:
            raise DatasetError(404, f"rank {rank} not in dataset {self.id!r} (ranks: {ranks})")
        with self.lock:
            if rank not in self.lanes:
                rd = ds.rank(rank)
                self.lanes[rank] = build_rank_lanes(rank, rd.events, rd.base_ts_us)
            return self.lanes[rank]


class Registry:
    """The served datasets by id, plus the threshold set in force (``thresholds``: None for the
    defaults, an override mapping or a YAML path, as ``analyzer.analyze`` takes them)."""

    def __init__(self, paths: Iterable[str | Path], thresholds: Any = None, max_events: int | None = None) -> None:
        plist = [Path(p).expanduser().absolute() for p in paths]
        self.entries: dict[str, Entry] = {
            i: Entry(i, p, max_events) for i, p in zip(assign_ids(plist), plist, strict=True)
        }
        self.thresholds = resolve(thresholds)  # a bad override file fails here, before serving
        self.digest = thresholds_digest(self.thresholds.to_dict())

    def get(self, dataset_id: str) -> Entry:
        """The entry of ``dataset_id``: 400 when it is not an id at all, 404 when unknown."""
        if not ID_PATTERN.match(dataset_id) or ".." in dataset_id:
            raise DatasetError(400, f"invalid dataset id {dataset_id!r}: ids match {ID_PATTERN.pattern} "
                                    "(paths are never accepted)")
        if dataset_id not in self.entries:
            raise DatasetError(404, f"unknown dataset id {dataset_id!r} (served: {', '.join(self.entries)})")
        return self.entries[dataset_id]

    def load_all(self, log: Any = None) -> None:
        """Read every dataset in order, reporting each as it finishes (``log(str)``)."""
        for n, entry in enumerate(self.entries.values(), start=1):
            entry.load()
            if log is not None:
                what = entry.error if entry.status == FAILED else f"{entry.load_s:.1f} s"
                log(f"[{n}/{len(self.entries)}] {entry.id}: {entry.status} ({what})")

    def start_loading(self, log: Any = None) -> threading.Thread:
        """``load_all`` in a daemon thread (the server answers meanwhile; a request waits for its dataset)."""
        t = threading.Thread(target=self.load_all, args=(log,), name="ndval-serve-load", daemon=True)
        t.start()
        return t
