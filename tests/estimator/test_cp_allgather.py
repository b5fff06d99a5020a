"""All-gather context parallelism (Megatron ``--cp-comm-type allgather``, TE ``AttnFuncWithCPAndKVAllGather``;
estimator.perf.comm): the collectives by hand, exposed (nothing hides them), two attention steps, the kernels and
the importers. Synthetic dense model (labelled)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import estimator
from estimator.config.schema import EstimatorConfig, load_config
from estimator.perf import comm, kernels
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run


def _run(kind: str, cp: int = 4) -> EstimatorConfig:
    return load_config(synthetic_run(SYNTHETIC_DENSE_MODEL, profile="megatron",
                                     parallel={"tp": 1, "pp": 1, "dp": 2, "ep": 1, "cp": cp, "cp_comm_type": kind},
                                     train={"seq_length": 512, "micro_batch_size": 1, "num_micro_batches": 2,
                                            "flash_attention": True}))


def test_collectives_by_hand() -> None:
    """64 local tokens, K/V width 128, BF16, cp 4: K and V each gathered to 4·64·128·2 = 65,536 B; each rank sends
    3/4 of it: 2 × 49,152 B per forward; none at cp 1."""
    (ag,) = comm.cp_allgather_layer_collectives(64, 128, 2, 4)
    assert (ag.kind, ag.size_bytes, ag.count, ag.group_size) == ("all_gather", 65536, 2, 4)
    assert comm.wire_bytes(ag) == 2 * 49152
    assert comm.cp_allgather_layer_collectives(64, 128, 2, 1) == []
    assert comm.BACKWARD_COMM_FACTOR["cp_ag"] == 2.0  # gathered again and reduce-scattered in backward


def test_stage_bytes_and_nothing_hidden() -> None:
    """4 layers × (forward 1 + backward 2) × the forward's wire bytes (b·s/cp = 128 tokens, K/V width n_kv·d =
    4·8 = 32); the ring of the same layout hides part of its traffic under attention, all-gather none."""
    cfg = _run("allgather")
    stage = estimator.estimate_perf(cfg).stages[0]
    (ag,) = comm.cp_allgather_layer_collectives(128, 32, 2, 4)
    assert stage.cp_bytes == pytest.approx(4 * 3 * comm.wire_bytes(ag), rel=1e-12)
    assert stage.cp_hidden == 0.0 and stage.cp_comm > 0.0
    ring = estimator.estimate_perf(_run("p2p")).stages[0]
    assert ring.cp_hidden > 0.0


def test_two_attention_steps_and_their_kernels() -> None:
    assert (comm.cp_attention_steps(4, "allgather"), comm.cp_attention_steps(4, "p2p"),
            comm.cp_attention_steps(4, "a2a"), comm.cp_attention_steps(1, "allgather")) == (2, 4, 1, 1)
    shape: dict[str, Any] = {"moe": False, "layer_ep": 1, "tp": 1, "sequence_parallel": False, "tp_blocks": 2,
                             "cp": 4, "flash_attention": True}
    model = _run("allgather").model
    mods = kernels.layer_modules(kernels.layer_shape(model, **shape, cp_comm="allgather"))
    assert mods["core_attn"]["FLASH"] == 2 and mods["cp_comm"] == {"COLLECTIVE": 2, "POINTWISE": 2}


def test_megatron_flag_imports(tmp_path: Path) -> None:
    from estimator.importers.megatron import import_megatron

    path = tmp_path / "run.sh"
    path.write_text("--num-layers 4 --hidden-size 256 --num-attention-heads 4 --ffn-hidden-size 512 --swiglu "
                    "--seq-length 4096 --micro-batch-size 1 --global-batch-size 8 --bf16 --vocab-size 1024 "
                    "--context-parallel-size 2 --cp-comm-type allgather\n", encoding="utf-8")
    assert import_megatron(path, world_size=8).data["parallel"]["cp_comm_type"] == "allgather"


@pytest.mark.parametrize(("kind", "refused"), [("p2p", True), ("allgather", True), ("a2a", False)])
def test_attention_sinks_under_cp_need_ulysses(kind: str, refused: bool) -> None:
    """GPT-OSS's learnable softmax runs in TE's FusedAttention only, and under CP only with cp_comm_type a2a."""
    model = {**SYNTHETIC_DENSE_MODEL, "attention_sinks": True}
    run = synthetic_run(model, profile="megatron",
                        parallel={"tp": 1, "pp": 1, "dp": 2, "ep": 1, "cp": 2, "cp_comm_type": kind},
                        train={"seq_length": 512, "micro_batch_size": 1, "num_micro_batches": 2,
                               "flash_attention": True})
    if refused:
        with pytest.raises(estimator.ConfigError) as info:
            load_config(run)
        assert info.value.field == "parallel.cp_comm_type" and "a2a" in info.value.rule
    else:
        assert load_config(run).parallel.cp_comm_type == "a2a"


def test_gathered_kv_is_held_in_one_attention_backward() -> None:
    """K/V width 32 (the synthetic model's kv heads × head dim), seq 512, b 1, tp 1, BF16: 4 · 512 · 32 · 2 =
    131,072 B of gathered K, V, dK, dV in the backward overhead under allgather; none under p2p, at cp 1, with
    ``options.cp_gather_memory`` off (every other number the same), or under ``sapp-nd`` (its CP buffer)."""
    from estimator.inputs.derive import kv_dim
    from estimator.memory.activation import cp_allgather_kv_bytes

    gather = _run("allgather")
    assert kv_dim(gather.model) == 32
    assert cp_allgather_kv_bytes(gather) == 4 * 512 * 32 * 2
    assert cp_allgather_kv_bytes(_run("p2p")) == 0 and cp_allgather_kv_bytes(_run("allgather", cp=1)) == 0
    on = estimator.estimate_memory(gather).stages[0].components
    off = estimator.estimate_memory(load_config(gather.model_dump(), ["options.cp_gather_memory=false"])).stages[0]
    assert (on["backward_overhead"] - off.components["backward_overhead"]) * 2**20 == pytest.approx(131072)
    assert {k: v for k, v in on.items() if k != "backward_overhead"} == {
        k: v for k, v in off.components.items() if k != "backward_overhead"}


def test_sapp_nd_keeps_the_reference_cp_buffer_alone() -> None:
    from estimator.inputs.derive import stage_layouts
    from estimator.memory.stage import cp_gather_transient_bytes

    ref = load_config(synthetic_run(SYNTHETIC_DENSE_MODEL, profile="sapp-nd",
                                    parallel={"tp": 1, "pp": 1, "dp": 2, "ep": 1, "cp": 4, "cp_comm_type": "allgather"},
                                    train={"seq_length": 512, "micro_batch_size": 1, "num_micro_batches": 2}))
    gather = _run("allgather")
    assert cp_gather_transient_bytes(ref, stage_layouts(ref)[0]) == 0
    assert cp_gather_transient_bytes(gather, stage_layouts(gather)[0]) == 4 * 512 * 32 * 2
