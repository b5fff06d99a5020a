"""The routed experts' output bias as Megatron-Core adds it: weighted by the routing probabilities, per local expert.

With ``add_bias_linear`` (GPT-OSS; ``model.linear_bias``) Megatron-Core's ``TEGroupedMLP`` fuses the fc1 bias into
its weighted activation, but adds the fc2 bias after the grouped GEMM, scaled by each token's routing probability
(NVIDIA/Megatron-LM@a329dd6da5 "Enable bias in expert mlp [gpt-oss 5/5]", first in ``core_v0.15.0``;
``moe/experts.py`` ``TEGroupedMLP._apply_bias``)::

    torch.cat([t + b * p for t, b, p in zip(split(output), biases, split(probs))]).to(output.dtype)

per local expert ``e``: its slice ``t`` of the fc2 output (``B`` bytes), its bias ``b`` (``h``) and its tokens'
probabilities ``p`` (fp32, the recipes' ``moe_router_dtype``), so the products and sums are fp32. Bytes per element
of the rank's fc2 output (``T_r·h``, ``T_r`` routed tokens), from the ops and PyTorch's autograd formulas
(``tools/autograd/derivatives.yaml``: ``mul`` → ``grad·other`` summed to the broadcast shape, ``add`` → ``grad``
cast to each input's dtype, ``cat`` → views, ``to`` → the cast back):

* forward (:func:`forward_bytes`) ``24 + 2B``: ``b·p`` writes 4; ``t + b·p`` reads ``B + 4``, writes 4; ``cat``
  reads 4, writes 4; ``.to`` reads 4, writes ``B``. Kernels ``2·E_local + 2``.
* backward (:func:`backward_bytes`) ``32 + 2B``: the cast of the gradient to fp32 reads ``B``, writes 4; ``t``'s
  gradient cast back reads 4, writes ``B``; ``b``'s (``grad·p`` summed over tokens) and ``p``'s (``grad·b``
  summed over ``h``) each a product (read 4, write 4) and a reduction (read 4). Kernels ``5·E_local + 1``.

Priced where Megatron-Core runs the experts (profile ``megatron``, or Megatron-FSDP under ``fsdp2``) with
``model.linear_bias`` and ``options.expert_bias`` on, and not through TE's op fuser (:func:`expert_bias_active`):
with ``train.te_op_fuser`` Megatron-Core takes its fused path only where TE's ``GroupedLinear`` can scale the fc2
bias by the probabilities itself (@d98e8a64dd ``TEGroupedMLP._is_fused_impl_supported``: "Older TE op-fuser versions
cannot scale FC2 bias by router probabilities"), so no separate pass runs. The host launch bound does not count
these kernels (the passes are memory-bound on ``T_r·h`` elements, not launch-bound). Megatron-LM@883533e049
(2026-08-14) replaces the per-expert loop by one packed fp32 pass of similar bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.inputs.profiles import megatron_core_layers

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig

#: fp32 bytes of the products and sums (the routing probabilities' dtype)
FP32_BYTES = 4


def forward_bytes(b: int) -> float:
    """Forward bytes per fc2-output element: ``4 + (B + 8) + 8 + (4 + B) = 24 + 2B`` (module docstring)."""
    return FP32_BYTES + (b + 2 * FP32_BYTES) + 2 * FP32_BYTES + (FP32_BYTES + b)


def backward_bytes(b: int) -> float:
    """Backward bytes per fc2-output element: ``(B + 4) + (4 + B) + 2·(4 + 4 + 4) = 32 + 2B`` (module docstring)."""
    return (b + FP32_BYTES) + (FP32_BYTES + b) + 2 * (3 * FP32_BYTES)


def kernels(local_experts: float) -> tuple[float, float]:
    """(forward, backward) kernels per MoE layer: ``2·E + 2`` (mul and add per expert, cat, cast) and ``5·E + 1``."""
    return 2.0 * local_experts + 2.0, 5.0 * local_experts + 1.0


def expert_bias_active(cfg: EstimatorConfig) -> bool:
    """``model.linear_bias`` on a MoE model whose experts Megatron-Core runs
    (:func:`estimator.inputs.profiles.megatron_core_layers`) outside TE's op fuser (``train.te_op_fuser`` off), with
    ``options.expert_bias`` on."""
    if not (cfg.model.linear_bias and cfg.options.expert_bias and cfg.model.num_experts) or cfg.train.te_op_fuser:
        return False
    return megatron_core_layers(cfg)
