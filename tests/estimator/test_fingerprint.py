"""Fingerprint test: the caches change no number. Over ≥ 10,000 configurations (the three example models ×
the three framework profiles × tp, pp, vpp, ep, etp, cp, micro-batch, recompute, pipeline split:
``tests.estimator.fingerprint``), the whole ``to_dict()`` of the memory and the step-time report is the
same with every store on (in grid order), in shuffled order after ``clear_all()``, and with every store
bypassed (``NDVAL_NO_CACHE=1``, in a subprocess run alongside). ``NDVAL_FINGERPRINT=full`` runs the full
grid (17,382 configs)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from ndval.core import cache
from tests.estimator import fingerprint as fp

ROOT = Path(__file__).resolve().parents[2]


def test_caches_on_off_and_shuffled_give_the_same_reports(tmp_path: Path) -> None:
    full = os.environ.get("NDVAL_FINGERPRINT") == "full"
    out = tmp_path / "no_cache.json"
    env = {**os.environ, cache.NO_CACHE_ENV: "1", "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "tests.estimator.fingerprint", str(out), *([] if full else ["--small"])]
    bypassed = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        cache.clear_all()
        cfgs = list(fp.configs(fp.GRID if full else fp.SMALL_GRID))
        assert len(cfgs) >= 10_000, len(cfgs)
        in_order = {key: fp.fingerprint(cfg) for key, cfg in cfgs}
        shuffled = cfgs[:]
        random.Random(25).shuffle(shuffled)
        cache.clear_all()
        again = {key: fp.fingerprint(cfg) for key, cfg in shuffled}
    finally:
        _, err = bypassed.communicate(timeout=900)
    assert bypassed.returncode == 0, err[-2000:]
    no_cache = json.loads(out.read_text())
    assert not any(v.startswith("error") for v in in_order.values())
    assert [k for k in in_order if again[k] != in_order[k]] == []
    assert no_cache.keys() == in_order.keys()
    assert [k for k in in_order if no_cache[k] != in_order[k]] == []


def test_no_cache_bypasses_every_store() -> None:
    """Under ``NDVAL_NO_CACHE=1`` every registered store keeps nothing after a sweep of estimates."""
    code = ("import estimator, pathlib; from ndval.core import cache; from tests.estimator import fingerprint as fp\n"
            "for _, cfg in list(fp.configs({**fp.SMALL_GRID, 'tp': (2,), 'pp': (2,), 'cp': (1,)}))[:40]: fp.fingerprint(cfg)\n"
            "import estimator.shared.memo as m, estimator.perf.stage as s, estimator.inputs.derive as d\n"
            "print(len(cache.stores()), sum(map(len, (m._ENTRIES, m._SHARED, s._STAGE_COSTS, d._LAYOUTS))))\n")
    env = {**os.environ, cache.NO_CACHE_ENV: "1", "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    registered, held = map(int, run.stdout.split())
    assert registered >= 15 and held == 0
