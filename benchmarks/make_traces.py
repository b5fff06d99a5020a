"""Build large Kineto traces from the shared real pair (for benchmarks; written to a temp dir, never
committed).

``control.json.gz`` (109k events, rank 3/8 A100) is replicated ``k`` times end to end: copy ``i`` has
every ``ts`` shifted by ``i ×`` (the trace span + 1 ms), correlation / External ids offset so that
launches still pair with their kernels, and ``ProfilerStep#N`` renumbered, so the result reads as one
longer capture of the same workload. Top-level metadata (``deviceProperties``, ``distributedInfo``)
is kept. ``python benchmarks/make_traces.py OUT_DIR 1 10 19`` writes ``kineto_<events>.json``.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROFILES = Path(os.environ.get("NDVAL_PROFILES", ROOT.parent / "shared" / "data" / "profiles"))
SOURCE = PROFILES / "kineto" / "hta-trace-diff" / "control.json.gz"
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_ID_KEYS = ("correlation", "External id", "Ev Idx", "Python id", "Python parent id")


def _shifted(events: list[dict[str, Any]], i: int, span_us: int, id_span: int, n_steps: int) -> list[dict[str, Any]]:
    out = []
    for ev in events:
        if i and ev.get("ph") == "M":
            continue
        e = copy.copy(ev)
        if isinstance(e.get("ts"), int | float):
            e["ts"] = e["ts"] + i * span_us
        args = e.get("args")
        if i and isinstance(args, dict):
            args = dict(args)
            for k in _ID_KEYS:
                if isinstance(args.get(k), int) and args[k] >= 0:
                    args[k] += i * id_span
            e["args"] = args
        m = _STEP.match(str(e.get("name", "")))
        if m and i:
            e["name"] = f"ProfilerStep#{int(m.group(1)) + i * n_steps}"
        out.append(e)
    return out


def build(k: int, out_dir: Path) -> Path:
    """Write the trace of ``k`` copies; returns its path (``kineto_<n>.json``)."""
    with gzip.open(SOURCE, "rt") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X" and isinstance(e.get("ts"), int | float)]
    span_us = int(max(e["ts"] + e.get("dur", 0) for e in xs) - min(e["ts"] for e in xs)) + 1000
    id_span = 1 + max((v for e in events if isinstance(e.get("args"), dict)
                       for key in _ID_KEYS if isinstance(v := e["args"].get(key), int)), default=0)
    n_steps = sum(1 for e in xs if _STEP.match(str(e.get("name", ""))))
    all_events: list[dict[str, Any]] = []
    for i in range(k):
        all_events.extend(_shifted(events, i, span_us, id_span, n_steps))
    doc = dict(doc)
    doc["traceEvents"] = all_events
    path = out_dir / f"kineto_{len(all_events)}.json"
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1)
    tmp.replace(path)
    return path


#: one event of the SYNTHETIC gzip bomb: a kernel, compact JSON (~70 bytes).
_BOMB_EVENT = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1000, "dur": 5}


def write_gzip_bomb(path: Path, n_events: int, block_events: int = 100_000) -> Path:
    """SYNTHETIC: a Kineto trace of ``n_events`` identical kernel events, written as concatenated
    gzip members (one member per ``block_events`` events, compressed once and repeated), so a
    150 M-event trace (~10 GB of JSON) is written in seconds and takes ~36 MB on disk.
    Every reader of gzip files reads the members as one stream. Returns ``path``."""
    import gzip

    line = (json.dumps(_BOMB_EVENT, separators=(",", ":")) + ",\n").encode()
    head = b'{"schemaVersion": 1, "traceEvents": [\n'
    tail = (json.dumps(_BOMB_EVENT, separators=(",", ":")) + '\n], "distributedInfo": {"rank": 0}}\n').encode()
    full, rest = divmod(max(n_events - 1, 0), block_events)
    block = gzip.compress(line * block_events, 9, mtime=0) if full else b""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(gzip.compress(head, 9, mtime=0))
        for _ in range(full):
            fh.write(block)
        if rest:
            fh.write(gzip.compress(line * rest, 9, mtime=0))
        fh.write(gzip.compress(tail, 9, mtime=0))
    tmp.replace(path)
    return path


if __name__ == "__main__":
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for k in sys.argv[2:]:
        print(build(int(k), out))
