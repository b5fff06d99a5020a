"""One MoE layer's forward and backward on one rank, as Megatron-Core's MoE-layer benchmark times it.

Megatron-LM's module performance test ``tests/functional_tests/test_cases/common/moe_perf``
(NVIDIA/Megatron-LM@d98e8a64dd; recorded on ``dgx_h100``, 8 GPUs, ``tests/test_utils/recipes/h100/
module_performance.yaml``) builds one ``MoELayer`` (TE grouped GEMM, fused permute and router, force-balanced
routing) and times ``layer(x)`` and ``output.backward(g)`` with CUDA events, the mean of 20 iterations after 5
warm-ups (``__main__.py _benchmark_moe_layer``). The layer is the MoE block alone: no attention, no
pre-MLP norm, no residual (``MoELayer.forward`` on the hidden states).

:func:`layer_config` turns one row of that measurement (``validation_cases/recorded/mcore_moe_layer_h100.csv``)
into an estimator config of a one-layer MoE model; :func:`moe_layer_time` prices the block as the stage
prices it inside a model: the operators of the layer that belong to the MoE block (``"moe"`` in
:attr:`estimator.perf.operators.Op.modules`: router, permute / unpermute, the grouped experts and their
casts, the shared experts) on the operator roofline (:func:`estimator.perf.roofline.ops_seconds`), plus the
layer's EP dispatch and combine per pass (:func:`estimator.perf.stage.ep_layer_exchange`; the backward
repeats them with gradients, :data:`estimator.perf.comm.BACKWARD_COMM_FACTOR`). Nothing hides the
exchange (one layer, no other micro-batch). Device time only: the benchmark launches a long GEMM first "to
hide the router launch overhead". :func:`gemm_efficiency_floor` is the model-free bound the measurement
puts on the grouped GEMMs' efficiency.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from estimator.config.errors import ConfigError
from estimator.perf import comm, roofline
from estimator.perf.context import comm_value, context
from estimator.perf.efficiency import device_efficiency
from estimator.perf.operators import Op
from estimator.perf.stage import ep_layer_exchange, per_layer_traffic
from ndval.core.units import FLOPS_PER_TFLOPS

#: the benchmark's dispatchers (``token_dispatcher`` / ``moe_flex_dispatcher_backend``) -> ndval's dispatcher
DISPATCHERS = {"alltoall": "alltoall", "deepep": "flex", "hybridep": "flex"}
#: the benchmark's precisions -> the linear recipe (None: BF16); its FP8 cases set ``fp8_recipe="blockwise"``
RECIPES: dict[str, str | None] = {"bf16": None, "fp8_blockwise": "blockwise"}
#: the MoE block's operators carry this module name (estimator.perf.operators.mlp_ops)
MOE_MODULE = "moe"


@dataclass(frozen=True)
class MoELayerTime:
    """Seconds of one MoE layer on one rank per pass: device compute and the EP exchange (serial)."""

    compute_forward_s: float
    compute_backward_s: float
    exchange_forward_s: float
    exchange_backward_s: float
    grouped_gemm_flops_forward: float  # the routed and shared experts' GEMM FLOPs of the forward

    @property
    def forward_s(self) -> float:
        return self.compute_forward_s + self.exchange_forward_s

    @property
    def backward_s(self) -> float:
        return self.compute_backward_s + self.exchange_backward_s


def _empty(raw: Any) -> bool:
    """An empty cell: missing, blank, or the NaN a CSV reader puts in an empty numeric cell."""
    return raw is None or (isinstance(raw, str) and not raw.strip()) or (isinstance(raw, float) and math.isnan(raw))


def _int(row: Mapping[str, Any], column: str, file: str) -> int:
    raw: Any = row.get(column)
    if _empty(raw):
        raise ConfigError(f"column {column}", "required: the benchmark states it", file=file)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"column {column}", f"an integer, got {raw!r}", file=file) from None
    if not value.is_integer() or value <= 0:
        raise ConfigError(f"column {column}", f"a positive integer, got {raw!r}", file=file)
    return int(value)


def layer_config(row: Mapping[str, Any], file: str = "mcore_moe_layer_h100.csv") -> dict[str, Any]:
    """The estimator config (a mapping for :func:`estimator.load_config`) of one benchmark row.

    The row's columns: ``hardware`` (preset), ``world_size``, ``tp``, ``ep``, ``seq_length``,
    ``micro_batch_size``, ``hidden_size``, ``moe_ffn_hidden_size``, ``num_experts``, ``moe_topk``,
    ``shared_expert_ffn_hidden_size`` (empty: none), ``num_attention_heads``, ``dispatcher``
    (:data:`DISPATCHERS`), ``precision`` (:data:`RECIPES`). The model has one MoE layer with SwiGLU experts
    (Megatron's default ``gated_linear_unit`` for the proxies: ``get_gpt_layer_with_transformer_engine_submodules``
    with TE's GroupedLinear; assumption: the proxies' ``swiglu``, test_cases.py sets no activation), no bias
    (``add_bias_linear=False``); its attention, embedding and head are built but not priced here."""
    dispatcher, precision = str(row.get("dispatcher", "")), str(row.get("precision", ""))
    if dispatcher not in DISPATCHERS:
        raise ConfigError("column dispatcher", f"one of {sorted(DISPATCHERS)}, got {dispatcher!r}", file=file)
    if precision not in RECIPES:
        raise ConfigError("column precision", f"one of {sorted(RECIPES)}, got {precision!r}", file=file)
    h, world, tp, ep = (_int(row, c, file) for c in ("hidden_size", "world_size", "tp", "ep"))
    heads = _int(row, "num_attention_heads", file)
    shared = row.get("shared_expert_ffn_hidden_size")
    shared_ffn = None if _empty(shared) else _int(row, "shared_expert_ffn_hidden_size", file)
    recipe = RECIPES[precision]
    return {
        "profile": "megatron",
        "hardware": {"preset": str(row.get("hardware") or "h100-80g"), "devices": world},
        "model": {
            "name": str(row.get("case") or "moe-layer"), "num_layers": 1, "num_dense_layers": 0,
            "hidden_size": h, "ffn_hidden_size": _int(row, "moe_ffn_hidden_size", file),
            "num_attention_heads": heads, "num_kv_heads": heads, "head_dim": h // heads, "attention": "mha",
            "num_experts": _int(row, "num_experts", file), "moe_topk": _int(row, "moe_topk", file),
            "moe_ffn_hidden_size": _int(row, "moe_ffn_hidden_size", file),
            "num_shared_experts": 1 if shared_ffn else 0, "shared_expert_ffn_hidden_size": shared_ffn,
            "vocab_size": 32000, "padded_vocab_size": 32000, "activation": "swiglu", "norm": "rmsnorm",
            "tied_embeddings": False, "mtp_layers": 0, "position_embedding": "rope",
        },
        "parallel": {"tp": tp, "pp": 1, "cp": 1, "dp": world // tp, "ep": ep, "etp": 1,
                     "sequence_parallel": tp > 1, "moe_token_dispatcher": DISPATCHERS[dispatcher],
                     "distributed_optimizer": True},
        "precision": {"compute": "bf16", **({"linear_recipe": recipe} if recipe else {})},
        "recompute": {"mode": "none", "modules": []},
        "train": {"micro_batch_size": _int(row, "micro_batch_size", file), "num_micro_batches": 1,
                  "seq_length": _int(row, "seq_length", file), "flash_attention": True},
    }


def moe_block_ops(cfg: Any, index: int = 0) -> list[Op]:
    """The forward operators of layer ``index`` that belong to its MoE block (module :data:`MOE_MODULE`)."""
    dims = roofline.layer_dims(cfg, context(cfg))
    return [op for op in roofline.layer_ops(cfg, dims, index) if MOE_MODULE in op.modules]


def moe_layer_time(cfg: Any, index: int = 0) -> MoELayerTime:
    """Forward and backward seconds of the MoE block of layer ``index`` on one rank (module docstring)."""
    ctx = context(cfg)
    ops = moe_block_ops(cfg, index)
    derate = 1.0 / cfg.options.compute_efficiency
    fw, bw, _, _ = roofline.ops_seconds(ops, True, "none", frozenset(), device_efficiency(cfg),
                                        ctx.peak_flops * derate, derate)
    _, dispatch, _, _, by_node = per_layer_traffic(cfg, ctx)
    inside, between = ep_layer_exchange(cfg, ctx, dispatch, by_node, ctx.ep)
    exchange = comm_value(cfg, ctx, inside, ctx.t_exp, "ep")
    if between and by_node is not None:
        exchange += comm_value(cfg, ctx, between, by_node[1] * ctx.t_exp, "ep")
    flops = sum(op.flops * op.count for op in ops if op.op_class == "gemm" and op.name != "router")
    return MoELayerTime(float(fw), float(bw), float(exchange),
                        float(exchange * comm.BACKWARD_COMM_FACTOR["ep"]), float(flops))


def gemm_peak_flops_per_s(cfg: Any) -> float:
    """The dense peak the experts' GEMMs run against: FP8 with a low-precision linear recipe (the benchmark's
    FP8 rows: blockwise), else the compute dtype's."""
    dtype = "fp8" if cfg.precision.linear_recipe else cfg.precision.compute
    return float(cfg.hardware.peak_tflops[dtype]) * FLOPS_PER_TFLOPS


def gemm_efficiency_floor(gemm_flops: float, measured_s: float, peak_flops_per_s: float) -> float:
    """The least efficiency the layer's GEMMs can have run at: ``F / (t · P)``.

    ``F`` = the GEMM FLOPs of the pass, ``t`` = the measured time of the whole pass, ``P`` = the device's
    dense peak. Every other kernel and the exchange take time too, so the GEMMs ran in less than ``t``: a
    bound that needs no model of anything else."""
    return gemm_flops / (measured_s * peak_flops_per_s)
