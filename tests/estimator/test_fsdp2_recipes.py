"""FSDP2 / torchtitan recipes: selective checkpointing policies, loss path, allocator reserve, and the
published torchtitan rows (real data, skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

import estimator
from estimator.experiments.measured_accuracy import summarise, table_errors
from estimator.memory.activation import layer_activation_bytes
from estimator.memory.sac import layer_checkpointed
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run

MIB = 2**20
T, B = 128, 2  # synthetic tokens per micro-batch and compute bytes


def _fsdp2(recompute: dict | None = None, model: dict | None = None, **kw) -> estimator.EstimatorConfig:
    run = synthetic_run(model=model or SYNTHETIC_DENSE_MODEL, profile="fsdp2",
                        parallel={"tp": 1, "pp": 1, "dp": 4, "ep": 1},
                        recompute=recompute or {"mode": "selective", "selective_ac_option": "op"}, **kw)
    return estimator.load_config(run)


def test_op_sac_keeps_input_odd_mms_and_sdpa_outputs_gelu() -> None:
    """Synthetic GeLU block (h 64, 8 heads, 4 KV heads, d 8, F 256): mm order q k v o fc1 fc2; the odd
    ones q (64), v (32), fc1 (256) are kept, plus the input (64), the SDPA output (64) and fp32 LSE."""
    cfg = _fsdp2()
    expected = T * 64 * B + (64 + 32 + 256) * T * B + T * 64 * B + T * 8 * 4
    assert layer_activation_bytes(cfg, 0, "selective") == expected == 126976


def test_op_sac_swiglu_keeps_w1_and_w2() -> None:
    """SwiGLU: q k v o w1 w3 w2 -> q, v, w1, w2 kept (w3 recomputed)."""
    cfg = _fsdp2(model={**SYNTHETIC_DENSE_MODEL, "activation": "swiglu"})
    expected = T * 64 * B + (64 + 32 + 256 + 64) * T * B + T * 64 * B + T * 8 * 4
    assert layer_activation_bytes(cfg, 0, "selective") == expected


def test_op_sac_between_full_and_none() -> None:
    cfg = _fsdp2()
    op = layer_activation_bytes(cfg, 0, "selective")
    assert layer_activation_bytes(cfg, 0, "full") < op < layer_activation_bytes(cfg, 0, "none")


def test_layer_sac_checkpoints_every_nth_layer() -> None:
    """torchtitan selective_ac_option '2': layers 1 and 3 (0-based) fully checkpointed, 0 and 2 keep all."""
    assert [layer_checkpointed(i, 2) for i in range(4)] == [False, True, False, True]
    cfg = _fsdp2(recompute={"mode": "selective", "selective_ac_option": "2"})
    kept = [layer_activation_bytes(cfg, i, "selective") for i in range(4)]
    assert kept[1] == kept[3] == layer_activation_bytes(cfg, 1, "full") == T * 64 * B
    assert kept[0] == kept[2] == layer_activation_bytes(cfg, 0, "none")


def test_torchtitan_loss_backward_holds_three_fp32_logit_tensors() -> None:
    """log_softmax output (activations) + nll grad + log_softmax grad (backward overhead)."""
    cfg = _fsdp2()
    c = estimator.estimate_memory(cfg).stages[0].components
    logits = T * 1000 * 4
    head_input = T * 64 * B
    assert c["backward_overhead"] == pytest.approx((head_input + 2 * logits) / MIB)


def test_reserve_terms_and_expandable_segments() -> None:
    """Idle blocks at the peak: bf16 logits, the root group's all-gather output and copy-out storage,
    the last block's freed intermediates; expandable segments keep only the other stream's buffer."""
    cfg = _fsdp2()
    stage = estimator.estimate_memory(cfg).stages[0]
    reserve = stage.reserve
    assert reserve["idle_compute_dtype_logits"] == pytest.approx(T * 1000 * B / MIB)
    # root group = embedding 1000·64 + output 1000·64 + final LayerNorm 2·64, bf16, two buffers
    assert reserve["idle_root_all_gather_buffers"] == pytest.approx(2 * (64000 + 64128) * B / MIB)
    assert reserve["idle_block_intermediates"] == pytest.approx(
        (layer_activation_bytes(cfg, 3, "none") - layer_activation_bytes(cfg, 3, "selective")) / MIB)
    assert stage.reserved_mb == pytest.approx(stage.total_mb + sum(reserve.values()))
    expandable = estimator.load_config(cfg, {"options.expandable_segments": True})
    kept = estimator.estimate_memory(expandable).stages[0].reserve
    assert set(kept) == {"idle_root_all_gather_buffers"}
    # Megatron-FSDP: the parameters are views of the all-gather bucket, so no copy-out storage: one buffer
    mfsdp = estimator.estimate_memory(estimator.load_config(cfg, {"parallel.fsdp_implementation": "megatron"}))
    assert mfsdp.stages[0].reserve["idle_root_all_gather_buffers"] == pytest.approx((64000 + 64128) * B / MIB)
    megatron = estimator.load_config(synthetic_run(model=SYNTHETIC_DENSE_MODEL, profile="megatron",
                                                   parallel={"tp": 1, "pp": 1, "dp": 4, "ep": 1}))
    m_stage = estimator.estimate_memory(megatron).stages[0]
    assert m_stage.reserve == {} and m_stage.reserved_mb == m_stage.total_mb


@pytest.mark.parametrize(("recompute", "field"), [
    ({"mode": "selective", "selective_ac_option": "ops"}, "recompute.selective_ac_option"),
    ({"mode": "full", "selective_ac_option": "op"}, "recompute.selective_ac_option"),
    ({"mode": "selective", "modules": ["op-level SAC"]}, "recompute.modules"),
])
def test_unknown_checkpoint_policy_is_a_config_error(recompute: dict, field: str) -> None:
    with pytest.raises(estimator.ConfigError) as info:
        _fsdp2(recompute=recompute)
    assert info.value.field == field
    assert "valid example" in str(info.value)


def test_op_sac_on_moe_is_rejected() -> None:
    run = synthetic_run(profile="fsdp2", recompute={"mode": "selective", "selective_ac_option": "op"},
                        parallel={"tp": 1, "pp": 1, "dp": 4, "ep": 2})
    with pytest.raises(estimator.ConfigError, match="dense MHA/GQA"):
        estimator.load_config(run)


# -- real rows ------------------------------------------------------------------------------------


def test_torchtitan_rows_max_reserved_in_band(measured_dir: Path) -> None:
    """The six torchtitan FSDP2 rows (Tables 1, 3): reserved estimate within 0.90-1.10 of max reserved."""
    rows = [e for e in table_errors(measured_dir / "memory_cases.csv") if e.case_id.startswith("torchtitan")]
    assert len(rows) == 6
    assert all(e.estimate_of.endswith("reserved") for e in rows)
    assert all(-0.10 <= e.signed_error <= 0.10 for e in rows), [(e.case_id, e.signed_error) for e in rows]


WAIVED = "megatron_ci__gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental__dev_dgx_h100__max_allocated"


def test_measured_memory_table_median_and_band(measured_dir: Path) -> None:
    """Every other row in band (one waiver, as in the case file) and median |error| ≤ 3 %."""
    summary = summarise(table_errors(measured_dir / "memory_cases.csv"), exclude=[WAIVED])
    assert summary.rows == 59
    assert summary.outside_band == ()
    assert summary.median_abs_error <= 0.03


def test_measured_memory_table_max_error(measured_dir: Path) -> None:
    """Issue bar: max |error| <= 8 % over every row but the waived one (was 8.8 % before the TE fused
    loss and FP8 saved inputs: the SimuMax '_cef' rows and the CI MoE FP8 peak)."""
    summary = summarise(table_errors(measured_dir / "memory_cases.csv"), exclude=[WAIVED])
    assert summary.max_abs_error <= 0.08, summary


def test_korthikanti_params_optimizer_counts_the_layers_only(measured_dir: Path) -> None:
    """Fig. 1's params+optimizer = 18 B x 12h^2 x L/(t.p) (no embedding, no output layer): compared with
    the stage's layers only; the layers' 12h^2 + 13h weights give it within 0.1 %, the whole stage
    (embedding + output layer, 18 B each) would be 2.9-8.2 % over."""
    rows = [e for e in table_errors(measured_dir / "memory_cases.csv")
            if e.case_id.startswith("korthikanti2022_fig1") and e.case_id.endswith("params_optimizer")]
    assert len(rows) == 8
    assert all(e.estimate_of == "stage 0 layers' params+optimizer_states+grads" for e in rows)
    assert all(abs(e.signed_error) < 0.001 for e in rows), [(e.case_id, e.signed_error) for e in rows]
