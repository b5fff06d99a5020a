"""torch's loss parallelism in memory (``estimator.memory.activation.torch_loss_parallel``): torchtitan with TP > 1
runs the vocab-sharded cross entropy of ``torch.distributed.tensor.parallel.loss``, whose fused backward holds three
fp32 logits-sized tensors beside the saved log-probabilities, one more than ATen's unsharded path. The example is the
shipped Llama 3 8B config under the ``fsdp2`` profile."""

from __future__ import annotations

import pytest

import estimator
from estimator.memory import activation
from tests.estimator.scalar_reference import EXAMPLES

LLAMA = EXAMPLES / "llama3-8b-h100.yaml"
TITAN_TP = {"profile": "fsdp2", "parallel.tp": 2, "parallel.pp": 1, "parallel.dp": 4,
            "parallel.sequence_parallel": True}


def _overhead_mb(**overrides: object) -> float:
    return estimator.estimate_memory(estimator.load_config(LLAMA, {**TITAN_TP, **overrides})).stages[-1].components[
        "backward_overhead"]


def test_one_more_logits_copy_under_loss_parallel() -> None:
    cfg = estimator.load_config(LLAMA, TITAN_TP)
    assert activation.torch_loss_parallel(cfg) and activation.loss_backward_logits_copies(cfg) == 3
    # logits of one micro-batch: 8192 tokens · 128256 / tp 2 vocab columns · 4 B (fp32) = 2,101,346,304 B
    logits = activation.logits_bytes(cfg)
    assert logits == 8192 * 128256 / 2 * 4
    off = _overhead_mb(**{"options.loss_parallel_memory": False})
    assert _overhead_mb() - off == pytest.approx(logits / 2**20)  # 3 copies against the unsharded path's 2


@pytest.mark.parametrize("overrides", [
    {"parallel.tp": 1, "parallel.dp": 8, "parallel.sequence_parallel": False},  # no TP: ATen's cross entropy
    {"parallel.fsdp_implementation": "megatron"},  # Megatron-FSDP: Megatron's vocab-parallel loss
    {"options.loss_parallel_memory": False},
])
def test_other_losses_keep_the_profile_copies(overrides: dict[str, object]) -> None:
    cfg = estimator.load_config(LLAMA, {**TITAN_TP, **overrides})
    assert not activation.torch_loss_parallel(cfg)
    assert activation.loss_backward_logits_copies(cfg) == 2
