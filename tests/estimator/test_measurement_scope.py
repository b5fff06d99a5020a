"""``estimator.experiments.measured.measured_kind_of``: a source's narrower measurement scope (synthetic rows)."""

from __future__ import annotations

import pytest

import estimator
from estimator.experiments.measured import estimate_for_measurement, measured_kind_of
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run

MIB = 2**20


def test_korthikanti_params_optimizer_is_scoped_to_layers() -> None:
    assert measured_kind_of({"source_id": "korthikanti2022_fig1", "measured_kind": "params_optimizer"}) == \
        "params_optimizer:layers"
    assert measured_kind_of({"source_id": "korthikanti2022_fig1", "measured_kind": "activations"}) == "activations"
    assert measured_kind_of({"source_id": "megatron_ci", "measured_kind": "params_optimizer"}) == "params_optimizer"
    assert measured_kind_of({"source_id": "x"}) == "max_allocated"


def test_layers_scope_leaves_out_embedding_and_head() -> None:
    """Synthetic dense run on one stage: the layers scope = the stage static minus embedding and head."""
    cfg = estimator.load_config(synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="megatron",
                                              parallel={"tp": 1, "pp": 1, "dp": 1, "ep": 1}))
    report = estimator.estimate_memory(cfg)
    whole, _ = estimate_for_measurement(report, "params_optimizer", "")
    layers, what = estimate_for_measurement(report, "params_optimizer:layers", "")
    assert what == "stage 0 layers' params+optimizer_states+grads"
    m = cfg.model
    vocab_and_norm = 2 * m.vocab * m.hidden_size + 2 * m.hidden_size  # untied embedding + head + final norm (LayerNorm)
    # megatron, no distributed optimizer: 2 (bf16 param) + 4 (fp32 grad) + 12 (master + Adam) = 18 B
    assert whole - layers == pytest.approx(18 * vocab_and_norm / MIB)
