"""What the advisor rules and HTA's breakdowns cost inside ``ndval analyze`` on the 1.09M-event Kineto trace.

The trace is built by ``make_traces.py`` (``control.json.gz`` replicated 10 times) into a temp dir. In one
process, CPU seconds (``time.process_time``, min of ``--runs``, default 3) of:

- **ingest**: ``load_dataset`` of the trace;
- **analysis**: ``analyze`` of the loaded dataset, with the advisor hook (``analyzer.advisor.attach``: rules over
  the overall scope and every phase scope, plus HTA's breakdowns) and without it (the hook replaced by the
  identity), so ``with − without`` is what the hook adds;
- inside the hook: the rules alone (``build_input`` + ``advise`` per scope) and the HTA breakdowns alone;
- the same with ``--phase decode`` (a phase scope covering the whole capture: the per-phase evaluation's worst
  case, every rule evaluated twice over every row).

The shares printed are of ingest + analysis without the hook (the cost a user sees from the rules).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


class Timer:
    """Accumulated CPU seconds of the wrapped calls."""

    def __init__(self) -> None:
        self.cpu_s = 0.0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def inner(*args: Any, **kw: Any) -> Any:
            t0 = time.process_time()
            try:
                return fn(*args, **kw)
            finally:
                self.cpu_s += time.process_time() - t0
        return inner


def measure(dataset: Any, phase: str | None, runs: int) -> dict[str, float]:
    """Min CPU seconds of analyze with / without the hook, and of the rules and the HTA breakdowns in it."""
    import importlib

    from analyzer import analyze
    adv: Any = importlib.import_module("analyzer.advisor")
    hb: Any = importlib.import_module("analyzer.hta_breakdowns")  # the module attach calls

    names = [n for n in ("advise", "build_input", "scoped") if hasattr(adv, n)]  # scoped: per-phase builds only
    orig = (adv.attach, [getattr(adv, n) for n in names], hb.breakdowns)
    best: dict[str, float] = {}
    try:
        for _ in range(runs):
            rules, hta = Timer(), Timer()
            for n, f in zip(names, orig[1], strict=True):
                setattr(adv, n, rules.wrap(f))
            hb.breakdowns = hta.wrap(orig[2])
            t0 = time.process_time()
            analyze(dataset, phase_override=phase)
            with_s = time.process_time() - t0
            adv.attach = lambda ra, *a, **k: ra
            t0 = time.process_time()
            analyze(dataset, phase_override=phase)
            without_s = time.process_time() - t0
            adv.attach = orig[0]
            for k, v in (("with_s", with_s), ("without_s", without_s), ("rules_s", rules.cpu_s), ("hta_s", hta.cpu_s)):
                best[k] = min(best.get(k, v), v)
    finally:
        adv.attach = orig[0]
        for n, f in zip(names, orig[1], strict=True):
            setattr(adv, n, f)
        hb.breakdowns = orig[2]
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--copies", type=int, default=10, help="copies of control.json.gz (10: 1.09M events)")
    args = ap.parse_args(argv)
    import os

    from make_traces import build

    from analyzer.dataset import load_dataset
    with tempfile.TemporaryDirectory() as tmp:
        path = build(args.copies, Path(tmp))
        ingest = []
        for _ in range(args.runs):
            t0 = time.process_time()
            dataset = load_dataset(path)
            ingest.append(time.process_time() - t0)
        n = sum(len(r.events) for r in dataset.ranks)
        print(f"trace {path.name}: {n:,} events in the table; load average {os.getloadavg()[0]:.1f}; "
              f"ingest CPU {min(ingest):.3f} s (min of {args.runs})")
        for phase in (None, "decode"):
            m = measure(dataset, phase, args.runs)
            base = min(ingest) + m["without_s"]
            print(f"phase override {phase or 'none'}: analysis CPU with hook {m['with_s']:.3f} s, without "
                  f"{m['without_s']:.3f} s; hook adds {m['with_s'] - m['without_s']:.3f} s "
                  f"({100 * (m['with_s'] - m['without_s']) / base:.1f} % of ingest + analysis {base:.3f} s); "
                  f"rules {m['rules_s']:.3f} s ({100 * m['rules_s'] / base:.1f} %), HTA breakdowns {m['hta_s']:.3f} s "
                  f"({100 * m['hta_s'] / base:.1f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
