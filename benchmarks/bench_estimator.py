"""Estimator throughput: configurations per second for ``estimate_memory`` + ``estimate_perf``.

Uses the DeepSeek-V3 671B example (``estimator/examples/deepseek-v3-671b-h100.yaml``: 61 layers,
PP 16, EP 64, 2048 GPUs) and a sweep of strategies around it (EP × DP × recompute), each config
validated once beforehand, then timed for ``--seconds`` of wall time. Not a timed test.

    .venv/bin/python benchmarks/bench_estimator.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import estimator  # noqa: E402

EXAMPLE = ROOT / "estimator" / "examples" / "deepseek-v3-671b-h100.yaml"


def sweep() -> list[estimator.EstimatorConfig]:
    """Valid strategies around the example: EP ∈ {8, 16, 32, 64} × DP ∈ {64, 128} × recompute."""
    out = []
    for ep, dp, rec in itertools.product((8, 16, 32, 64), (64, 128), ("full", "selective", "none")):
        overrides = [f"parallel.ep={ep}", f"parallel.dp={dp}", f"recompute.mode={rec}",
                     f"hardware.devices={dp * 16}"]
        try:
            out.append(estimator.load_config(EXAMPLE, overrides))
        except estimator.ConfigError:
            continue
    return out


def bench(cfgs: list[estimator.EstimatorConfig], seconds: float) -> tuple[int, float]:
    """(configurations evaluated, wall seconds) running memory + perf round-robin over ``cfgs``."""
    n, start = 0, time.perf_counter()
    for cfg in itertools.cycle(cfgs):
        estimator.estimate_memory(cfg)
        estimator.estimate_perf(cfg)
        n += 1
        if n % len(cfgs) == 0 and time.perf_counter() - start >= seconds:
            break
    return n, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    cfgs = sweep()
    one = cfgs[0]
    mem, perf = estimator.estimate_memory(one), estimator.estimate_perf(one)
    print(f"DeepSeek-V3 671B, {len(cfgs)} strategies (first: ep={one.parallel.ep} dp={one.parallel.dp} "
          f"{one.recompute.mode}): peak {mem.peak_mb / 1024:.1f} GiB, step {perf.total:.2f} s, MFU {100 * perf.mfu:.1f} %")
    n, wall = bench(cfgs, args.seconds)
    print(f"estimate_memory + estimate_perf: {n} configurations in {wall:.2f} s = {n / wall:.0f} configurations/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
