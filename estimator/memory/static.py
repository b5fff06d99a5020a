"""Static memory: parameters, optimizer states and gradients held by one rank, per layer.

Three conventions (``Profile.sharding``):
- ``sapp-nd`` (reference §2.3-§2.4): P = n·B_p/S_ne + (r/ep)·B_p/S_re + s·B_p/S_se; OS the same
  shards with 2·B_os; Grad with B_g over the grad shards. S_re carries the seed's P2 switch.
- ``megatron`` (facts §1.2, §4.1): held = TP-sharded/t + replicated (norms, router, MLA
  down-projections: ``params.mla_replicated_params``), experts
  /(ep·etp); bf16 params (2 B) and fp32 main grads (4 B) unsharded; fp32 master params and Adam
  states (12 B) over dp·cp with the distributed optimizer, experts over expert-DP.
- ``fsdp2``: fp32 params, grads and Adam states all over dp·cp (experts over expert-DP).
``optimizer_states`` includes the fp32 master copy where one exists. With
``precision.fp8_linear`` the ``megatron`` profile adds Transformer Engine's cached FP8 weight
copies to ``params`` (``FP8_WEIGHT_CACHE_BYTES`` per linear weight held); with
``precision.fp8_param_gather`` those copies are the parameters and no BF16 copy is held
(:func:`fp8_params_in_place`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from estimator.inputs.adapters import Adapter, adapter_of, layer_adapter_params
from estimator.inputs.derive import expert_groups, layer_ep, shard_factors
from estimator.inputs.params import (
    LayerParams,
    embedding_params,
    head_params,
    layer_params,
    position_embedding_params,
)
from estimator.inputs.profiles import ADAM_STATES, ResolvedBytes, profile_of, resolved_bytes
from estimator.inputs.recipes import on_device, stored_recipe

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig


#: FP8 copies Transformer Engine keeps per linear weight element with FP8 on: the row-wise
#: quantized weight (1 B) and its column-wise (transposed) copy (1 B) for the backward GEMMs on
#: Hopper (TE docs, "Performance considerations: handling transposes"). Megatron-Core's TE
#: wrappers (TELinear, TELayerNormColumnParallelLinear, TEGroupedLinear) pass
#: ``is_first_microbatch`` so TE casts each weight once per step and keeps the copies in the
#: module ("caching of the FP8 versions of the weights", TE ``Linear.forward``): they stay
#: allocated after the optimizer step. Megatron's output layer (ColumnParallelLinear), the
#: embedding, the router and norms are not TE FP8 linears.
FP8_WEIGHT_CACHE_BYTES = 1 + 1


@dataclass(frozen=True)
class StaticBytes:
    """Bytes of params, optimizer states (incl. master params) and grads."""

    params: float = 0.0
    optimizer_states: float = 0.0
    grads: float = 0.0

    def __add__(self, other: StaticBytes) -> StaticBytes:
        return StaticBytes(
            self.params + other.params,
            self.optimizer_states + other.optimizer_states,
            self.grads + other.grads,
        )

    @property
    def total(self) -> float:
        return self.params + self.optimizer_states + self.grads


@dataclass(frozen=True)
class StaticBreakdown:
    """Static bytes split as the reference does: non-expert, routed experts, shared experts."""

    non_expert: StaticBytes = StaticBytes()
    routed: StaticBytes = StaticBytes()
    shared: StaticBytes = StaticBytes()

    def __add__(self, other: StaticBreakdown) -> StaticBreakdown:
        return StaticBreakdown(
            self.non_expert + other.non_expert, self.routed + other.routed, self.shared + other.shared
        )

    @property
    def total(self) -> StaticBytes:
        return self.non_expert + self.routed + self.shared


def _per_param(count: float, b: ResolvedBytes, os_shard: float, grad_shard: float, param_shard: float) -> StaticBytes:
    """count params -> bytes: params count·B_p/param_shard, OS count·(master + 2·B_os)/os_shard, grads count·B_g/grad_shard."""
    return StaticBytes(
        params=count * b.params / param_shard,
        optimizer_states=count * (b.master_params + ADAM_STATES * b.optimizer_state) / os_shard,
        grads=count * b.grads / grad_shard,
    )


def sapp_layer_static(cfg: EstimatorConfig, lp: LayerParams, ep: int) -> StaticBreakdown:
    """Reference static memory of one layer (reference §2.4, body.py stat_p/os/grad_layer)."""
    f, b = shard_factors(cfg), resolved_bytes(cfg)
    return StaticBreakdown(
        non_expert=_per_param(lp.non_expert, b, f.p_os_non_exp_partial, f.grad_non_exp, f.p_os_non_exp_partial),
        routed=_per_param(lp.routed / ep, b, f.p_os_exp, f.grad_exp, f.p_os_exp),
        shared=_per_param(lp.shared, b, f.p_os_exp_partial, f.grad_exp_partial, f.p_os_exp_partial),
    )


def _dp_shard(cfg: EstimatorConfig) -> int:
    """Optimizer-state shard degree of non-expert params: dp·cp with a sharded optimizer, else 1."""
    p = cfg.parallel
    return p.dp * p.cp if p.distributed_optimizer else 1


def _edp_shard(cfg: EstimatorConfig) -> int:
    return expert_groups(cfg).edp if cfg.parallel.distributed_optimizer else 1


def fp8_weight_cache(cfg: EstimatorConfig, linear_weights: float) -> StaticBytes:
    """TE's cached quantized weight copies for ``linear_weights`` held elements (0 without FP8): row-wise and
    column-wise, each data + block scales of the recipe (:mod:`estimator.inputs.recipes`: 2 B per-tensor
    FP8, 2·(1 + 1/32) MXFP8, 2·(0.5 + 1/16) NVFP4); per-tensor FP8 on a device with non-TN FP8 GEMMs keeps
    the row-wise copy only, 1 B (:func:`estimator.inputs.recipes.on_device`)."""
    if not cfg.precision.fp8_linear:
        return StaticBytes()
    recipe = stored_recipe(cfg)
    if recipe is not None:
        recipe = on_device(recipe, cfg)
    if recipe is None or recipe.stored_bytes * recipe.copies == FP8_WEIGHT_CACHE_BYTES:
        return StaticBytes(params=linear_weights * FP8_WEIGHT_CACHE_BYTES)
    return StaticBytes(params=linear_weights * recipe.copies * recipe.stored_bytes)  # block scales, FP4


def fp8_params_in_place(cfg: EstimatorConfig, linear_weights: float, param_bytes: float) -> StaticBytes:
    """``precision.fp8_param_gather`` (Megatron ``--fp8-param-gather``): the linear weights are created
    under TE's ``fp8_model_init`` / ``quantized_model_init``, so the quantized tensor *is* the parameter and
    no compute-dtype copy is held (Megatron-Core arguments: "Keep the compute param in fp8 (do not use any
    other intermediate dtype)"; TE docs of ``fp8_model_init``: parameters stored only in FP8, the optimizer
    keeps the fp32 master copy). Bytes: ``− linear_weights · B_p`` beside :func:`fp8_weight_cache`, whose
    quantized copies remain; 0 without FP8 linears, without the flag, or with the recipe mechanisms off
    (``options.low_precision_gemms: false``, :func:`estimator.inputs.recipes.stored_recipe`): numbers as before."""
    if not (cfg.precision.fp8_linear and cfg.precision.fp8_param_gather) or stored_recipe(cfg) is None:
        return StaticBytes()
    return StaticBytes(params=-linear_weights * param_bytes)


def megatron_layer_static(cfg: EstimatorConfig, lp: LayerParams, ep: int) -> StaticBreakdown:
    """Megatron-Core static memory of one layer: 2 + 4 B held, 12 B over DP (facts §1.2, §4.1).

    With FP8 linears, + ``FP8_WEIGHT_CACHE_BYTES`` per held linear weight (all but norms and router).
    """
    b, t = resolved_bytes(cfg), cfg.parallel.tp
    held_non_exp, linear_non_exp = lp.held_non_expert(t), lp.held_linear(t)
    routed, shared = lp.held_experts(t, ep, expert_groups(cfg).etp)
    def quantized(n: float) -> StaticBytes:
        return fp8_weight_cache(cfg, n) + fp8_params_in_place(cfg, n, b.params)

    return StaticBreakdown(
        non_expert=_per_param(held_non_exp, b, _dp_shard(cfg), 1, 1) + quantized(linear_non_exp),
        routed=_per_param(routed, b, _edp_shard(cfg), 1, 1) + quantized(routed),
        shared=_per_param(shared, b, _dp_shard(cfg), 1, 1) + quantized(shared),
    )


def fsdp2_layer_static(cfg: EstimatorConfig, lp: LayerParams, ep: int) -> StaticBreakdown:
    """FSDP2: params, grads and optimizer states all sharded (16 B / shard degree with fp32 Adam)."""
    b, t = resolved_bytes(cfg), cfg.parallel.tp
    groups = expert_groups(cfg)
    d, e, etp = cfg.parallel.dp * cfg.parallel.cp, groups.edp, groups.etp
    routed, shared = lp.held_experts(t, ep, etp)
    return StaticBreakdown(
        non_expert=_per_param(lp.held_non_expert(t), b, d, d, d),
        routed=_per_param(routed, b, e, e, e),
        shared=_per_param(shared, b, d, d, d),
    )


_LAYER_STATIC = {"sapp-nd": sapp_layer_static, "megatron": megatron_layer_static, "fsdp2": fsdp2_layer_static}


def layer_static(cfg: EstimatorConfig, index: int) -> StaticBreakdown:
    """Static bytes of layer ``index`` on its rank under the config's profile (with an adapter: the
    frozen base weights' params and the adapters' full bytes, :func:`adapter_layer_static`; with Muon:
    :func:`muon_layer_static`)."""
    lp = layer_params(cfg.model, index)
    base = _LAYER_STATIC[profile_of(cfg).sharding](cfg, lp, layer_ep(cfg, index))
    adapter = adapter_of(cfg)
    if adapter is not None:
        return adapter_layer_static(cfg, index, base, adapter)
    return muon_layer_static(cfg, lp, layer_ep(cfg, index), base) if muon_active(cfg) else base


def muon_active(cfg: EstimatorConfig) -> bool:
    """``train.optimizer`` Muon (``muon``, ``dist_muon``) with ``options.muon`` on."""
    return cfg.train.optimizer in ("muon", "dist_muon") and cfg.options.muon


def muon_shards(cfg: EstimatorConfig) -> tuple[float, float]:
    """(non-expert, routed) ranks Muon's states and Newton-Schulz work are spread over: ``dist_muon`` (Megatron-Core:
    ``muon`` with ``use_layer_wise_distributed_optimizer``, whole weights per data-parallel rank) ``dp·cp`` and
    expert-DP; plain ``muon`` none (Megatron's flat distributed optimizer cannot hold whole matrices, so its
    Muon groups stay on every rank)."""
    if cfg.train.optimizer != "dist_muon":
        return 1.0, 1.0
    return float(cfg.parallel.dp * cfg.parallel.cp), float(expert_groups(cfg).edp)


def muon_layer_static(cfg: EstimatorConfig, lp: LayerParams, ep: int, base: StaticBreakdown) -> StaticBreakdown:
    """``base`` with Muon's optimizer states: every linear weight keeps its master copy and one momentum
    (``momentum_buffer``, the state dtype) instead of Adam's two moments, over :func:`muon_shards`; the norms and
    the router (``LayerParams.norm``) stay on the scalar Adam (``muon_scalar_optimizer``), sharded as before."""
    b, t = resolved_bytes(cfg), cfg.parallel.tp
    dense_shard, expert_shard = muon_shards(cfg)
    muon_os, adam_os = b.master_params + b.optimizer_state, b.master_params + ADAM_STATES * b.optimizer_state
    linear = lp.held_linear(t)
    routed, shared = lp.held_experts(t, ep, expert_groups(cfg).etp)
    return StaticBreakdown(
        non_expert=replace(base.non_expert, optimizer_states=lp.norm * adam_os / _dp_shard(cfg)
                           + linear * muon_os / dense_shard),
        routed=replace(base.routed, optimizer_states=routed * muon_os / expert_shard),
        shared=replace(base.shared, optimizer_states=shared * muon_os / dense_shard))


def frozen(held: StaticBytes) -> StaticBytes:
    """A frozen weight's bytes: its parameters (and cached casts) only, no gradient, no optimizer state."""
    return StaticBytes(params=held.params)


def adapter_layer_static(cfg: EstimatorConfig, index: int, base: StaticBreakdown, adapter: Adapter) -> StaticBreakdown:
    """LoRA (:mod:`estimator.inputs.adapters`): every base weight of the layer frozen, the adapters
    trained with the profile's bytes per parameter (Megatron: 2 + 4 held, 12 over DP with the distributed
    optimizer; FSDP2 and the reference: all over dp·cp)."""
    p, b = cfg.parallel, resolved_bytes(cfg)
    ep = layer_ep(cfg, index)
    moe = layer_params(cfg.model, index).routed > 0
    dense, routed = layer_adapter_params(cfg.model, adapter, moe, p.tp, cfg.model.num_experts / ep if moe else 0.0)
    if profile_of(cfg).sharding == "megatron":
        trained_dense, trained_routed = _per_param(dense, b, _dp_shard(cfg), 1, 1), _per_param(routed, b, _edp_shard(cfg), 1, 1)
    else:
        d, e = p.dp * p.cp, expert_groups(cfg).edp
        trained_dense, trained_routed = _per_param(dense, b, d, d, d), _per_param(routed, b, e, e, e)
    return StaticBreakdown(non_expert=frozen(base.non_expert) + trained_dense,
                           routed=frozen(base.routed) + trained_routed, shared=frozen(base.shared))


def embedding_static(cfg: EstimatorConfig) -> StaticBytes:
    """:func:`_embedding_static`, frozen under an adapter."""
    held = _embedding_static(cfg)
    return held if adapter_of(cfg) is None else frozen(held)


def head_static(cfg: EstimatorConfig) -> StaticBytes:
    """:func:`_head_static`, frozen under an adapter."""
    held = _head_static(cfg)
    return held if adapter_of(cfg) is None else frozen(held)


def _embedding_static(cfg: EstimatorConfig) -> StaticBytes:
    """Embedding (first stage). Reference: h·v·{B_p, 2B_os, B_g}/(shard_embed·cp) with shard_embed = t·d.
    Megatron: vocab-parallel V·h/t, learned positions replicated; FSDP2: all over dp·cp."""
    m, p, b = cfg.model, cfg.parallel, resolved_bytes(cfg)
    vocab = embedding_params(m)
    pos = position_embedding_params(m, cfg.train.seq_length)
    sharding = profile_of(cfg).sharding
    if sharding == "sapp-nd":
        s = shard_factors(cfg).embed * p.cp
        return _per_param(vocab + pos, b, s, s, s)
    held = vocab / p.tp + pos
    if sharding == "megatron":
        return _per_param(held, b, _dp_shard(cfg), 1, 1)
    d = p.dp * p.cp
    return _per_param(held, b, d, d, d)


def _head_static(cfg: EstimatorConfig) -> StaticBytes:
    """Output head + final norm (last stage). Reference: (h·v)·B/S_ne_partial, grads /S_grad_ne."""
    m, p, b = cfg.model, cfg.parallel, resolved_bytes(cfg)
    count = head_params(m)
    sharding = profile_of(cfg).sharding
    if sharding == "sapp-nd":
        f = shard_factors(cfg)
        return _per_param(count, b, f.p_os_non_exp_partial, f.grad_non_exp, f.p_os_non_exp_partial)
    held = count / p.tp
    if sharding == "megatron":
        return _per_param(held, b, _dp_shard(cfg), 1, 1)
    d = p.dp * p.cp
    return _per_param(held, b, d, d, d)


@dataclass(frozen=True)
class GradClipBuffer:
    """The reference's gradient-clipping buffer split by parameter kind (bytes)."""

    non_expert: float
    routed: float
    shared: float

    @property
    def total(self) -> float:
        return self.non_expert + self.routed + self.shared


def grad_clip_buffer(cfg: EstimatorConfig, index: int) -> GradClipBuffer:
    """Reference grad-clip buffer of a full-recompute layer (reference §2.4, body.py:130; seed P2-04).

    buffer = [n + (r/ep)·B_os/S_re + s·B_os/S_se]·B_os/S_ne_partial. The reference does not wire it
    into the stage total by default, and neither does ndval; it is exposed so P2-04 can check that
    its routed part follows ``expert_zero3_sharding`` like params/OS/grads.
    """
    lp = layer_params(cfg.model, index)
    f, b = shard_factors(cfg), resolved_bytes(cfg)
    outer = b.optimizer_state / f.p_os_non_exp_partial
    ep = layer_ep(cfg, index)
    return GradClipBuffer(
        non_expert=lp.non_expert * outer,
        routed=lp.routed / ep * b.optimizer_state / f.p_os_exp * outer,
        shared=lp.shared * b.optimizer_state / f.p_os_exp_partial * outer,
    )
