"""Old vs new ingest in one run: ``stream.read_trace`` CPU time of two checkouts on the same trace.

``python benchmarks/bench_ingest_ab.py OLD_ROOT [NEW_ROOT] --trace T.json [--rounds 5] [--analyze]``

Each round runs the old checkout's reader, then the new one's, each in a fresh process (its own
imports, no shared caches), alternating so that the load of a shared machine falls on both alike.
Printed: per round the CPU seconds and events/s per core of each side; then the best and the median
of each and the ratio old/new of the medians, with the load average before and after. With
``--analyze`` the same is done for ``ndval analyze --json`` (end to end, CPU of the process).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_INGEST = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from analyzer.ingest.stream import read_trace
c0, w0 = time.process_time(), time.perf_counter()
raw = read_trace(Path(sys.argv[2]))
print(json.dumps({"events": raw.n_seen, "cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0,
                  "decoder": getattr(raw, "decoder", "msgspec")}))
"""


def ingest_once(root: Path, trace: Path) -> dict[str, Any]:
    """CPU and wall seconds of ``read_trace`` from the checkout at ``root`` (fresh process), and the
    path that decoded the chunks (``RawTrace.decoder``; ``msgspec`` for checkouts before it existed)."""
    python = root / ".venv" / "bin" / "python"
    out = subprocess.run([str(python), "-c", _INGEST, str(root), str(trace)], check=True,
                         capture_output=True, text=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def analyze_once(root: Path, trace: Path, out: Path) -> dict[str, float]:
    """CPU seconds (children) and wall seconds of ``ndval analyze --json`` from ``root``."""
    before = os.times()
    w0 = time.perf_counter()
    subprocess.run([str(root / ".venv" / "bin" / "python"), "-m", "ndval.harness.cli", "analyze", str(trace), "--json",
                    str(out)], check=False, capture_output=True, cwd=root)  # -m: the code of ``root``
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"cpu_s": cpu, "wall_s": time.perf_counter() - w0}


def _report(label: str, old: list[float], new: list[float], events: int) -> None:
    mo, mn = statistics.median(old), statistics.median(new)
    print(f"{label}: old median {mo:.2f} s CPU ({events / mo:,.0f} events/s), best {min(old):.2f} s; "
          f"new median {mn:.2f} s CPU ({events / mn:,.0f} events/s), best {min(new):.2f} s; "
          f"old/new {mo / mn:.2f} x (median), {min(old) / min(new):.2f} x (best)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="root of the old checkout (with its .venv)")
    ap.add_argument("new", type=Path, nargs="?", default=ROOT, help="root of the new checkout (default: this one)")
    ap.add_argument("--trace", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--analyze", action="store_true", help="also time `ndval analyze --json` end to end")
    args = ap.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    old: list[float] = []
    new: list[float] = []
    events = 0
    for i in range(args.rounds):
        a, b = ingest_once(args.old, args.trace), ingest_once(args.new, args.trace)
        if a["events"] != b["events"]:
            print(f"event counts differ: old {a['events']:,}, new {b['events']:,}")
            return 1
        events = int(b["events"])
        old.append(a["cpu_s"])
        new.append(b["cpu_s"])
        print(f"  round {i + 1}: ingest old {a['cpu_s']:.2f} s CPU ({a['decoder']}), new {b['cpu_s']:.2f} s CPU "
              f"({b['decoder']}) ({events:,} events)", flush=True)
    _report("ingest (read_trace)", old, new, events)
    if args.analyze:
        old_e: list[float] = []
        new_e: list[float] = []
        tmp = Path(os.environ.get("TMPDIR", "/tmp"))
        for i in range(args.rounds):
            a = analyze_once(args.old, args.trace, tmp / "ab_old.json")
            b = analyze_once(args.new, args.trace, tmp / "ab_new.json")
            old_e.append(a["cpu_s"])
            new_e.append(b["cpu_s"])
            print(f"  round {i + 1}: analyze old {a['cpu_s']:.2f} s CPU, new {b['cpu_s']:.2f} s CPU", flush=True)
        _report("end to end (ndval analyze)", old_e, new_e, events)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
