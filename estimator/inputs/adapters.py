"""Adapter fine-tuning (LoRA): which GEMMs an adapter sits beside, how many parameters it trains.

LoRA (Hu et al. 2021, arXiv 2106.09685 §4.1) freezes the pretrained weight ``W`` (k×n) of each
targeted linear and trains ``A`` (k×r) and ``B`` (r×n) beside it: ``Y = X·W + (X·A)·B`` (the scale
α/r does not change cost). Every other base weight (norms, embedding, output layer, router, the
linears not targeted) is frozen too (Megatron-Bridge ``peft.LoRA``: the base model's
``requires_grad`` is turned off, adapters added on ``target_modules``; defaults dim 32 on
``linear_qkv``, ``linear_proj``, ``linear_fc1``, ``linear_fc2``, which include the MoE experts' fc1/fc2).

Consequences priced by the model:

- memory (``estimator.memory.static``): base weights keep their parameters only (no gradient buffer,
  no master copy, no optimizer state); the adapters carry the full params + grads + optimizer bytes;
  activations are unchanged: the frozen linears' inputs stay saved, because ``A``'s weight gradient
  ``Xᵀ·(dY·Bᵀ)`` reads the same ``X`` (the ``r``-wide adapter intermediates are below 1 % at r ≤ 64);
- time (``estimator.perf.roofline``): a frozen GEMM's backward is the input-gradient GEMM only (no
  weight-gradient GEMM), the adapter GEMMs ``[m,k]@[k,r]`` and ``[m,r]@[r,n]`` run with full
  backward; the DP gradient traffic and the optimizer step cover the adapter parameters only.

Per rank the adapter follows its base linear's sharding (both ``A`` and ``B`` counted on the local
``k`` and ``n`` of the GEMM; Megatron-Bridge shards one of the two and replicates the other, at
most ``r·max(k, n)`` per linear more).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from estimator.inputs.params import gated_mlp

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig, ModelConfig

#: PEFT target name -> the layer GEMM operators (``estimator.perf.operators``) it names
TARGET_GEMMS: dict[str, tuple[str, ...]] = {
    "linear_qkv": ("qkv", "q_proj", "q_down", "q_up", "kv_down", "kv_up"),
    "linear_proj": ("out_proj",),
    "linear_fc1": ("mlp_fc1", "expert_fc1", "shared_fc1"),
    "linear_fc2": ("mlp_fc2", "expert_fc2", "shared_fc2"),
}


@dataclass(frozen=True)
class Adapter:
    """A LoRA adapter of rank ``rank`` on the GEMM operators ``gemms``."""

    rank: int
    gemms: frozenset[str]


def adapter_of(cfg: EstimatorConfig) -> Adapter | None:
    """The config's adapter (None without one, or with ``options.adapters`` off)."""
    a = cfg.adapter
    if a.kind != "lora" or not cfg.options.adapters:
        return None
    return Adapter(a.rank, frozenset(g for t in a.target_modules for g in TARGET_GEMMS[t]))


def lora_params(rank: int, k: float, n: float) -> float:
    """Trainable parameters of one LoRA adapter beside a ``k×n`` weight: ``r·(k + n)`` (A and B)."""
    return rank * (k + n)


def linear_shapes(model: ModelConfig, moe: bool, tp: int, local_experts: float) -> list[tuple[str, float, float, float]]:
    """(GEMM operator, k, n, copies) of one layer's linears on one rank (the shapes of
    ``estimator.perf.operators``; routed experts: ``local_experts`` copies, width /tp)."""
    h, a = model.hidden_size, model.num_attention_heads
    out: list[tuple[str, float, float, float]] = []
    if model.attention == "mla":
        assert model.kv_lora_rank and model.qk_head_dim and model.v_head_dim
        rope = model.qk_rope_head_dim or 0
        d_qk = model.qk_head_dim + rope
        if model.q_lora_rank:
            out += [("q_down", h, model.q_lora_rank / tp, 1.0), ("q_up", model.q_lora_rank, a * d_qk / tp, 1.0)]
        else:
            out.append(("q_proj", h, a * d_qk / tp, 1.0))
        out += [("kv_down", h, (model.kv_lora_rank + rope) / tp, 1.0),
                ("kv_up", model.kv_lora_rank, a * (model.qk_head_dim + model.v_head_dim) / tp, 1.0)]
        d_v = model.v_head_dim
    else:
        d_v = model.head_size
        out.append(("qkv", h, (a + 2 * model.kv_heads) * d_v / tp, 1.0))
    out.append(("out_proj", a * d_v / tp, h, 1.0))
    gated = 2 if gated_mlp(model.activation) else 1
    if not moe:
        out += _ffn("mlp", h, model.dense_ffn / tp, gated, 1.0)
    else:
        out += _ffn("expert", h, model.expert_ffn / tp, gated, local_experts)
        if model.shared_ffn_total:
            out += _ffn("shared", h, model.shared_ffn_total / tp, gated, 1.0)
    return out


def _ffn(name: str, h: float, ffn: float, gated: int, copies: float) -> list[tuple[str, float, float, float]]:
    return [(f"{name}_fc1", h, gated * ffn, copies), (f"{name}_fc2", ffn, h, copies)]


def layer_adapter_params(model: ModelConfig, adapter: Adapter, moe: bool, tp: int,
                         local_experts: float) -> tuple[float, float]:
    """(non-expert, routed-expert) adapter parameters of one layer on one rank."""
    dense = routed = 0.0
    for gemm, k, n, copies in linear_shapes(model, moe, tp, local_experts):
        if gemm in adapter.gemms:
            count = copies * lora_params(adapter.rank, k, n)
            if gemm.startswith("expert_"):
                routed += count
            else:
                dense += count
    return dense, routed
