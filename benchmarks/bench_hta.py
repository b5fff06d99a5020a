"""ndval vs Holistic Trace Analysis 0.5.0 on Kineto traces of 109k, 1M and 2M events, in one run.

Traces are built from the shared real pair by ``make_traces.py`` (``control.json.gz`` replicated
1, 10 and 19 times) into a temp dir (never committed). For each size this prints:

- **ingest**: ``stream.read_trace`` of the uncompressed trace, each time the first read of a fresh
  process (``--ingest-runs``, default 3; the median is kept and every run printed) — events/s from wall
  time and from CPU time (one core: the decoder runs on the main thread; no gzip here), and which
  path decoded the chunks (``native``: the C scanner ``analyzer/ingest/_kineto_scan.c``; ``msgspec``);
- **end to end**: ``ndval analyze --json`` and HTA (``TraceAnalysis`` + ``get_comm_comp_overlap`` +
  ``get_temporal_breakdown``) each in its own process: wall and CPU seconds, events/s and peak RSS
  (process tree, polled), the ratio HTA/ndval, and peak RSS / trace size;
- **overlap**: ndval's ``hta_window_overlap_pct`` vs HTA's ``comp_comm_overlap_pctg`` (points);
- a summary per size: ingest events/s, ndval and HTA wall seconds, the ratio, peak RSS / trace, the
  overlap difference, and each target ``met`` or ``MISSED`` (with its waiver: reason and expiry).

HTA is not a project dependency: it is installed into ``benchmarks/.hta-venv`` (git-ignored) from
PyPI on first use (``--no-hta`` skips it; a failed install is reported and the ndval half still runs).
The machine's load average is printed: on a shared machine wall times of both tools stretch alike,
CPU-time rates less so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HTA_VENV = HERE / ".hta-venv"
HTA_VERSION = "0.5.0"
#: copies of control.json.gz per size label (109k events each).
SIZES: dict[str, int] = {"109k": 1, "1M": 10, "2M": 19}
TARGETS = {"ingest_events_per_s": 1_000_000, "speedup_vs_hta": 10.0, "rss_over_trace": 1.5, "overlap_points": 0.05}
#: targets known to be missed: the reason and when the waiver expires (docs/analyzer-scale.md, round 3).
WAIVERS: dict[str, str] = {
    "speedup_vs_hta@109k": ("start-up (imports, thresholds: ~1 s) dominates a 109k-event run; the issue sets the "
                            "10x target on 1M and 2M (expires 2027-03-01)"),
    "rss_over_trace@109k": ("the interpreter and libraries (~150 MiB before any event) exceed 1.5 x a 38 MiB "
                            "trace; the issue measures RSS on 1M and 2M (expires 2027-03-01)"),
}

_HTA_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
o = a.get_comm_comp_overlap(visualize=False)
a.get_temporal_breakdown(visualize=False)
print("HTA_RESULT " + json.dumps({"overlap_pct": float(o["comp_comm_overlap_pctg"].iloc[0]),
                                  "seconds": time.perf_counter() - t0}))
"""


def run_measured(cmd: list[str], cwd: Path | None = None) -> tuple[int, float, float, int, str]:
    """``(exit code, wall s, CPU s, peak RSS bytes, stdout)`` of a child process **and its
    descendants** (HTA parses in a worker process): CPU = Σ user + system over every process of the
    tree (polled every 0.1 s with psutil, last value per process kept), peak RSS = the largest sum of
    the tree's RSS at one poll. On a loaded machine
    CPU seconds compare tools more fairly than wall time (a process's last 0.1 s may be missed)."""
    import psutil

    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=cwd)
    cpu: dict[int, float] = {}
    peak = 0
    root = psutil.Process(proc.pid)
    out_chunks: list[str] = []
    reader = _Reader(proc, out_chunks)
    while proc.poll() is None:
        rss = 0
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            tree = []
        for p in tree:
            try:
                t = p.cpu_times()
                cpu[p.pid] = t.user + t.system
                rss += p.memory_info().rss
            except psutil.Error:
                continue
        peak = max(peak, rss)
        time.sleep(0.1)
    reader.join()
    wall = time.perf_counter() - start
    return proc.returncode, wall, sum(cpu.values()), peak, "".join(out_chunks)


class _Reader:
    """Drains the child's stdout in a thread (so polling never blocks on a full pipe)."""

    def __init__(self, proc: subprocess.Popen[str], sink: list[str]) -> None:
        import threading

        self.thread = threading.Thread(target=lambda: sink.append(proc.stdout.read() if proc.stdout else ""),
                                       daemon=True)
        self.thread.start()

    def join(self) -> None:
        self.thread.join()


def ensure_hta() -> Path | None:
    """The HTA venv's python, creating it on first use; None (with the reason printed) when it fails."""
    python = HTA_VENV / "bin" / "python"
    if python.exists() and subprocess.call([str(python), "-c", "import hta"], stderr=subprocess.DEVNULL) == 0:
        return python
    print(f"installing HolisticTraceAnalysis=={HTA_VERSION} into {HTA_VENV} (PyPI) ...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(HTA_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", f"HolisticTraceAnalysis=={HTA_VERSION}"],
                       check=True, capture_output=True, text=True)
    except subprocess.CalledProcessError as exc:
        print(f"HTA could not be installed: {(exc.stderr or str(exc)).strip().splitlines()[-1:]}")
        return None
    return python


def ingest_once(path: Path) -> dict[str, Any]:
    """``read_trace`` in this process: events, wall and CPU seconds, and which path decoded the chunks
    (``RawTrace.decoder``: ``native`` when the C scanner is built, else ``msgspec``)."""
    sys.path.insert(0, str(ROOT))
    from analyzer.ingest.stream import read_trace

    w0, c0 = time.perf_counter(), time.process_time()
    raw = read_trace(path)
    return {"events": raw.n_seen, "complete": raw.n_complete, "wall_s": time.perf_counter() - w0,
            "cpu_s": time.process_time() - c0, "decoder": getattr(raw, "decoder", "msgspec")}


def ingest(path: Path, runs: int) -> dict[str, Any]:
    """:func:`ingest_once` in ``runs`` fresh processes (each the first read of its process, as in
    ``ndval analyze``; imports before the clock): the median CPU run's numbers, and every run's CPU
    seconds in ``cpu_runs`` (this machine's speed moves by up to 2x with the other core's load)."""
    got = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, __file__, "--ingest-worker", str(path)], capture_output=True,
                             text=True, check=True).stdout
        got.append(json.loads(out.strip().splitlines()[-1]))
    got.sort(key=lambda r: r["cpu_s"])
    return {**got[len(got) // 2], "cpu_runs": [r["cpu_s"] for r in got]}


def ndval_e2e(path: Path, out: Path) -> dict[str, Any]:
    ndval = ROOT / ".venv" / "bin" / "ndval"
    rc, wall, cpu, rss, _ = run_measured([str(ndval), "analyze", str(path), "--json", str(out)])
    overlap = None
    if rc in (0, 1) and out.exists():
        overlap = json.loads(out.read_text())["ranks"][0].get("hta_window_overlap_pct")
    return {"rc": rc, "wall_s": wall, "cpu_s": cpu, "rss": rss, "overlap_pct": overlap}


def hta_e2e(python: Path, trace_dir: Path) -> dict[str, Any]:
    rc, wall, cpu, rss, out = run_measured([str(python), "-c", _HTA_SCRIPT, str(trace_dir)], cwd=trace_dir)
    line = next((x for x in out.splitlines() if x.startswith("HTA_RESULT ")), None)
    res = json.loads(line.removeprefix("HTA_RESULT ")) if line else {}
    return {"rc": rc, "wall_s": wall, "cpu_s": cpu, "rss": rss, "overlap_pct": res.get("overlap_pct")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(SIZES), help=f"comma list of {list(SIZES)}")
    ap.add_argument("--no-hta", action="store_true", help="skip HTA (ndval numbers only)")
    ap.add_argument("--keep", type=Path, default=None, help="build the traces here and keep them")
    ap.add_argument("--ingest-runs", type=int, default=3, help="fresh processes timing read_trace (median kept)")
    ap.add_argument("--ingest-worker", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.ingest_worker:
        print(json.dumps(ingest_once(args.ingest_worker)))
        return 0
    sys.path.insert(0, str(HERE))
    from make_traces import build

    python = None if args.no_hta else ensure_hta()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ndval-bench-") as tmp:
        base = args.keep or Path(tmp)
        for label in args.sizes.split(","):
            size_dir = base / label
            size_dir.mkdir(parents=True, exist_ok=True)
            trace = next(size_dir.glob("kineto_*.json"), None) or build(SIZES[label], size_dir)
            mb = trace.stat().st_size
            ing = ingest(trace, args.ingest_runs)
            nd = ndval_e2e(trace, base / f"{label}.analysis.json")
            ht = hta_e2e(python, size_dir) if python else None
            rows.append((label, mb, ing, nd, ht))
            _print_row(label, mb, ing, nd, ht)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    _print_summary(rows)
    return 0


def _print_row(label: str, size: int, ing: dict[str, Any], nd: dict[str, Any], ht: dict[str, Any] | None) -> None:
    n = ing["events"]
    print(f"\n[{label}] {n:,} events, {size / 2**20:.0f} MiB uncompressed")
    runs = ", ".join(f"{n / c:,.0f}" for c in ing["cpu_runs"])
    print(f"  ingest (read_trace, median of {len(ing['cpu_runs'])} fresh processes): {ing['wall_s']:.2f} s wall = "
          f"{n / ing['wall_s']:,.0f} events/s; {ing['cpu_s']:.2f} s CPU = {n / ing['cpu_s']:,.0f} events/s per core "
          f"(runs: {runs}); decoder: {ing['decoder']}")
    print(f"  ndval analyze: exit {nd['rc']}, {nd['wall_s']:.2f} s wall, {nd['cpu_s']:.2f} s CPU "
          f"= {n / nd['cpu_s']:,.0f} events/s per CPU s, peak RSS "
          f"{nd['rss'] / 2**20:.0f} MiB = {nd['rss'] / size:.2f} x trace, overlap {nd['overlap_pct']}")
    if ht:
        print(f"  HTA {HTA_VERSION}: exit {ht['rc']}, {ht['wall_s']:.2f} s wall, {ht['cpu_s']:.2f} s CPU "
              f"= {n / ht['cpu_s']:,.0f} events/s per CPU s, peak RSS {ht['rss'] / 2**20:.0f} MiB, overlap {ht['overlap_pct']}")
        print(f"  ratio HTA / ndval end to end: {ht['wall_s'] / nd['wall_s']:.2f} x wall, "
              f"{ht['cpu_s'] / nd['cpu_s']:.2f} x CPU")


def _print_summary(rows: list[tuple[str, int, dict[str, Any], dict[str, Any], dict[str, Any] | None]]) -> None:
    print("\nsummary vs targets (" + ", ".join(f"{k} {v}" for k, v in TARGETS.items()) + "):")
    for label, size, ing, nd, ht in rows:
        parts = [f"ingest {ing['events'] / ing['cpu_s']:,.0f} ev/s CPU ({ing['events'] / ing['wall_s']:,.0f} wall)",
                 f"ndval analyze {nd['wall_s']:.2f} s wall", f"RSS {nd['rss'] / size:.2f} x trace"]
        if ht and ht["overlap_pct"] is not None and nd["overlap_pct"] is not None:
            parts.append(f"HTA {ht['wall_s']:.2f} s wall")
            parts.append(f"speed-up {ht['wall_s'] / nd['wall_s']:.1f} x wall, {ht['cpu_s'] / nd['cpu_s']:.1f} x CPU")
            parts.append(f"overlap diff {abs(ht['overlap_pct'] - nd['overlap_pct']):.3f} points")
        print(f"  {label}: " + "; ".join(parts))
        for name, verdict in _verdicts(size, ing, nd, ht).items():
            reason = WAIVERS.get(f"{name}@{label}", WAIVERS.get(name))
            waiver = f" (waived: {reason})" if verdict == "MISSED" and reason else ""
            print(f"    {name} {TARGETS[name]}: {verdict}{waiver}")


def _verdicts(size: int, ing: dict[str, Any], nd: dict[str, Any], ht: dict[str, Any] | None) -> dict[str, str]:
    """``met`` / ``MISSED`` per target for one size (speed-up in wall time, as HTA is timed)."""
    out = {"ingest_events_per_s": ing["events"] / ing["cpu_s"] >= TARGETS["ingest_events_per_s"],
           "rss_over_trace": nd["rss"] / size <= TARGETS["rss_over_trace"]}
    if ht and ht["overlap_pct"] is not None and nd["overlap_pct"] is not None:
        out["speedup_vs_hta"] = ht["wall_s"] / nd["wall_s"] >= TARGETS["speedup_vs_hta"]
        out["overlap_points"] = abs(ht["overlap_pct"] - nd["overlap_pct"]) <= TARGETS["overlap_points"]
    return {k: "met" if ok else "MISSED" for k, ok in out.items()}


if __name__ == "__main__":
    sys.exit(main())
