"""Ingest budgets at full size (issue 13): a ~36 MB gzip holding 150 M events, and one long name.

SYNTHETIC inputs built in a temp dir (``make_traces.write_gzip_bomb``: concatenated gzip members of
one compact kernel event, written in about a second). Printed, with the load average:

- ``ndval analyze BOMB --max-events N`` (default N = 1,000,000): wall and CPU seconds, peak RSS of
  the process, and the budget warnings — reading must stop after ``READ_FACTOR × N`` events, so
  time and memory are bounded by N, not by the 150 M events of the file;
- ``--unbounded``: the same without ``--max-events`` (the automatic event budget from the memory
  limit bounds memory; every event is read, so this takes minutes);
- ``--names``: ``load_dataset`` CPU seconds for one 25, 50 and 100 MB kernel name (issue 13 measured
  9.6 / 35 / 143 s), once with an event-size budget admitting them (time must grow linearly: the
  ratios are printed) and once with the default budget (the name is skipped, with the warning).
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
N_EVENTS = 150_000_000


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_bomb(path: Path, out: Path, max_events: int | None) -> None:
    """``ndval analyze`` on the bomb, measured (process tree: CPU, peak RSS)."""
    from bench_hta import run_measured

    cmd = [str(ROOT / ".venv" / "bin" / "ndval"), "analyze", str(path), "--json", str(out)]
    if max_events is not None:
        cmd += ["--max-events", str(max_events)]
    rc, wall, cpu, rss, _ = run_measured(cmd)
    label = f"--max-events {max_events:,}" if max_events is not None else "no --max-events (automatic budget)"
    print(f"ndval analyze, {label}: exit {rc}, {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {rss / 2**20:.0f} MiB")
    if out.exists():
        warnings = json.loads(out.read_text()).get("warnings", [])
        for w in warnings:
            if "budget" in w:
                print(f"  warning: {w[:300]}")


def _name_trace(path: Path, n_chars: int) -> Path:
    kernel = '{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": 7, "ts": {ts}, "dur": 5}}'
    events = [kernel.format(name="k", ts=1000), kernel.format(name="n" * n_chars, ts=1010),
              kernel.format(name="k", ts=1020)]
    path.write_text('{"traceEvents": [\n' + ",\n".join(events) + "\n]}")
    return path


def run_names(tmp: Path) -> None:
    """CPU seconds of ``load_dataset`` for 25/50/100 MB names, admitted and over the default budget."""
    sys.path.insert(0, str(ROOT))
    from analyzer.dataset import load_dataset
    from analyzer.ingest.budgets import Budgets

    admitted = Budgets(max_event_bytes=256 * 2**20)
    seconds: dict[int, float] = {}
    for mb in (25, 50, 100):
        path = _name_trace(tmp / f"name{mb}.json", mb * 10**6)
        for label, budgets in (("admitted", admitted), ("default budget", None)):
            start = time.process_time()
            ds = load_dataset(path, budgets=budgets)
            cpu = time.process_time() - start
            if budgets is admitted:
                seconds[mb] = cpu
            skipped = [w for w in ds.warnings if "event-size budget" in w]
            print(f"{mb} MB name, {label}: {cpu:.2f} s CPU, {len(ds.ranks[0].events)} events kept"
                  + (f"; warning: {skipped[0][:160]}" if skipped else ""))
        path.unlink()
    print(f"time ratios (linear: 2.0, 4.0; quadratic: 4, 16): 50/25 MB {seconds[50] / seconds[25]:.2f}, "
          f"100/25 MB {seconds[100] / seconds[25]:.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=N_EVENTS, help="events in the gzip bomb")
    ap.add_argument("--max-events", type=int, default=1_000_000)
    ap.add_argument("--unbounded", action="store_true", help="also analyse without --max-events (minutes)")
    ap.add_argument("--names", action="store_true", help="also time 25/50/100 MB names")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from make_traces import write_gzip_bomb

    print(f"load average at start: {_load()} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="ndval-bomb-") as tmp:
        start = time.perf_counter()
        bomb = write_gzip_bomb(Path(tmp) / "bomb.json.gz", args.events)
        print(f"SYNTHETIC bomb: {args.events:,} events, {bomb.stat().st_size / 2**20:.1f} MiB gzip "
              f"(written in {time.perf_counter() - start:.1f} s)")
        run_bomb(bomb, Path(tmp) / "bounded.json", args.max_events)
        if args.unbounded:
            run_bomb(bomb, Path(tmp) / "unbounded.json", None)
        if args.names:
            run_names(Path(tmp))
    print(f"load average at end: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
