"""Analyzer throughput benchmark on a large trace built from the real Level1 trace.

Builds ``trace_view.json`` by replicating the real msinsight Level1 rank-0 trace ``--copies`` times
(default 50), each copy shifted in time by the trace's span so the copies follow each other, and
ProfilerStep numbers advanced so every copy is its own step. Then, each in a fresh child process,
parses it (``analyzer.load_dataset``) and runs the full analysis (``analyzer.analyze``), printing
events/s, wall time and peak RSS (the child's ``ru_maxrss``, also per table row / JSON event above
the imports), first without and then with an event budget (``max_events``; default: half of
the complete events: on this trace all device events and step markers fit and host detail is thinned).

    .venv/bin/python benchmarks/bench_analyzer.py [--copies 50 200] [--max-events N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REL = "ascend/msinsight-level1/rank0_ascend_pt"


def _shift(ts: str, offset_us: int) -> str:
    """Exact shift of an epoch-µs decimal string by an integer number of µs."""
    whole, _, frac = ts.partition(".")
    return f"{int(whole) + offset_us}.{frac}" if frac else str(int(whole) + offset_us)


def build_trace(src_dir: Path, out_dir: Path, copies: int) -> tuple[Path, int]:
    """Write ``out_dir/ASCEND_PROFILER_OUTPUT/trace_view.json`` (copies × the real trace).

    Returns (path, number of JSON events written). The CSVs and metadata are copied once.
    """
    out = out_dir / "rank0_ascend_pt"
    shutil.copytree(src_dir, out, ignore=shutil.ignore_patterns("trace_view.json"))
    with open(src_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json") as fh:
        events = json.load(fh)
    starts = [int(str(e["ts"]).partition(".")[0]) for e in events if "ts" in e]
    span_us = max(starts) - min(starts) + 200_000
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    path = out / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    n = 0
    with open(path, "w") as fh:
        fh.write("[\n")
        for e in meta:
            fh.write(json.dumps(e) + ",\n")
            n += 1
        for k in range(copies):
            for e in body:
                c = dict(e)
                if "ts" in c:
                    c["ts"] = _shift(str(c["ts"]), k * span_us) if isinstance(c["ts"], str) else c["ts"]
                if c.get("name", "").startswith("ProfilerStep#"):
                    c["name"] = f"ProfilerStep#{50 + k}"
                if c.get("ph") in ("s", "f") and "id" in c:
                    c["id"] = f"{c['id']}-{k}"
                fh.write(json.dumps(c))
                n += 1
                fh.write(",\n" if (k, e) != (copies - 1, body[-1]) else "\n")
        fh.write("]\n")
    return out, n


def _child(kind: str, path: str, max_events: int | None, queue: mp.Queue) -> None:
    import analyzer
    from analyzer.dataset import load_dataset

    t0 = time.perf_counter()
    ds = load_dataset(path, max_events=max_events)
    t_parse = time.perf_counter() - t0
    rank = ds.ranks[0]
    result = {"parse_s": t_parse, "rows": sum(len(r.events) for r in ds.ranks), "analyze_s": None,
              "dropped": int(rank.dropped_events[0]), "totals_source": rank.totals_source}
    if kind == "analyze":
        t1 = time.perf_counter()
        analyzer.analyze(ds)  # type: ignore[attr-defined]
        result["analyze_s"] = time.perf_counter() - t1
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    queue.put(result)


def _run(kind: str, path: Path, max_events: int | None) -> dict:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(kind, str(path), max_events, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def _baseline_rss_mib() -> float:
    """Peak RSS of a child that only imports the analyzer (subtract to see the parse's own cost)."""
    code = ("import resource, analyzer, analyzer.dataset, analyzer.analysis; "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


def _per_row(peak_mib: float, base_mib: float, rows: int, n_json: int) -> str:
    extra = (peak_mib - base_mib) * 2**20
    return f"{extra / max(rows, 1):.0f} B/row, {extra / max(n_json, 1):.0f} B/JSON event above imports"


def bench_one(rank_dir: Path, n_json: int, max_events: int | None, base: float) -> None:
    """Parse, then parse + analyze, each in a fresh process; print events/s and peak RSS."""
    label = "no budget" if max_events is None else f"max_events={max_events:,}"
    parse = _run("parse", rank_dir, max_events)
    print(f"  parse    [{label}]: {parse['parse_s']:.2f} s, {n_json / parse['parse_s']:,.0f} JSON events/s, "
          f"{parse['rows']:,} table rows kept ({parse['dropped']:,} dropped), peak RSS {parse['peak_rss_mib']:.0f} MiB "
          f"({_per_row(parse['peak_rss_mib'], base, parse['rows'], n_json)})")
    import analyzer

    if hasattr(analyzer, "analyze"):
        full = _run("analyze", rank_dir, max_events)
        total = full["parse_s"] + full["analyze_s"]
        print(f"  analysis [{label}]: parse {full['parse_s']:.2f} s + analyze {full['analyze_s']:.2f} s = "
              f"{total:.2f} s, {n_json / total:,.0f} JSON events/s end to end, "
              f"peak RSS {full['peak_rss_mib']:.0f} MiB ({_per_row(full['peak_rss_mib'], base, full['rows'], n_json)}); "
              f"totals source: {full['totals_source']}")
    else:
        print("  analysis: analyzer.analyze not available yet — skipped")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[50, 200],
                        help="sizes to build: copies of the real trace (default: 50 200)")
    parser.add_argument("--max-events", type=int, default=None,
                        help="also run with this event budget (default: half of the complete events)")
    parser.add_argument("--no-budget-run", action="store_true", help="skip the runs with a budget")
    parser.add_argument("--keep", type=Path, default=None, help="write the big traces here and keep them")
    parser.add_argument("--profiles", type=Path, default=None, help="real profiles dir (default: harness paths)")
    args = parser.parse_args(argv)
    if args.profiles is None:
        from ndval.harness import paths

        args.profiles = paths.profiles_dir()
    src = args.profiles / REL
    if not src.exists():
        print(f"real Level1 trace not found at {src}; set NDVAL_PROFILES_DIR", file=sys.stderr)
        return 2
    base = _baseline_rss_mib()
    print(f"imports alone: peak RSS {base:.0f} MiB")
    for copies in args.copies:
        work = (args.keep / f"x{copies}") if args.keep else Path(tempfile.mkdtemp(prefix="ndval-bench-"))
        work.mkdir(parents=True, exist_ok=True)
        try:
            t0 = time.perf_counter()
            trace = work / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
            if trace.is_file() and args.keep:
                rank_dir, n_json = work / "rank0_ascend_pt", _count_events(trace)
            else:
                rank_dir, n_json = build_trace(src, work, copies)
            size_mib = trace.stat().st_size / 2**20
            print(f"x{copies}: {rank_dir}: {n_json:,} JSON events, {size_mib:.1f} MiB "
                  f"(ready in {time.perf_counter() - t0:.1f} s)")
            bench_one(rank_dir, n_json, None, base)
            if not args.no_budget_run:
                budget = args.max_events
                if budget is None:
                    probe = _run("parse", rank_dir, 0)
                    budget = max(1, (probe["rows"] + probe["dropped"]) // 2)
                bench_one(rank_dir, n_json, budget, base)
        finally:
            if args.keep is None:
                shutil.rmtree(work, ignore_errors=True)
    return 0


def _count_events(path: Path) -> int:
    """JSON events of a trace written by :func:`build_trace` (one per line)."""
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.startswith(b"{"))


if __name__ == "__main__":
    raise SystemExit(main())
