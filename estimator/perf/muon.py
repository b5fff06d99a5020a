"""The Muon optimizer's step (``train.optimizer: muon``, Megatron-Core ``--optimizer muon``): besides the
element-wise update, each 2-D weight's momentum is orthogonalised by Newton-Schulz iterations, priced here as
GEMM operators on the step (``estimator.perf.held.optimizer_ops``).

Megatron-Core@d98e8a64dd (``megatron/core/optimizer/optimizer_config.py``, ``emerging_optimizers.py``):
``muon_num_ns_steps = 5`` with the ``quintic`` coefficients, ``muon_tp_mode = "duplicated"`` (every TP rank
orthogonalises the whole, gathered matrix), ``muon_split_qkv = True`` (the fused QKV weight as its Q, K and V
parts), ``muon_fp32_matmul_prec = "medium"`` (fp32 operands on the
tensor cores at reduced precision: priced at the compute peak), ``muon_scalar_optimizer = "adam"`` for the
norms, router, embedding and output layer; ``dist_muon`` (the deprecated name) is Muon with the layer-wise
distributed optimizer: each data-parallel rank orthogonalises its share of the weights.

One quintic step on a matrix X of m×n (m ≤ n): ``A = X·Xᵀ`` (2·m²·n FLOPs), ``B = b·A + c·A·A`` (2·m³),
``X ← a·X + B·X`` (2·m²·n): ``4·m²·n + 2·m³`` per step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.inputs.adapters import linear_shapes
from estimator.inputs.derive import layer_ep
from estimator.inputs.params import embedding_params, head_params, layer_params
from estimator.inputs.profiles import resolved_bytes
from estimator.memory.static import muon_active as muon_active
from estimator.memory.static import muon_shards
from estimator.perf import operators
from estimator.perf.layers import is_moe_layer

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig, ModelConfig
    from estimator.inputs.derive import StageLayout
    from estimator.perf.context import Ctx

#: Newton-Schulz steps per update (Megatron-Core ``muon_num_ns_steps`` default)
NS_STEPS = 5
#: bytes per element of the iterated matrices (fp32, ``muon_fp32_matmul_prec``)
NS_BYTES = 4
#: the routed-expert GEMMs of a layer (their matrices are the rank's local experts, sharded over expert-DP)
_EXPERT = frozenset({"expert_fc1", "expert_fc2"})


def newton_schulz_flops(k: float, n: float, steps: int = NS_STEPS) -> float:
    """FLOPs of ``steps`` quintic Newton-Schulz steps on a k×n matrix: ``steps·(4·m²·M + 2·m³)``,
    m = min(k, n), M = max(k, n) (module docstring)."""
    m, big = min(k, n), max(k, n)
    return steps * (4.0 * m * m * big + 2.0 * m ** 3)


def newton_schulz_ops(cfg: EstimatorConfig, ctx: Ctx, layout: StageLayout) -> list[operators.Op]:
    """The stage's Newton-Schulz GEMMs on one rank per step: every linear weight of its layers at full (TP-
    gathered) size, ``NS_STEPS`` steps of three GEMMs, divided over the ranks that share the work
    (``estimator.memory.static.muon_shards``: ``dist_muon`` the ``dp·cp`` group for the non-expert weights,
    expert-DP for the local experts; plain ``muon`` every rank runs all). Empty unless Muon is active."""
    if not muon_active(cfg):
        return []
    dense_shard, expert_shard = muon_shards(cfg)
    share = {False: 1.0 / dense_shard, True: 1.0 / expert_shard}
    counts: dict[tuple[float, float], float] = {}
    m = cfg.model
    for index in layout.layers:
        moe = is_moe_layer(m, index)
        local = m.num_experts / layer_ep(cfg, index) if moe else 0.0
        for name, k, n, copies in linear_shapes(m, moe, 1, local):
            for width in _split_qkv(m, name, n):
                key = (min(k, width), max(k, width))
                counts[key] = counts.get(key, 0.0) + copies * share[name in _EXPERT]
    ops: list[operators.Op] = []
    for (small, big), count in counts.items():
        steps = NS_STEPS * count
        ops += [operators.gemm("muon_ns_xxt", (), small, big, small, NS_BYTES, steps),
                operators.gemm("muon_ns_aa", (), small, small, small, NS_BYTES, steps),
                operators.gemm("muon_ns_bx", (), small, small, big, NS_BYTES, steps)]
    return ops


def _split_qkv(model: ModelConfig, name: str, n: float) -> tuple[float, ...]:
    """Output widths Muon orthogonalises for one weight: the fused QKV as its Q, K and V parts
    (``muon_split_qkv = True``: ``a·d``, ``g·d``, ``g·d``), any other weight whole."""
    if name != "qkv":
        return (n,)
    d, a, g = model.head_size, model.num_attention_heads, model.kv_heads
    return (a * d, g * d, g * d)


def muon_update(cfg: EstimatorConfig, ctx: Ctx, layout: StageLayout, dense: float, routed: float,
                adam_bytes: float) -> tuple[float, float]:
    """(parameters, bytes per parameter) of one rank's element-wise update under Muon: the scalar Adam's share
    of ``dense`` (:func:`scalar_share`) at ``adam_bytes`` over the usual optimizer shard, the Muon weights over
    :func:`estimator.memory.static.muon_shards` reading and writing one momentum instead of two moments
    (``adam_bytes − 2·B_os``). ``dense``, ``routed``: the stage's parameters on this rank, unsharded."""
    os_bytes = resolved_bytes(cfg).optimizer_state
    s = scalar_share(cfg, layout, dense)
    adam = s * dense / (ctx.dp * ctx.cp if cfg.parallel.distributed_optimizer else 1)
    dense_shard, expert_shard = muon_shards(cfg)
    muon = (1.0 - s) * dense / dense_shard + routed / expert_shard
    local = adam + muon
    if not local:
        return 0.0, adam_bytes
    return local, (adam * adam_bytes + muon * (adam_bytes - 2 * os_bytes)) / local


def scalar_share(cfg: EstimatorConfig, layout: StageLayout, dense: float) -> float:
    """Share of the stage's ``dense`` (non-routed, per rank) parameters on the scalar Adam: the embedding and
    output layer (TP-sharded) and the layers' norms and router; the rest take Muon's one-momentum update."""
    m, t = cfg.model, cfg.parallel.tp
    scalar = (embedding_params(m) / t if layout.has_embedding else 0.0) + (head_params(m) / t if layout.has_head else 0.0)
    scalar += sum(layer_params(m, i).norm for i in layout.layers)
    return min(1.0, scalar / dense) if dense else 0.0
