"""Quantities shared by every stage of one config, and the unit conversions of the step-time model.

:func:`context` reads a config once into a :class:`Ctx` (tokens, degrees, byte widths, peak
FLOP/s, network levels, mode, per-launch host cost, device efficiencies); :func:`comm_value` and
:func:`compute_value` turn collectives and FLOPs into report units (seconds in ``time`` mode,
FLOP·B_p and bytes·comm_w in ``score`` mode, reference §3.1-§3.2).

Placement (which network levels a group spans) follows Megatron's default rank order
tp → cp → dp (experts: etp → ep → edp) → pp: a group's stride is the product of the degrees
inside it.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from estimator.config.errors import ConfigError
from estimator.inputs import derive
from estimator.inputs.profiles import DTYPE_BYTES, host_launch_cost_s, profile_of
from estimator.perf import comm, compute, network
from estimator.shared.arrays import as_float
from estimator.shared.memo import config_memo, derived, pricing_key, pricing_memo
from ndval.core import cache
from ndval.core.units import FLOPS_PER_TFLOPS

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig


@dataclass(frozen=True)
class Ctx:
    """Quantities shared by all stages of one config (computed once)."""

    tokens: float  # b·s of one micro-batch
    seq: int
    tp: int
    cp: int
    dp: int
    pp: int
    ep: int
    t_exp: int
    edp: int
    sp: bool
    b_compute: int
    b_param: int
    b_grad: int
    peak_flops: float  # FLOP/s one device sustains (peak × efficiency)
    levels: tuple[network.LevelLike, ...]
    score: bool
    comm_weight: float
    tokens_per_expert: tuple[float, ...] | None  # given routing load, None = balanced
    expert_imbalance: float  # busiest EP rank's load / mean (1.0 balanced)
    host_launch_s: float = 0.0  # host seconds per kernel launch (0: no host term)


def reference_comm_weight(hidden: int, ffn: int, seq: int) -> float:
    """The reference's comm weight in score mode, ``1.5·(F + s)·8192/(h + s)`` (reference §3.2)."""
    return 1.5 * (ffn + seq) * 8192.0 / (hidden + seq)


def context(cfg: EstimatorConfig) -> Ctx:
    """The :class:`Ctx` of ``cfg``; a precision the hardware has no peak for is a ``ConfigError``."""
    p, m, prof = cfg.parallel, cfg.model, profile_of(cfg)
    groups = derive.expert_groups(cfg)
    peak = cfg.hardware.peak_tflops.get(cfg.precision.compute)
    if peak is None:
        raise ConfigError("precision.compute", f"hardware {cfg.hardware.name!r} has no peak_tflops for "
                          f"{cfg.precision.compute!r}")
    ffn = m.expert_ffn if m.is_moe else m.dense_ffn
    load = _tokens_per_expert(cfg)
    return Ctx(
        tokens=as_float(cfg.train.micro_batch_size * cfg.train.seq_length),
        seq=cfg.train.seq_length,
        tp=p.tp, cp=p.cp, dp=p.dp, pp=p.pp, ep=p.ep,
        t_exp=groups.etp,
        edp=groups.edp,
        sp=p.sequence_parallel and p.tp > 1,
        b_compute=DTYPE_BYTES[cfg.precision.compute],
        b_param=DTYPE_BYTES[cfg.precision.params or prof.params_dtype],
        b_grad=DTYPE_BYTES[cfg.precision.grads or prof.grads_dtype],
        peak_flops=peak * FLOPS_PER_TFLOPS * cfg.options.compute_efficiency,
        levels=derived(cfg.hardware, "levels", lambda: tuple(cfg.hardware.levels)),  # one tuple per (frozen) hardware
        score=cfg.options.perf_mode == "score",
        comm_weight=reference_comm_weight(m.hidden_size, ffn, cfg.train.seq_length),
        tokens_per_expert=load,
        expert_imbalance=compute.ep_rank_load_imbalance(load, p.ep) if load else 1.0,
        host_launch_s=host_launch_s(cfg),
    )


def config_context(cfg: EstimatorConfig) -> Ctx:
    """:func:`context` of ``cfg``, built once per config instance (:func:`estimator.shared.memo.derived`) and
    shared by configs equal in :func:`estimator.shared.memo.pricing_key` (it reads nothing else): the
    context :func:`estimator.perf.stage.stage_costs` may share stage prices under."""
    return derived(cfg, CONTEXT_KEY, lambda: _shared_context(cfg))


#: contexts shared across configs: pricing key -> (the instances it names, context); cleared when full
_CONTEXTS = cache.store("estimator.perf_contexts", bound=1024, key="pricing_key(cfg)",
                        holds="(the instances the pricing key names, the step-time context Ctx)")


def _shared_context(cfg: EstimatorConfig) -> Ctx:
    """:func:`context` kept in :data:`_CONTEXTS` by :func:`estimator.shared.memo.pricing_key`."""
    shared = pricing_key(cfg)
    if shared is None:  # the batched stand-ins
        return context(cfg)
    return cache.shared_value(_CONTEXTS, shared[0], shared[1], lambda: context(cfg))


#: the :func:`estimator.shared.memo.config_memo` key of :func:`config_context`
CONTEXT_KEY = "perf_context"


def prices(cfg: EstimatorConfig, ctx: Ctx, user: str) -> dict[Hashable, Any]:
    """The dictionary of ``user``'s per-kind prices of ``cfg`` under ``ctx``: shared by every config equal
    in :func:`estimator.shared.memo.pricing_key` (:func:`estimator.shared.memo.pricing_memo`) when ``ctx``
    is the config's own context (:func:`config_context`); a fresh one for a context of the caller's."""
    if config_memo(cfg).get(CONTEXT_KEY) is ctx:
        return pricing_memo(cfg, user)
    return {}


def host_launch_s(cfg: EstimatorConfig) -> float:
    """Host seconds per kernel launch used by the model: ``options.host_launch_cost_us`` or else the
    profile's sourced value (:func:`estimator.inputs.profiles.host_launch_cost_s`) when ``options.host_launch_overhead`` is on and
    the mode is ``time``; 0 otherwise (``score`` mode has no seconds to bound: FLOP·B_p and
    bytes·comm_w are the reference's relative units, which never had a host term)."""
    o = cfg.options
    if not o.host_launch_overhead or o.perf_mode == "score":
        return 0.0
    return host_launch_cost_s(cfg)


def _tokens_per_expert(cfg: EstimatorConfig) -> tuple[float, ...] | None:
    """``options.ep_tokens_per_expert`` checked against the model (length E, ≥ 0, not all 0)."""
    load = cfg.options.ep_tokens_per_expert
    if load is None:
        return None
    field_name = "options.ep_tokens_per_expert"
    if not cfg.model.is_moe or len(load) != cfg.model.num_experts:
        raise ConfigError(field_name, f"needs one value per routed expert ({cfg.model.num_experts}); got {len(load)}")
    if any(x < 0 for x in load) or sum(load) <= 0:
        raise ConfigError(field_name, "values must be ≥ 0 and not all 0")
    return tuple(float(x) for x in load)


#: the option holding each dimension's comm overlap
_OVERLAP = {"tp": "tp_comm_overlap", "ep": "ep_comm_overlap", "cp": "cp_comm_overlap", "dp": "dp_comm_overlap"}


def comm_value(cfg: EstimatorConfig, ctx: Ctx, cs: list[comm.Collective], stride: int, dim: str) -> float:
    """Seconds (time mode) or bytes·comm_w (score mode, and EP when not converted — P4)."""
    o = cfg.options
    keep_bytes = ctx.score or (dim == "ep" and not o.convert_ep_comm_to_time)
    if keep_bytes:
        value = sum(map(comm.wire_bytes, cs)) * (ctx.comm_weight if ctx.score else 1.0)
    else:
        value = network.collectives_time_s(cs, stride, ctx.levels) if cs else 0  # (the empty sum, at once)
    value = network.exposed_s(value, getattr(o, _OVERLAP[dim]))
    if dim == "tp" and o.tp_comm_half_hack:
        value = value / 2.0
    if dim == "dp" and o.dp_comm_zero_hack:
        value = 0.0
    return value


def compute_value(ctx: Ctx, flops: float) -> float:
    """Seconds ``FLOPs/(peak·eff)`` (time) or ``FLOPs·B_p`` (score; reference §3.1's FLOP×bytes)."""
    return flops * ctx.b_param if ctx.score else flops / ctx.peak_flops
