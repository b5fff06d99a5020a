"""Batched memory (estimator.search.batched) against the scalar path: every stage's memory components
on random valid layouts of the bundled examples under every profile, the same decisions and ranking
in a search, and groups that cannot be batched priced on the scalar path with ``path`` saying so."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import estimator
from estimator import search
from estimator.search.batched import batch_stage_memory, group_key
from estimator.search.evaluate import Rejection, load_layout, search_base
from estimator.search.space import Layout, layouts
from tests.estimator.scalar_reference import EXAMPLES

REL = 1e-9
#: (example, devices, space): spaces over the array fields and the pipeline structure
SPACES: tuple[tuple[str, int, dict[str, tuple[Any, ...]]], ...] = (
    ("deepseek-v3-671b-h100.yaml", 1024, {
        "parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4, 8, 16), "parallel.vpp": (1, 2),
        "parallel.ep": (8, 16, 32, 64), "train.micro_batch_size": (1, 2, 4),
        "train.global_batch_size": (1024, 8192), "recompute.mode": ("none", "selective", "full"),
    }),
    ("llama3-8b-h100.yaml", 256, {
        "parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4, 8), "parallel.cp": (1, 2, 4),
        "train.seq_length": (2048, 8192),
        "train.micro_batch_size": (1, 2, 4, 8), "recompute.mode": ("none", "selective", "full"),
    }),
    ("deepseek-v3-mini-A.yaml", 64, {
        "parallel.tp": (1, 2, 4), "parallel.pp": (1, 2, 4), "parallel.ep": (1, 2, 4, 8), "parallel.cp": (1, 2),
        "train.micro_batch_size": (1, 2, 4, 8), "recompute.mode": ("none", "selective", "full"),
    }),
)
PROFILES = ("sapp-nd", "megatron", "fsdp2")


def _groups(example: str, devices: int, space: dict[str, tuple[Any, ...]], profile: str,
            ) -> list[list[estimator.EstimatorConfig]]:
    base = estimator.load_config(EXAMPLES / example, {"profile": profile})
    data = search_base(base, space)
    groups: dict[tuple[Any, ...], list[estimator.EstimatorConfig]] = {}
    for layout in layouts(base, devices, space):
        cfg = load_layout(data, layout)
        if isinstance(cfg, Rejection) or not isinstance(layout, Layout):
            continue
        key = group_key(layout)
        groups.setdefault(key, []).append(cfg)
    return list(groups.values())


def _value(component: Any, row: int) -> float:
    return float(component[row]) if isinstance(component, np.ndarray) and component.ndim else float(component)


def test_batched_memory_equals_scalar_on_10000_random_layouts() -> None:
    """≥ 10,000 random valid layouts over 3 examples × 3 profiles: every stage's every component
    within 1e-9 relative of the scalar estimate; groups the batch cannot take are counted, not hidden."""
    rng = random.Random(15)
    compared = unbatched = 0
    worst = 0.0
    for example, devices, space in SPACES:
        for profile in PROFILES:
            groups = _groups(example, devices, space, profile)
            rng.shuffle(groups)
            budget = 2500
            for cfgs in groups:
                if budget <= 0:
                    break
                stages = batch_stage_memory(cfgs)
                if stages is None:
                    unbatched += len(cfgs)
                    continue
                for row, cfg in enumerate(cfgs):
                    ref = estimator.estimate_memory(cfg).stages
                    assert len(ref) == len(stages)
                    for got, want in zip(stages, ref, strict=True):
                        assert set(got.components) == set(want.components)
                        for name, value in want.components.items():
                            b = _value(got.components[name], row)
                            rel = abs(b - value) / max(abs(value), 1e-300) if b != value else 0.0
                            worst = max(worst, rel)
                            assert rel <= REL, (example, profile, cfg.parallel, got.stage, name, b, value)
                compared += len(cfgs)
                budget -= len(cfgs)
    assert compared >= 10_000, compared
    assert worst <= REL
    # the megatron profile's interleaved order (Megatron's forward table) is not batched: counted
    assert unbatched < compared


def test_search_batched_equals_scalar_ranking_and_rejections() -> None:
    """The acceptance sweep of issue 15 (docs/search.md): DeepSeek-V3 671B on 1,024 devices over tp,
    pp with uneven splits, vpp, ep, micro-batch and recompute: the same top 20, front, rejections."""
    base = estimator.load_config(EXAMPLES / "deepseek-v3-671b-h100.yaml")
    space = {"parallel.tp": (1, 2, 4, 8), "parallel.pp": (1, 2, 4, 8, 16), "parallel.vpp": (1, 2),
             "parallel.ep": (8, 16, 32, 64), "train.micro_batch_size": (1, 2), "recompute.mode": ("full", "selective")}
    fast = search.search(base, 1024, space, top_k=20)
    slow = search.search(base, 1024, space, top_k=20, batched=False)
    assert (fast.path, slow.path) == ("batched", "scalar")

    def strip(c: search.Candidate) -> dict[str, Any]:
        return {k: v for k, v in c.to_dict().items() if k != "path"}

    assert [strip(c) for c in fast.ranked] == [strip(c) for c in slow.ranked]
    assert [c.key() for c in fast.pareto] == [c.key() for c in slow.pareto]
    assert fast.rejected == slow.rejected and fast.partial.examples == slow.partial.examples
    assert {c.path for c in fast.ranked} == {"batched"} and {c.path for c in slow.ranked} == {"scalar"}


def test_swept_batch_and_sequence_price_every_layout_as_the_scalar_path() -> None:
    """The global batch as an array field (beside a swept sequence length): every feasible layout (not
    only the top K) equal (sequence parallelism on: Megatron-Core trains MoE at tp > 1 with it only, the search's
    rule moe-tp-needs-sp)."""
    base = estimator.load_config(EXAMPLES / "deepseek-v3-671b-h100.yaml", {"parallel.sequence_parallel": True})
    space = {"parallel.tp": (2, 8), "parallel.pp": (8,), "parallel.ep": (8, 64), "train.micro_batch_size": (1, 2),
             "train.global_batch_size": (1024, 4096, 6144), "train.seq_length": (2048, 8192)}
    fast = search.search(base, 1024, space, top_k=None)
    slow = search.search(base, 1024, space, top_k=None, batched=False)
    assert len(fast.ranked) >= 10 and {c.path for c in fast.ranked} == {"batched"}
    assert [(c.key(), c.peak_mb, c.total_s, c.tokens_per_s, c.mfu) for c in fast.ranked] == [
        (c.key(), c.peak_mb, c.total_s, c.tokens_per_s, c.mfu) for c in slow.ranked]
    assert fast.rejected == slow.rejected and fast.partial.examples == slow.partial.examples
    # and the step time of such a group is batched too (not the one-config fallback)
    from estimator.search.batched import array_config
    from estimator.search.batched_time import batch_step_time

    cfg = estimator.load_config(search_base(base, space), fast.ranked[0].overrides)
    proxy = array_config(cfg, {"train.global_batch_size": np.array([1024, 4096, 6144])})
    assert batch_step_time(proxy, 3) is not None


def test_unbatchable_group_goes_to_the_scalar_path() -> None:
    """Megatron's interleaved forward order is a table per micro-batch count: not an array formula,
    so those layouts are priced one by one and say so."""
    base = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml")
    space = {"parallel.tp": (1, 2, 4), "parallel.pp": (4,), "parallel.vpp": (1, 2)}
    res = search.search(base, 64, space, top_k=None)
    paths = {(c.overrides["parallel.vpp"], c.path) for c in res.ranked}
    assert paths == {(1, "batched"), (2, "scalar")}
    scalar = search.search(base, 64, space, top_k=None, batched=False)
    assert [c.peak_mb for c in res.ranked] == [c.peak_mb for c in scalar.ranked]


@pytest.mark.parametrize("example", ["llama3-8b-h100.yaml", "deepseek-v3-mini-A.yaml"])
def test_array_config_sees_arrays_in_derived_values(example: str) -> None:
    """Properties of the config (num_micro_batches) are evaluated on the arrays, not the representative."""
    from estimator.search.batched import array_config

    cfg = estimator.load_config(EXAMPLES / example)
    proxy = array_config(cfg, {"parallel.dp": np.array([1, 2]), "train.micro_batch_size": np.array([1, 1])})
    if cfg.train.num_micro_batches is None:
        gbs = cfg.train.global_batch_size
        assert list(proxy.num_micro_batches) == [gbs // 1, gbs // 2]
    assert proxy.model is cfg.model
