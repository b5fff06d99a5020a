"""Swimlane viewport latency of ``ndval serve`` on a ≥ 1M-event trace (target: ≤ 100 ms after the first load).

The trace is SYNTHESISED from the shared Kineto pair (``../shared/data/profiles/kineto/hta-trace-diff``):
the event tables of ``control.json.gz`` and ``test.json.gz`` (75k + 68k real events) are tiled one
after the other in time (each copy shifted past the previous one) until the table holds ``--events``
rows; lanes keep the real threads and streams. The tiled table is handed to the service's registry
as one dataset, so every request below runs the real code path: HTTP request through Starlette's
TestClient → parameter checks → lane index → budgeted query → JSON.

Printed: the first request (builds the lane index), then the latency of ``--requests`` viewport
answers (random windows from the whole trace down to 1 ms, budget ``--budget``): median, p95, max,
plus checks that every answer held ≤ budget items and that 1 ms windows held only real events.
Exit status 1 when the p95 latency is above ``--target-ms``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import analyzer
from ndval.harness import paths

PAIR = ("kineto/hta-trace-diff/control.json.gz", "kineto/hta-trace-diff/test.json.gz")


def tiled_events(tables: list[pd.DataFrame], n_events: int) -> pd.DataFrame:
    """Copies of ``tables`` (alternating), each shifted to start 1 ms after the previous copy ends."""
    parts, offset, total, k = [], 0.0, 0, 0
    while total < n_events:
        t = tables[k % len(tables)]
        copy = t.copy(deep=False)
        copy["ts_us"] = t["ts_us"].to_numpy() - float(t["ts_us"].min()) + offset
        parts.append(copy)
        offset = float((copy["ts_us"] + copy["dur_us"]).max()) + 1000.0
        total += len(t)
        k += 1
    out = pd.concat(parts, ignore_index=True)
    for col in ("name", "category", "side", "stream", "sub"):
        out[col] = out[col].astype(str).astype("category")
    return out


def windows(span: tuple[float, float], n: int, seed: int = 0) -> list[tuple[float, float]]:
    """Viewports from the whole trace down to 1 ms (log-uniform widths), random positions."""
    rng = np.random.default_rng(seed)
    lo, hi = span
    out = [(lo, hi)]
    for w in np.exp(rng.uniform(np.log(1000.0), np.log(hi - lo), n - 1)):
        a = rng.uniform(lo, hi - w)
        out.append((float(a), float(a + w)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--target-ms", type=float, default=100.0)
    args = ap.parse_args()
    root = paths.profiles_dir()
    if not all((root / p).exists() for p in PAIR):
        print(f"bench_serve_timeline: the Kineto pair is not under {root}: skipped")
        return 0
    from starlette.testclient import TestClient

    from ndval.service.app import create_app
    from ndval.service.registry import READY, Registry

    t0 = time.perf_counter()
    datasets = [analyzer.load_dataset(root / p, progress=False) for p in PAIR]
    events = tiled_events([d.ranks[0].events for d in datasets], args.events)
    base = datasets[0]
    base.ranks[0].events = events
    print(f"synthesised {len(events):,} events from the pair ({time.perf_counter() - t0:.1f} s to read and tile)")
    registry = Registry([Path("tiled-kineto-pair")])
    entry = registry.entries["tiled-kineto-pair"]
    entry.dataset, entry.status = base, READY
    client = TestClient(create_app(registry))
    url = "/api/datasets/tiled-kineto-pair/timeline"
    t0 = time.perf_counter()
    first = client.get(f"{url}?budget={args.budget}").json()
    print(f"first load (lane index of {first['events_in_window']:,} events + whole-trace answer): "
          f"{(time.perf_counter() - t0) * 1000:.0f} ms, {len(first['lanes'])} lanes")
    lat_ms, over, merged_in_1ms, n_1ms = [], 0, 0, 0
    for a, b in windows(tuple(first["span_us"]), args.requests):
        t0 = time.perf_counter()
        ans = client.get(f"{url}?start_us={a}&end_us={b}&budget={args.budget}").json()
        lat_ms.append((time.perf_counter() - t0) * 1000)
        over += ans["item_count"] > args.budget
    for a, _ in windows(tuple(first["span_us"]), 20, seed=1)[1:]:
        ans = client.get(f"{url}?start_us={a}&end_us={a + 1000.0}&budget={args.budget}").json()
        n_1ms += 1
        merged_in_1ms += ans["merged_items"] > 0
    lat = np.array(lat_ms)
    p50, p95, mx = np.percentile(lat, 50), np.percentile(lat, 95), lat.max()
    print(f"viewport answers: {len(lat)} requests, budget {args.budget}: median {p50:.1f} ms, p95 {p95:.1f} ms, "
          f"max {mx:.1f} ms (target ≤ {args.target_ms:.0f} ms: p95/target = {p95 / args.target_ms:.2f})")
    print(f"answers over budget: {over} of {len(lat)}; 1 ms windows with merged items: {merged_in_1ms} of {n_1ms}")
    ok = p95 <= args.target_ms and over == 0 and merged_in_1ms == 0
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
