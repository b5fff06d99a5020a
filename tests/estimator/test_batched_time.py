"""Batched step time (estimator.search.batched_time) against the scalar path: every RealPart and
PerfPart, the total, tokens/s and MFU of random valid layouts of the bundled examples under every
profile, from estimate_perf run once per group on arrays; groups it cannot take return None."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import estimator
from estimator.perf.report import PERF_PARTS, REAL_PARTS
from estimator.search.batched import array_config, group_key
from estimator.search.batched_time import BatchedPerf, batch_step_time, batch_step_time_of
from estimator.search.evaluate import Rejection, load_layout, search_base
from estimator.search.space import Layout, layouts
from tests.estimator.scalar_reference import EXAMPLES

REL = 1e-9
#: (example, devices, space): the array fields and the pipeline structure (pp, vpp, schedule, recompute)
SPACES: tuple[tuple[str, int, dict[str, tuple[Any, ...]]], ...] = (
    ("deepseek-v3-671b-h100.yaml", 1024, {
        "parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4, 8, 16), "parallel.vpp": (1, 2),
        "parallel.ep": (8, 16, 32, 64), "train.micro_batch_size": (1, 2, 4),
        "recompute.mode": ("none", "selective", "full"), "parallel.sequence_parallel": (False, True),
    }),
    ("llama3-8b-h100.yaml", 256, {
        "parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4, 8), "parallel.vpp": (1, 2), "parallel.cp": (1, 2, 4),
        "train.micro_batch_size": (1, 2, 4, 8), "recompute.mode": ("none", "selective", "full"),
        "parallel.schedule": ("1f1b", "zero_bubble_v"),
    }),
    ("deepseek-v3-mini-A.yaml", 64, {
        "parallel.tp": (1, 2, 4), "parallel.pp": (1, 2, 4), "parallel.ep": (1, 2, 4, 8), "parallel.cp": (1, 2),
        "train.micro_batch_size": (1, 2, 4, 8), "recompute.mode": ("none", "selective", "full"),
        "parallel.sequence_parallel": (False, True),  # (MoE at tp > 1 under megatron: a search needs it on)
    }),
)
PROFILES = ("sapp-nd", "megatron", "fsdp2")
PER_CASE = 1112  # 9 (example, profile) cases: ≥ 10,000 layouts


def _groups(example: str, devices: int, space: dict[str, tuple[Any, ...]], profile: str, rng: random.Random,
            budget: int) -> list[list[estimator.EstimatorConfig]]:
    """Random batched groups (layouts equal but for ARRAY_FIELDS) of ``space``, their valid layouts
    loaded, until ``budget`` layouts (only the layouts compared are loaded)."""
    base = estimator.load_config(EXAMPLES / example, {"profile": profile})
    data = search_base(base, space)
    keyed: dict[tuple[Any, ...], list[Layout]] = {}
    for layout in layouts(base, devices, space):
        if isinstance(layout, Layout):
            key = group_key(layout)
            keyed.setdefault(key, []).append(layout)
    order = list(keyed.values())
    rng.shuffle(order)
    out: list[list[estimator.EstimatorConfig]] = []
    for members in order:
        if budget <= 0:
            break
        cfgs = [c for c in (load_layout(data, m) for m in members) if not isinstance(c, Rejection)][:budget]
        if cfgs:
            out.append(cfgs)
            budget -= len(cfgs)
    return out


def _rel(got: float, want: float) -> float:
    if got == want or (np.isnan(got) and np.isnan(want)):
        return 0.0
    return abs(got - want) / max(abs(want), 1e-300)


def _compare(batched: BatchedPerf, row: int, cfg: estimator.EstimatorConfig) -> float:
    """Largest relative difference between row ``row`` of ``batched`` and the scalar estimate of ``cfg``."""
    ref = estimator.estimate_perf(cfg)
    pairs = [(batched.real_parts[n][row], ref.real_parts[n]) for n in REAL_PARTS]
    pairs += [(batched.perf_parts[n][row], ref.perf_parts[n]) for n in PERF_PARTS]
    pairs += [(batched.total_s[row], ref.total), (batched.tokens_per_s[row], ref.tokens_per_s),
              (batched.mfu[row], ref.mfu)]
    assert int(batched.straggler_stage[row]) == ref.straggler_stage
    return max(_rel(float(g), float(w)) for g, w in pairs)


def test_batched_step_time_equals_scalar_on_10000_random_layouts() -> None:
    """≥ 10,000 random valid layouts over 3 examples × 3 profiles (1F1B, interleaved, ZB-V; every
    recompute mode; tp, dp, ep, cp, micro-batch as arrays): every part within 1e-9 relative of the
    scalar estimate, and every group batched (none falls back)."""
    rng = random.Random(1515)
    compared = 0
    worst = 0.0
    for example, devices, space in SPACES:
        for profile in PROFILES:
            for cfgs in _groups(example, devices, space, profile, rng, PER_CASE):
                batched = batch_step_time_of(cfgs)
                assert batched is not None, (example, profile, cfgs[0].parallel)
                for row, cfg in enumerate(cfgs):
                    rel = _compare(batched, row, cfg)
                    assert rel <= REL, (example, profile, cfg.parallel, cfg.train.micro_batch_size, rel)
                    worst = max(worst, rel)
                compared += len(cfgs)
    assert compared >= 10_000, compared
    assert worst <= REL


def test_the_proxy_leaves_its_arrays_unchanged() -> None:
    """The formulas never write into the layouts' arrays (no in-place arithmetic on an input)."""
    cfg = estimator.load_config(EXAMPLES / "deepseek-v3-671b-h100.yaml")
    # layouts the megatron profile accepts (ep = 64 divides dp·cp: etp defaults to tp)
    columns = {"parallel.tp": np.array([1, 2, 8]), "parallel.dp": np.array([128, 64, 64])}
    copies = {k: v.copy() for k, v in columns.items()}
    batched = batch_step_time(array_config(cfg, columns), 3)
    assert batched is not None
    assert all(np.array_equal(columns[k], copies[k]) for k in columns)
    assert batched.total_s.shape == (3,) and batched.real_parts["TOTAL"][0] == estimator.estimate_perf(cfg).total


def test_a_group_whose_formula_branches_on_an_array_returns_none() -> None:
    """A given expert routing load is split by ep (a table per ep, not an array formula): the group
    returns None for the scalar path, which still prices each layout."""
    base = estimator.load_config(EXAMPLES / "deepseek-v3-mini-A.yaml")
    load = [float(i % 3 + 1) for i in range(base.model.num_experts)]
    cfgs = [estimator.load_config(base, {"parallel.ep": ep, "options.ep_tokens_per_expert": load}) for ep in (1, 2)]
    assert batch_step_time_of(cfgs) is None
    assert all(estimator.estimate_perf(c).total > 0 for c in cfgs)


@pytest.mark.parametrize("example", ["llama3-8b-h100.yaml", "deepseek-v3-mini-A.yaml"])
def test_one_layout_group_equals_scalar(example: str) -> None:
    cfg = estimator.load_config(EXAMPLES / example)
    batched = batch_step_time_of([cfg])
    assert batched is not None
    assert _compare(batched, 0, cfg) == 0.0
