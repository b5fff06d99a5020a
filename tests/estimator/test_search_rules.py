"""The config rules as array masks (estimator.config.rules, estimator.search.price) against the scalar
path (``load_config`` one layout at a time): the same rejection reason and message on ≥ 10,000 random
layouts, valid and invalid, of the bundled examples under every profile; the grid enumerates the
same layouts in the same order as ``layouts``."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.config.rules import RULES, first_broken
from estimator.search import Partial, search_base
from estimator.search.evaluate import Rejection, load_layout
from estimator.search.grid import Grid, Group, Skipped
from estimator.search.price import Pricing
from estimator.search.space import SPLIT_DIM, Layout, SkippedLayout, layouts
from tests.estimator.scalar_reference import EXAMPLES

#: dimensions chosen to break every kind of rule: degrees that do not divide heads, experts, the
#: sequence or the batch, schedules against vpp, uneven splits, sequence parallelism, shard sizes
RULE_SPACE: dict[str, tuple[Any, ...]] = {
    "parallel.tp": (1, 2, 3, 4, 8), "parallel.pp": (1, 2, 3, 4), "parallel.vpp": (1, 2, 3),
    "parallel.schedule": ("1f1b", "interleaved", "zero_bubble_v", "gpipe"),
    "parallel.ep": (1, 2, 3, 8), "parallel.etp": (1, 2), "parallel.cp": (1, 2, 3),
    "train.micro_batch_size": (1, 3), "train.seq_length": (4096, 6144), "parallel.sequence_parallel": (False, True),
    "parallel.optimizer_shard_size": (2, 3), SPLIT_DIM: ("even", "first-last", "account"),
}
EXAMPLE_FILES = ("deepseek-v3-671b-h100.yaml", "llama3-8b-h100.yaml", "deepseek-v3-mini-A.yaml")
PROFILES = ("sapp-nd", "megatron", "fsdp2")
PER_CASE = 1150  # × 9 cases ≥ 10,000 layouts


def _scalar_outcome(data: dict[str, Any], overrides: dict[str, Any]) -> tuple[str, str] | None:
    """The one-by-one path's outcome: the config rules, then the search's own (:data:`SEARCH_RULES`)."""
    outcome = load_layout(data, Layout(tuple(overrides.items())))
    return (outcome.reason, outcome.message) if isinstance(outcome, Rejection) else None


def _batched_outcomes(pricing: Pricing, g: Group, wanted: list[int]) -> dict[int, tuple[str, str] | None]:
    out: dict[int, tuple[str, str] | None] = dict.fromkeys(wanted)
    for reason, rows, message in pricing.screen(g)[1]:
        for i in set(rows.tolist()) & set(wanted):
            out[i] = (reason, message(i))
    return out


def test_rule_masks_give_the_scalar_reason_and_message_on_10000_random_layouts() -> None:
    rng = random.Random(1515)
    compared = 0
    reasons: Counter[str] = Counter()
    messages: set[str] = set()
    for example in EXAMPLE_FILES:
        for profile in PROFILES:
            base = estimator.load_config(EXAMPLES / example, {"profile": profile})
            data = search_base(base, RULE_SPACE)
            pricing = Pricing(Grid(base, 96, RULE_SPACE), data, Partial())
            groups = [p for p in pricing.grid.blocks() if isinstance(p, Group)]
            rng.shuffle(groups)
            budget = PER_CASE
            for g in groups:
                rows = rng.sample(range(len(g)), min(len(g), 6))
                got = _batched_outcomes(pricing, g, rows)
                for i in rows:
                    want = _scalar_outcome(data, pricing.grid.overrides(g, i))
                    assert got[i] == want, (example, profile, pricing.grid.overrides(g, i))
                    reasons[want[0] if want else "valid"] += 1
                    messages.add(want[1].split(": ", 1)[1] if want else "")
                budget -= len(rows)
                compared += len(rows)
                if budget <= 0:
                    break
    assert compared >= 10_000, compared
    # the sample reaches valid layouts and the rules of every kind (so the comparison can fail)
    assert reasons["valid"] >= 100, reasons
    assert {"invalid parallel.tp", "invalid parallel.ep", "invalid parallel.vpp", "invalid parallel.schedule",
            "invalid train.seq_length", "invalid train.global_batch_size", "invalid parallel.pp",
            "invalid parallel.optimizer_shard_size"} <= set(reasons), reasons
    assert len(messages) >= 30, len(messages)


@pytest.mark.parametrize(("example", "devices", "space"), [
    ("deepseek-v3-671b-h100.yaml", 96, {k: v for k, v in RULE_SPACE.items()
                                        if k not in (SPLIT_DIM, "parallel.sequence_parallel", "parallel.etp")}),
    ("llama3-8b-h100.yaml", 48, {"parallel.tp": (1, 2, 4), "parallel.pp": (1, 2, 4), "parallel.vpp": (1, 2),
                                  "recompute.mode": ("none", "full"), "parallel.cp": (1, 2, 3),
                                  "train.micro_batch_size": (1, 2)}),
])
def test_grid_enumerates_the_layouts_in_sweep_order(example: str, devices: int, space: dict[str, Any]) -> None:
    """Every layout and skipped point of ``layouts``, with the same overrides, split and order."""
    base = estimator.load_config(EXAMPLES / example)
    grid = Grid(base, devices, space)
    got: list[tuple[tuple[int, int], tuple[tuple[str, Any], ...], str]] = []
    for piece in grid.blocks():
        s = piece.split_index if isinstance(piece, Group) else 0
        label = grid.label(piece) if isinstance(piece, Group) else "skipped"
        got += [((int(piece.order[i]), s), tuple(grid.overrides(piece, i).items()), label) for i in range(len(piece))]
    got.sort(key=lambda x: x[0])
    want = [(p.overrides, p.split if isinstance(p, Layout) else "skipped") for p in layouts(base, devices, space)]
    assert [(o, lab) for _, o, lab in got] == want
    assert any(isinstance(p, SkippedLayout) for p in layouts(base, devices, space))
    assert any(isinstance(p, Skipped) for p in grid.blocks())


def test_rule_table_order_is_the_scalar_order() -> None:
    """A config breaking two rules reports the earlier one in the table (tp before the world size)."""
    cfg = estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml")
    assert first_broken(cfg) is None
    with pytest.raises(ConfigError) as err:
        estimator.load_config(cfg, {"parallel.tp": 3, "hardware.devices": 7})
    assert err.value.field == "parallel.tp" and "got 3" in err.value.rule
    fields = [r.field for r in RULES if isinstance(r.field, str)]
    assert fields.index("parallel.tp") < fields.index("parallel") < fields.index("train.seq_length")


def test_first_broken_index_over_arrays_matches_row_by_row() -> None:
    from estimator.config.rules import NO_RULE, first_broken_index
    from estimator.search.batched import array_config

    cfg = estimator.load_config(EXAMPLES / "deepseek-v3-mini-A.yaml")
    tp = np.array([1, 3, 2, 2, 1])
    dp = np.array([8, 8, 4, 3, 8])
    ep = np.array([4, 4, 5, 4, 4])
    proxy = array_config(cfg, {"parallel.tp": tp, "parallel.dp": dp, "parallel.ep": ep})
    first = first_broken_index(proxy, 5)
    for i in range(5):
        row = array_config(cfg, {"parallel.tp": tp[i:i + 1], "parallel.dp": dp[i:i + 1], "parallel.ep": ep[i:i + 1]})
        want = next((k for k, r in enumerate(RULES) if r.broken(row)), NO_RULE)
        assert first[i] == want
    assert first[1] == 0  # tp 3 does not divide the heads: the first rule


@pytest.mark.parametrize("batched", [True, False])
def test_search_leaves_out_moe_layouts_megatron_does_not_train(batched: bool) -> None:
    """Rule moe-tp-needs-sp: under ``megatron`` a MoE model at tp > 1 without sequence parallelism is a layout
    Megatron-Core refuses in training; a single estimate prices and states it, a search rejects it (both paths,
    the same reason), and with sequence parallelism on, under another profile or for a dense model it stays."""
    from estimator import search

    space = {"parallel.tp": (1, 2), "parallel.ep": (4,)}
    base = estimator.load_config(EXAMPLES / "deepseek-v3-mini-A.yaml", {"profile": "megatron",
                                                                         "parallel.sequence_parallel": False})
    res = search.search(base, 16, space, top_k=None, batched=batched)
    assert {c.overrides["parallel.tp"] for c in res.ranked} <= {1}
    assert res.rejected.get("invalid parallel.sequence_parallel", 0) >= 1
    assert "moe-tp-needs-sp" in res.partial.examples["invalid parallel.sequence_parallel"]
    on = search.search(estimator.load_config(EXAMPLES / "deepseek-v3-mini-A.yaml", {
        "profile": "megatron", "parallel.sequence_parallel": True}), 16, space, top_k=None, batched=batched)
    assert "invalid parallel.sequence_parallel" not in on.rejected
    other = search.search(estimator.load_config(EXAMPLES / "deepseek-v3-mini-A.yaml", {
        "profile": "sapp-nd", "parallel.sequence_parallel": False}), 16, space, top_k=None, batched=batched)
    assert "invalid parallel.sequence_parallel" not in other.rejected
    dense = search.search(estimator.load_config(EXAMPLES / "llama3-8b-h100.yaml", {
        "profile": "megatron", "parallel.sequence_parallel": False}), 16, {"parallel.tp": (1, 2)}, top_k=None,
        batched=batched)
    assert "invalid parallel.sequence_parallel" not in dense.rejected
