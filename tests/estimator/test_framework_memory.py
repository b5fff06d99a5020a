"""Run-long framework allocations (``estimator.memory.framework``) and the rows they move.

The unit tests pin each term to its source's numbers (PyTorch/TE workspace sizes, TE's one dummy
gradient per weight shape, Megatron's global all-gather buffer) on synthetic configs; the
real-data tests (skipped without ../shared/data) check the Megatron-LM CI ``allocated_steady``
rows, which compare params + optimizer states + grads + these terms with what was measured.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import estimator
from estimator.config import presets
from estimator.experiments.measured import config_from_measured_row, megatron_padded_vocab
from estimator.experiments.measured_accuracy import table_errors
from estimator.inputs.derive import stage_layouts
from estimator.memory import framework
from ndval.core.units import BYTES_PER_MIB

MIB = BYTES_PER_MIB


def _moe_ci_like(hardware: str = "h100-80g", profile: str = "megatron", **train: object) -> estimator.EstimatorConfig:
    """Synthetic config with the Megatron CI MoE proxy's shapes (MLA, 32 experts, MTP, TP2 PP2 EP4
    ETP1, SP), written here by hand - not read from the CSV."""
    return estimator.load_config({
        "profile": profile,
        "model": {"num_layers": 16, "num_dense_layers": 1, "hidden_size": 1024, "ffn_hidden_size": 4096,
                  "num_attention_heads": 32, "attention": "mla", "q_lora_rank": 1536, "kv_lora_rank": 512,
                  "qk_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "num_experts": 32,
                  "moe_topk": 4, "num_shared_experts": 1, "moe_ffn_hidden_size": 1024, "mtp_layers": 1,
                  "vocab_size": 50257, "padded_vocab_size": 51712},
        "train": {"seq_length": 4096, "micro_batch_size": 4, "num_micro_batches": 4, **train},
        "parallel": {"tp": 2, "pp": 2, "vpp": 4, "dp": 2, "ep": 4, "etp": 1, "sequence_parallel": True,
                     "schedule": "interleaved", "distributed_optimizer": True},
        "hardware": hardware,
    })


def test_torch_cublas_workspace_follows_pytorch_defaults() -> None:
    assert framework.torch_cublas_workspace_bytes((9, 0)) == 32 * MIB
    assert framework.torch_cublas_workspace_bytes((8, 0)) == 4096 * 1024 * 2 + 16 * 1024 * 8
    assert framework.torch_cublas_workspace_bytes((10, 0)) == 4096 * 1024 * 2 + 16 * 1024 * 8


def test_te_workspace_and_grouped_gemm_streams() -> None:
    assert framework.te_cublas_workspace_bytes((9, 0), False) == 32 * MIB + 1024
    assert framework.te_cublas_workspace_bytes((10, 0), True) == 5 * (32 * MIB + 1024)
    assert framework.te_cublas_workspace_bytes((8, 0), True) == 5 * 4 * MIB


def test_dummy_wgrads_once_per_shape_and_dtype() -> None:
    shapes = [(2.0, 3.0, 2), (2.0, 3.0, 2), (3.0, 2.0, 2), (2.0, 3.0, 4)]
    assert framework.dummy_wgrad_bytes(shapes) == 12 + 12 + 24
    tp = np.array([1, 2])  # an array of layouts: equal only where the values are
    arrays = [(4.0 / tp, 3.0, 2), (2.0, 3.0, 2)]
    assert list(framework.dummy_wgrad_bytes(arrays)) == [24 + 12, 12]


def test_linear_weight_shapes_of_the_moe_ci_last_stage() -> None:
    """Hand-written (out, in) of every TE linear on the last stage: MLA (q_lora 1536, kv_lora 512 + rope
    64, 32 heads of 128 + 64 / 128), routed experts F_e 1024 at etp 1, shared expert 1024 at tp 2
    (fc1 1024x1024 = the routed fc2's shape: one dummy), MTP eh_proj, output layer 51712/2 x 1024."""
    cfg = _moe_ci_like()
    last = stage_layouts(cfg)[-1]
    expected = {(1536, 1024), (32 * 192 / 2, 1536), (576, 1024), (32 * 256 / 2, 512), (1024, 32 * 128 / 2),
                (2048, 1024), (1024, 1024), (1024, 512), (512, 2048), (51712 / 2, 1024)}
    assert {(r, c) for r, c, _ in framework.linear_weight_shapes(cfg, last)} == expected
    elements = sum(r * c for r, c in expected)
    assert framework.persistent_bytes(cfg, last)["dummy_wgrads"] == elements * 2


def test_persistent_terms_of_the_moe_ci_last_stage() -> None:
    cfg = _moe_ci_like(moe_grouped_gemm=True)
    terms = framework.persistent_bytes(cfg, stage_layouts(cfg)[-1])
    assert terms["torch_cublas_workspace"] == 32 * MIB
    assert terms["te_cublas_workspace"] == 5 * (32 * MIB + 1024)
    assert terms["sp_gather_buffer"] == 4096 * 4 * 1024 * 2  # s·b·h bf16 = 32 MiB
    first = framework.persistent_bytes(cfg, stage_layouts(cfg)[0])
    assert first["sp_gather_buffer"] == 0.0  # no output layer there


def test_terms_follow_their_switches() -> None:
    no_fusion = _moe_ci_like(gradient_accumulation_fusion=False)
    terms = framework.persistent_bytes(no_fusion, stage_layouts(no_fusion)[-1])
    assert "dummy_wgrads" not in terms
    assert terms["te_cublas_workspace"] == 32 * MIB + 1024  # no grouped GEMM: one workspace


def test_stage_memory_carries_the_terms_in_other_and_steady() -> None:
    cfg = _moe_ci_like()
    stage = estimator.estimate_memory(cfg).stages[-1]
    persistent = sum(stage.persistent.values())
    assert persistent > 100  # MiB
    assert stage.components["other"] == pytest.approx(persistent)
    assert stage.steady_mb == pytest.approx(stage.static_mb + persistent)


def test_no_terms_off_cuda_or_for_the_reference_profile() -> None:
    ascend = _moe_ci_like(hardware="ascend-910b")
    assert framework.persistent_bytes(ascend, stage_layouts(ascend)[-1]) == {}
    sapp = _moe_ci_like(profile="sapp-nd")
    assert framework.persistent_bytes(sapp, stage_layouts(sapp)[-1]) == {}
    fsdp = _moe_ci_like(profile="fsdp2")
    assert set(framework.persistent_bytes(fsdp, stage_layouts(fsdp)[-1])) == {"torch_cublas_workspace"}


def test_megatron_padded_vocab_rule() -> None:
    assert megatron_padded_vocab(50257, 3232, 2) == 51712
    assert megatron_padded_vocab(131073, 128, 4) == 131584
    assert megatron_padded_vocab(6464, 3232, 2) == 6464


# -- real rows ------------------------------------------------------------------------------------


def _rows(measured_dir: Path) -> list[dict[str, str]]:
    with (measured_dir / "memory_cases.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_moe_ci_rows_pad_the_vocab_and_use_grouped_gemm(measured_dir: Path) -> None:
    rows = [r for r in _rows(measured_dir) if r["source_id"] == "megatron_ci" and "mcore_te" in r["model_name"]]
    assert len(rows) == 8
    for row in rows:
        cfg = config_from_measured_row(row)
        assert cfg["model"]["padded_vocab_size"] == 51712
        assert cfg["train"]["moe_grouped_gemm"] is True
        assert "--make-vocab-size-divisible-by 3232" in cfg["model"]["source_facts"]["model.padded_vocab_size"]


def test_7b_ci_rows_run_without_gradient_accumulation_fusion(measured_dir: Path) -> None:
    rows = [r for r in _rows(measured_dir) if r["source_id"] == "megatron_ci" and "7b" in r["model_name"]]
    assert len(rows) == 4
    for row in rows:
        cfg = config_from_measured_row(row)
        assert cfg["train"]["gradient_accumulation_fusion"] is False
        assert cfg["model"]["padded_vocab_size"] == int(row["padded_vocab_size"])  # the stated cell wins


def test_ci_steady_rows_with_the_run_long_terms(measured_dir: Path) -> None:
    """The MoE proxies' steady rows were -7.7 to -9.2 % with params + optimizer + grads alone; with the
    sourced run-long terms they are within 4 % (the 7B PP4 row stays -5.6 %: not explained)."""
    steady = {e.case_id: e for e in table_errors(measured_dir / "memory_cases.csv")
              if e.case_id.endswith("allocated_steady")}
    assert len(steady) == 6
    for case_id, e in steady.items():
        assert e.estimate_of.endswith("+persistent")
        limit = 0.06 if "7b_tp1_pp4" in case_id else 0.04
        assert abs(e.signed_error) <= limit, (case_id, e.signed_error)


def test_steady_estimate_is_static_plus_persistent(measured_dir: Path) -> None:
    row = next(r for r in _rows(measured_dir)
               if r["case_id"].endswith("etp1_memory_speed__dev_dgx_h100__allocated_steady"))
    config = config_from_measured_row(row)
    config["options"] = {**config.get("options", {}), **presets.fixed()}
    stage = estimator.estimate_memory(estimator.load_config(config)).stages[-1]
    assert set(stage.persistent) == {"torch_cublas_workspace", "te_cublas_workspace", "dummy_wgrads",
                                     "sp_gather_buffer"}
    assert stage.persistent["te_cublas_workspace"] == pytest.approx(5 * (32 + 1 / 1024))
