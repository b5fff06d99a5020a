"""A 64-rank Ascend folder replicated from the shared Level1 pair, read serially and in parallel.

Rank ``i`` is a copy of shared rank ``i % 2`` (``msinsight-level1``: files linked, ``profiler_info``
rewritten with ``rank_id = i``); rank :data:`SLOW_RANK` is made slower (its ``ProfilerStep`` and
device compute tasks 30 % longer) — a synthetic perturbation of real data, so the cluster view must
name it. Prints the read time per worker count (speed-up over serial), the slowest ranks, the
slowest links and the wait vs transfer split of the first ranks. Written to a temp dir, never kept.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROFILES = Path(os.environ.get("NDVAL_PROFILES", ROOT.parent / "shared" / "data" / "profiles"))
SOURCE = PROFILES / "ascend" / "msinsight-level1"
SLOW_RANK = 37  # with fewer ranks (--ranks N): SLOW_RANK % N
SLOWER = 1.3


def _slow_trace(src: Path, dst: Path) -> None:
    """The trace with ProfilerStep and Ascend Hardware compute durations × SLOWER (synthetic)."""
    events = json.loads(src.read_text(encoding="utf-8"))
    hardware = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
                and (e.get("args") or {}).get("name") == "Ascend Hardware"}
    for e in events:
        if e.get("ph") == "X" and (str(e.get("name", "")).startswith("ProfilerStep#") or e.get("pid") in hardware):
            e["dur"] = round(float(e["dur"]) * SLOWER, 3)
    dst.write_text(json.dumps(events), encoding="utf-8")


def build(root: Path, n: int) -> Path:
    """``root/rank<i>_ascend_pt`` for ``i < n`` (see module docstring)."""
    for i in range(n):
        slow = i == SLOW_RANK % n
        src = SOURCE / f"rank{i % 2}_ascend_pt"
        out = root / f"rank{i}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True)
        for f in (src / "ASCEND_PROFILER_OUTPUT").iterdir():
            if slow and f.name == "trace_view.json":
                _slow_trace(f, out / f.name)
            elif f.name != "step_trace_time.csv":  # the recomputation, not torch_npu's table, must find it
                (out / f.name).symlink_to(f)
        info = json.loads((src / f"profiler_info_{i % 2}.json").read_text())
        info["rank_id"] = i
        (out.parent / f"profiler_info_{i}.json").write_text(json.dumps(info))
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--workers", default="1,2", help="comma list of worker counts to time")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from analyzer import analyze
    from analyzer.dataset import load_dataset

    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="ndval-cluster-") as tmp:
        root = build(Path(tmp), args.ranks)
        times = {}
        ds = None
        for w in (int(x) for x in args.workers.split(",")):
            t0 = time.perf_counter()
            ds = load_dataset(root, workers=w, backend="serial" if w == 1 else "process")
            times[w] = time.perf_counter() - t0
            print(f"read {len(ds.ranks)} ranks with {w} worker(s): {times[w]:.1f} s "
                  f"(speed-up {times[min(times)] / times[w]:.2f} x over {min(times)} worker)")
        assert ds is not None
        t0 = time.perf_counter()
        c = analyze(ds).cluster
        print(f"analysed in {time.perf_counter() - t0:.1f} s")
    assert c is not None
    d = c.to_dict()
    print("slowest ranks:", ", ".join(f"{r['rank']} ({r['step_us']:.0f} us/step)" for r in d["slowest_ranks"]))
    slow = SLOW_RANK % args.ranks
    print(f"made slower: rank {slow} -> named first: {d['slowest_ranks'][0]['rank'] == slow}")
    print("slowest links:", ", ".join(f"{x['link']} {x['transport']} {x['bandwidth_gbps']:.2f} GB/s"
                                       for x in d["slowest_links"]))
    for sp in d["comm_split"][:4]:
        print(f"rank {sp['rank']}: communication {sp['elapse_us']:.0f} us = transfer {sp['transfer_us']:.0f} + wait "
              f"{sp['wait_us']:.0f} + idle {sp['idle_us']:.0f}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0 if d["slowest_ranks"][0]["rank"] == slow else 1


if __name__ == "__main__":
    sys.exit(main())
