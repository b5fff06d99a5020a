"""Mutated estimator configs: only ``ConfigError``; an accepted config estimates within the bounds and its
JSON is strict JSON (no NaN/Infinity)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.config.errors import ConfigError
from estimator.config.schema import load_config
from estimator.memory import estimate_memory
from estimator.perf.parts import estimate_perf
from ndval.harness.commands import estimate as cli_estimate
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run
from tests.fuzz.conftest import PROFILE
from tests.fuzz.limits import bounded, only

FIELDS = [
    "model.num_layers", "model.hidden_size", "model.num_attention_heads", "model.num_experts", "model.moe_topk",
    "model.mtp_layers", "model.vocab_size", "model.ffn_hidden_size", "model.num_dense_layers",
    "train.seq_length", "train.micro_batch_size", "train.num_micro_batches", "train.global_batch_size",
    "parallel.tp", "parallel.pp", "parallel.dp", "parallel.ep", "parallel.etp", "parallel.cp", "parallel.vpp",
    "options.safety_buffer_mb", "options.compute_efficiency", "options.ep_comm_overlap",
    "options.part_coefficients", "options.host_launch_cost_us", "hardware.hbm_gib", "hardware.peak_tflops",
    "hardware.devices_per_node", "profile",
]
VALUES = st.one_of(
    st.integers(-10, 10**4), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.none(), st.text(max_size=5), st.booleans(),
    st.dictionaries(st.sampled_from(["FW_COMPUTE", "BW_COMPUTE", "bf16", "x"]), st.floats(), max_size=2),
    st.lists(st.integers(-2, 64), max_size=3),
)


def _set(run: dict[str, Any], dotted: str, value: Any) -> None:
    head, _, rest = dotted.partition(".")
    if not rest:
        run[head] = value
        return
    node = run.get(head)
    if not isinstance(node, dict):
        node = {"preset": node} if head == "hardware" and isinstance(node, str) else {}
        run[head] = node
    _set(node, rest, value)


def _estimate(run: dict[str, Any]) -> None:
    cfg = load_config(run)
    doc = {"memory": estimate_memory(cfg).to_dict(), "perf": estimate_perf(cfg).to_dict()}
    bad = cli_estimate.non_finite_fields(doc)
    assert not bad, f"accepted config gives non-finite {bad[:3]}"
    json.dumps(doc, allow_nan=False, default=str)


@settings(settings.get_profile(PROFILE))
@given(dense=st.booleans(), edits=st.lists(st.tuples(st.sampled_from(FIELDS), VALUES), min_size=1, max_size=3))
def test_mutated_config_is_estimated_or_a_config_error(dense: bool, edits: list[tuple[str, Any]]) -> None:
    run = synthetic_run(SYNTHETIC_DENSE_MODEL, parallel={"tp": 1, "pp": 2, "dp": 4, "ep": 1}) if dense else synthetic_run()
    for dotted, value in edits:
        _set(run, dotted, value)
    with bounded(f"estimate with {edits}", trace_memory=False):
        only((ConfigError,), lambda: _estimate(run))
