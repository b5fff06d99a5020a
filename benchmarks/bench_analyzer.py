"""Analyzer throughput benchmark on a large trace built from the real Level1 trace.

Builds ``trace_view.json`` by replicating the real msinsight Level1 rank-0 trace ``--copies`` times
(default 50), each copy shifted in time by the trace's span so the copies follow each other, and
ProfilerStep numbers advanced so every copy is its own step. Then, each in a fresh child process,
parses it (``analyzer.load_dataset``) and — when ``analyzer.analyze`` exists — runs the full
analysis, printing events/s, wall time and peak RSS (the child's ``ru_maxrss``).

    .venv/bin/python benchmarks/bench_analyzer.py [--copies 50] [--keep DIR] [--profiles DIR]
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


def _child(kind: str, path: str, queue: mp.Queue) -> None:
    import analyzer
    from analyzer.dataset import load_dataset

    t0 = time.perf_counter()
    ds = load_dataset(path)
    t_parse = time.perf_counter() - t0
    result = {"parse_s": t_parse, "rows": sum(len(r.events) for r in ds.ranks), "analyze_s": None}
    if kind == "analyze":
        t1 = time.perf_counter()
        analyzer.analyze(ds)  # type: ignore[attr-defined]
        result["analyze_s"] = time.perf_counter() - t1
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    queue.put(result)


def _run(kind: str, path: Path) -> dict:
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(kind, str(path), queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def _baseline_rss_mib() -> float:
    """Peak RSS of a child that only imports the analyzer (subtract to see the parse's own cost)."""
    code = "import resource, analyzer.dataset; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=50)
    parser.add_argument("--keep", type=Path, default=None, help="write the big trace here and keep it")
    parser.add_argument("--profiles", type=Path, default=None, help="real profiles dir (default: harness paths)")
    args = parser.parse_args(argv)
    if args.profiles is None:
        from harness import paths

        args.profiles = paths.profiles_dir()
    src = args.profiles / REL
    if not src.exists():
        print(f"real Level1 trace not found at {src}; set NDVAL_PROFILES_DIR", file=sys.stderr)
        return 2
    work = args.keep or Path(tempfile.mkdtemp(prefix="ndval-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        rank_dir, n_json = build_trace(src, work, args.copies)
        size_mib = (rank_dir / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").stat().st_size / 2**20
        print(f"built {rank_dir}: {args.copies} copies, {n_json:,} JSON events, {size_mib:.1f} MiB "
              f"in {time.perf_counter() - t0:.1f} s")
        base = _baseline_rss_mib()
        parse = _run("parse", rank_dir)
        print(f"parse:    {parse['parse_s']:.2f} s, {n_json / parse['parse_s']:,.0f} JSON events/s, "
              f"{parse['rows']:,} table rows, peak RSS {parse['peak_rss_mib']:.0f} MiB "
              f"(imports alone {base:.0f} MiB)")
        import analyzer

        if hasattr(analyzer, "analyze"):
            full = _run("analyze", rank_dir)
            total = full["parse_s"] + full["analyze_s"]
            print(f"analysis: parse {full['parse_s']:.2f} s + analyze {full['analyze_s']:.2f} s = "
                  f"{total:.2f} s, {n_json / total:,.0f} JSON events/s end to end, "
                  f"peak RSS {full['peak_rss_mib']:.0f} MiB")
        else:
            print("analysis: analyzer.analyze not available yet — skipped")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
