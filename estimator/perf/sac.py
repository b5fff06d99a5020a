"""What torchtitan's op-level selective activation checkpointing re-runs in the backward (step time).

Source: pytorch/torchtitan@9dec370 ``torchtitan/parallelisms/parallelize_llama.py``
(``_apply_ac_to_transformer_block``, ``_save_list``), the commit of the torchtitan H100 benchmark rows
(the memory side, what a block keeps, is :mod:`estimator.memory.sac`). Each block runs under a
checkpoint whose policy returns ``MUST_SAVE`` for ``aten.mm`` (except every second mm: a per-block
counter, even counts are recomputed), ``_scaled_dot_product_flash/efficient_attention``,
``reduce_scatter_tensor``, ``abs`` and ``max``; every other op is ``PREFER_RECOMPUTE``. So the
backward re-runs, per dense block:

- the even-numbered mms of the forward order ``wq, wk, wv, wo, w1, w3, w2`` (SwiGLU) — ``wk``,
  ``wo``, ``w3`` — or ``wq, wk, wv, wo, fc1, fc2`` (GeLU) — ``wk``, ``wo``, ``fc2``. The estimator's
  fused ``qkv`` GEMM is re-run for ``wk``'s columns ``g/(a+2g)``, the fused gate/up ``fc1`` for ``w3``'s
  half;
- every non-matmul operator: both norms, RoPE, the activation, the residual adds, the unfused
  attention's bmm / softmax (``bmm`` is not ``mm``), a low-precision GEMM's cast (with its GEMM's share:
  its output only feeds that GEMM, torchao keeps the amax ``abs``/``max`` outputs);
- not the flash / memory-efficient attention (saved).

Under the op-level policy the estimator's default selective set (Megatron's ``core_attn``) does not
apply; ``options.op_sac_recompute: false`` restores it (the model before this mechanism).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from estimator.inputs.params import gated_mlp
from estimator.perf import compute

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig
    from estimator.config.sections import ModelConfig
    from estimator.perf.operators import Op

#: the recompute "module" the roofline receives for the op-level policy (not a Megatron module name)
OP_SAC = "torchtitan_op_sac"
#: GEMMs torchtitan launches per dense block under the op-level policy that it re-runs (wk, wo, w3 / fc2)
RECOMPUTED_MMS = 3
_SUFFIX = "_quantize"


def uses_op_sac(cfg: EstimatorConfig) -> bool:
    """torchtitan's op-level policy is on and priced (``options.op_sac_recompute``)."""
    return cfg.recompute.selective_ac_option == "op" and cfg.options.op_sac_recompute


def gemm_shares(model: ModelConfig) -> dict[str, float]:
    """Share of each dense-block GEMM's forward that the op-level policy re-runs (module docstring)."""
    a, g = model.num_attention_heads, model.kv_heads
    gated = gated_mlp(model.activation)
    return {"qkv": g / (a + 2 * g), "out_proj": 1.0, "mlp_fc1": 0.5 if gated else 0.0,
            "mlp_fc2": 0.0 if gated else 1.0, "flash_attention": 0.0}


def op_share(op: Op, shares: Mapping[str, float]) -> float:
    """Recomputed share of ``op``'s forward: its GEMM's share (a cast follows its GEMM), else 1."""
    name = op.name[: -len(_SUFFIX)] if op.name.endswith(_SUFFIX) else op.name
    return shares.get(name, 1.0)


def recomputed_flops(model: ModelConfig, tokens: float) -> float:
    """Forward FLOPs the policy re-runs in one dense block on ``tokens`` tokens (before ``/tp``):
    ``2T·h·g·d`` (wk) + ``2T·a·d·h`` (wo) + ``2T·h·f`` (w3, or fc2 of a GeLU MLP)."""
    h, d = model.hidden_size, model.head_size
    wk = compute.matmul_flops(tokens, h, model.kv_heads * d)
    wo = compute.matmul_flops(tokens, model.num_attention_heads * d, h)
    return wk + wo + compute.matmul_flops(tokens, h, model.dense_ffn)
