"""Per-stage assembly: Static + Dynamic -> ``MemoryReport`` (spec §2, §6; reference §2.8).

Stage total = params + optimizer_states + grads (static, summed over the stage's layers, the
embedding on the first virtual stage, the head on the last, and under ``megatron`` a second
embedding on the MTP stage: ``mtp_embedding_on_stage``) + activations (each layer × its
in-flight micro-batches μ, embedding, head input and logits) + comm_buffers (reference §2.6,
``sapp-nd`` only) + backward_overhead (one extra micro-batch of the last node; all-gather CP's gathered K / V) + safety_buffer + tp_shardable_overhead + other (FSDP2's
unsharded weights and the run-long framework allocations of ``memory.framework``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from estimator.inputs import derive
from estimator.inputs.derive import layer_kind, layer_kind_groups, recomputed_layers
from estimator.inputs.params import weight_copies
from estimator.inputs.profiles import profile_of, tp_shardable_overhead_mb
from estimator.inputs.runtime_buffer import stage_runtime_buffers_mb
from estimator.memory import activation as act
from estimator.memory import buffers, framework, fsdp2, sac
from estimator.memory.schedule import in_flight
from estimator.memory.static import (
    StaticBreakdown,
    StaticBytes,
    embedding_static,
    head_static,
    layer_static,
)
from estimator.shared.arrays import is_array
from estimator.shared.memo import derived, pricing_memo
from ndval.core.units import BYTES_PER_MIB

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig, RecomputeMode
    from estimator.inputs.derive import StageLayout


#: memory component names, in report order (spec §2)
COMPONENTS = (
    "params",
    "optimizer_states",
    "grads",
    "activations",
    "comm_buffers",
    "backward_overhead",
    "safety_buffer",
    "tp_shardable_overhead",
    "other",
)

@dataclass(frozen=True)
class StageMemory:
    """Memory of one pipeline stage; ``components`` in MiB sum to ``total_mb``."""

    stage: int
    components: dict[str, float]
    layers: tuple[int, ...] = ()
    in_flight: tuple[int, ...] = ()  # μ per chunk
    recompute: str = "none"
    static_detail: StaticBreakdown = field(default_factory=StaticBreakdown)
    #: the caching allocator's idle cached blocks at the peak (MiB, by name; ``memory.fsdp2``)
    reserve: dict[str, float] = field(default_factory=dict)
    #: run-long framework allocations (MiB, by name; ``memory.framework``), part of ``other``
    persistent: dict[str, float] = field(default_factory=dict)

    @property
    def total_mb(self) -> float:
        """Allocated bytes at the stage's peak (MiB)."""
        return float(sum(self.components.values()))

    @property
    def reserved_mb(self) -> float:
        """Reserved by the caching allocator at the peak: allocated + idle cached blocks (MiB)."""
        return self.total_mb + float(sum(self.reserve.values()))

    @property
    def static_mb(self) -> float:
        return sum(self.components[k] for k in ("params", "optimizer_states", "grads"))

    @property
    def dynamic_mb(self) -> float:
        return self.total_mb - self.static_mb

    @property
    def steady_mb(self) -> float:
        """Allocated after the optimizer step: params + optimizer states + grads + run-long allocations."""
        return self.static_mb + float(sum(self.persistent.values()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "total_mb": self.total_mb,
            "components": dict(self.components),
            "layers": list(self.layers),
            "in_flight": list(self.in_flight),
            "recompute": self.recompute,
            "reserved_mb": self.reserved_mb,
            "reserve": dict(self.reserve),
            "persistent": dict(self.persistent),
        }


@dataclass(frozen=True)
class MemoryReport:
    """Per-stage memory and the peak (spec §2)."""

    stages: tuple[StageMemory, ...]
    profile: str
    hbm_mb: float
    warnings: tuple[str, ...] = ()

    @property
    def peak_mb(self) -> float:
        return max(s.total_mb for s in self.stages)

    @property
    def peak_stage(self) -> int:
        peak = self.peak_mb
        return next(s.stage for s in self.stages if s.total_mb == peak)

    @property
    def peak_reserved_mb(self) -> float:
        """Largest reserved memory over stages (allocated + the allocator's idle blocks)."""
        return max(s.reserved_mb for s in self.stages)

    @property
    def fits(self) -> bool:
        """Peak at most the device memory."""
        return self.peak_mb <= self.hbm_mb

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "peak_mb": self.peak_mb,
            "peak_stage": self.peak_stage,
            "peak_reserved_mb": self.peak_reserved_mb,
            "hbm_mb": self.hbm_mb,
            "fits": self.fits,
            "stages": [s.to_dict() for s in self.stages],
            "warnings": list(self.warnings),
        }


def layer_dynamic_bytes(cfg: EstimatorConfig, index: int, mu: int, mode: RecomputeMode) -> tuple[float, float]:
    """(activations, comm buffer) of one layer at μ in-flight micro-batches: activation·μ and the
    reference's per-layer buffer (``buffers.layer_comm_bytes``, itself μ-dependent)."""
    return act.layer_activation_bytes(cfg, index, mode) * mu, buffers.layer_comm_bytes(cfg, index, mu, mode)


def _prices(cfg: EstimatorConfig) -> dict[Any, Any]:
    """The memory model's per-layer and per-stage prices of ``cfg``: one dictionary shared by every config
    equal in :func:`estimator.shared.memo.pricing_key` (kept in the cache registry, ``ndval.core.cache``)."""
    return pricing_memo(cfg, "memory")


def _layer_dynamic(cfg: EstimatorConfig, memo: dict[Any, Any], index: int, key: object, mu: int,
                   mode: RecomputeMode) -> tuple[float, float]:
    """:func:`layer_dynamic_bytes` of layer ``index`` (of :func:`layer_class` ``key``), its
    μ-independent activation and its comm buffer each priced once in ``memo`` (:func:`_prices`)."""
    act_key = ("act", key, mode)
    activation = memo.get(act_key)
    if activation is None:
        activation = memo[act_key] = act.layer_activation_bytes(cfg, index, mode)
    if is_array(mu):  # an array of layouts' μ (estimator.search.batched) is no dictionary key
        return activation * mu, buffers.layer_comm_bytes(cfg, index, mu, mode)
    comm_key = ("comm", key, mu, mode)
    comm = memo.get(comm_key)
    if comm is None:
        comm = memo[comm_key] = buffers.layer_comm_bytes(cfg, index, mu, mode)
    return activation * mu, comm


def head_dynamic_bytes(cfg: EstimatorConfig, mu: int) -> tuple[float, float]:
    """(activations, comm buffer) of the output head at μ in-flight micro-batches.

    Activations: head input × μ plus logits × μ (reference: kept per micro-batch) or × 1 (one
    transient copy, ``Profile.logits_held_per_micro_batch``); comm: the head's buffer once.
    """
    logits_mu = mu if profile_of(cfg).logits_held_per_micro_batch else 1
    return act.head_input_bytes(cfg) * mu + act.logits_bytes(cfg) * logits_mu, buffers.head_comm_bytes(cfg)


def backward_overhead_bytes(cfg: EstimatorConfig, layout: StageLayout, mode: RecomputeMode) -> float:
    """:func:`_backward_overhead_bytes` with the config's prices (:func:`_prices`)."""
    return _backward_overhead_bytes(cfg, layout, mode, _prices(cfg))


def cp_gather_transient_bytes(cfg: EstimatorConfig, layout: StageLayout) -> float:
    """All-gather CP's K / V of the whole sequence and their gradients in one attention backward
    (:func:`estimator.memory.activation.cp_allgather_kv_bytes`), on a stage holding an attention layer; 0 under a
    profile with the reference's comm buffers (``sapp-nd``: its CP buffer stands for it)."""
    if profile_of(cfg).comm_buffers or not any(derive.layer_blocks(cfg.model, i)[0] == "attention"
                                               for i in layout.layers):
        return 0.0
    return act.cp_allgather_kv_bytes(cfg)


def _backward_overhead_bytes(cfg: EstimatorConfig, layout: StageLayout, mode: RecomputeMode,
                             memo: dict[Any, Any]) -> float:
    """The stage's backward overhead: one extra micro-batch of its last node (:func:`_last_node_bytes`) plus
    all-gather CP's transient K / V (:func:`cp_gather_transient_bytes`). ``memo``: :func:`_prices`."""
    return _last_node_bytes(cfg, layout, mode, memo) + cp_gather_transient_bytes(cfg, layout)


def _last_node_bytes(cfg: EstimatorConfig, layout: StageLayout, mode: RecomputeMode,
                     memo: dict[Any, Any]) -> float:
    """One extra micro-batch of the stage's last node at the end of warm-up (reference §2.8).

    The last node of the last chunk is evaluated at μ = 1 without recompute (a fully recomputed
    layer re-materialises its activations); on the stage holding the head the last node is the
    output layer (with ``activation.loss_backward_logits_copies`` logit gradients), plus the last
    MTP layer when there is one. ``zero_bubble_v`` uses the same rule;
    the reference's two-chunk maximum for it is not modelled. ``memo``: :func:`_prices`.
    """

    def layer_once(i: int) -> float:
        return sum(_layer_dynamic(cfg, memo, i, layer_class(cfg, i), 1, "none"))

    last_chunk = next((c for c in reversed(layout.chunks) if c), ())
    n_main = cfg.model.num_layers  # a chunk's layers ascend, the MTP layers (≥ n_main) last
    if layout.has_head and layout.head_chunk == len(layout.chunks) - 1:
        extra_copies = act.loss_backward_logits_copies(cfg) - 1
        total = sum(head_dynamic_bytes(cfg, 1)) + extra_copies * act.logits_bytes(cfg)
        if last_chunk and last_chunk[-1] >= n_main:
            total += layer_once(last_chunk[-1])
        return total
    decoder = [i for i in last_chunk if i < n_main]
    if decoder and mode == "full" and derive.recompute_unit(cfg) > 1:  # a uniform unit re-runs its layers together
        heads = derive.unit_inputs(cfg)
        return sum(layer_once(i) for i in decoder[max(j for j, i in enumerate(decoder) if i in heads):])
    return layer_once(decoder[-1]) if decoder else 0.0


def mtp_embedding_on_stage(cfg: EstimatorConfig, layout: StageLayout) -> bool:
    """True when the stage runs the MTP layers, is not the first stage, and the profile's framework
    gives the MTP stage its own word embedding (Megatron-Core ``GPTModel`` builds
    ``self.embedding`` when ``pre_process or mtp_process``; the MTP module embeds the shifted
    input ids). Its params/grads/optimizer states and one embedding output per in-flight
    micro-batch are then counted on that stage too.
    """
    return (
        layout.mtp_chunk(cfg.model.num_layers) is not None
        and not layout.has_embedding
        and cfg.model.mtp_layers > 0
        and profile_of(cfg).mtp_stage_holds_embedding
    )


def offloaded_layers(cfg: EstimatorConfig, layers: Sequence[int]) -> dict[tuple[str, bool], int]:
    """Layers of ``layers`` (one chunk) per :func:`layer_class` whose activations Transformer Engine's CPU
    offload moves to host memory: the first ``train.cpu_offloading_num_layers`` of the model.

    Megatron-Core's ``TransformerBlock`` opens ``get_cpu_offload_context(cpu_offloading,
    cpu_offloading_num_layers, num_layers, ...)`` (NVIDIA/Megatron-LM@d98e8a64dd
    ``megatron/core/transformer/transformer_block.py``); TE's group offload handler offloads the saved
    activations of groups (layers) ``0 .. N−1`` after their forward and reloads each before its backward
    (TransformerEngine ``pytorch/cpu_offload.py``). The stage then holds the other layers' activations plus one
    offloaded layer in transit (the forward's outgoing copy, the backward's prefetch): :func:`stage_memory`
    adds the largest of them once. Megatron allows it without pipeline parallelism and recompute only
    (:mod:`estimator.config.rules`), so the one stage holds layers ``0 .. N−1``."""
    n = cfg.train.cpu_offloading_num_layers
    out: dict[tuple[str, bool], int] = {}
    for index in layers:
        if index < n:
            key = layer_class(cfg, index)
            out[key] = out.get(key, 0) + 1
    return out


def layer_class(cfg: EstimatorConfig, index: int) -> tuple[str, bool]:
    """What the memory of layer ``index`` depends on besides the config: its kind (which fixes its
    ep) and, under torchtitan's layer-level SAC (``selective_ac_option: <n>``), whether it is
    checkpointed. Layers of one class hold the same static and dynamic bytes."""
    chosen = checkpointed_layers(cfg)
    return layer_kind(cfg.model, index), chosen is not None and index in chosen


def checkpointed_layers(cfg: EstimatorConfig) -> frozenset[int] | None:
    """The layers memory holds as fully recomputed where the choice is per layer
    (:func:`estimator.inputs.derive.recomputed_layers`); torchtitan's layer-level SAC also with
    ``options.per_layer_recompute`` off (its memory was per layer before that switch)."""
    if derive.recompute_unit(cfg) > 1:  # Megatron's uniform units: the layers that keep their unit's input
        return derive.unit_inputs(cfg)
    chosen = recomputed_layers(cfg)
    every = sac.layer_level_every(cfg)
    if chosen is not None or every is None:
        return chosen
    n = cfg.model.num_layers + cfg.model.mtp_layers
    return derived(cfg, "sac_checkpointed", lambda: frozenset(i for i in range(n) if sac.layer_checkpointed(i, every)))


def class_mode(cfg: EstimatorConfig, mode: RecomputeMode, key: tuple[str, bool]) -> RecomputeMode:
    """Recompute mode of the layers of :func:`layer_class` ``key`` on a stage of ``mode``: under Megatron's
    ``recompute.method: block`` a full stage re-runs its chosen layers (``full``) and no other (``none``);
    otherwise the stage's mode (layer-level SAC maps its layers in :func:`act.layer_activation_bytes`)."""
    if mode == "full" and cfg.recompute.method == "block" and recomputed_layers(cfg) is not None:
        return "full" if key[1] else "none"
    return mode


def layer_classes(cfg: EstimatorConfig, layers: Sequence[int]) -> list[tuple[int, int]]:
    """(representative index, count) per :func:`layer_class` among ``layers``, in first-seen order."""
    if checkpointed_layers(cfg) is None:
        return layer_kind_groups(cfg.model, layers)
    groups: dict[tuple[str, bool], list[int]] = {}
    for index in layers:
        groups.setdefault(layer_class(cfg, index), []).append(index)
    return [(members[0], len(members)) for members in groups.values()]


def chunk_classes(cfg: EstimatorConfig, layout: StageLayout) -> list[Sequence[tuple[int, int]]]:
    """:func:`layer_classes` of each chunk of ``layout`` (the kind runs kept on the layout, when the
    class is the kind)."""
    if checkpointed_layers(cfg) is None:
        return [layout.kind_groups(cfg.model, c) for c in range(len(layout.chunks))]
    return [layer_classes(cfg, layers) for layers in layout.chunks]


def summed_static(terms: Sequence[tuple[StaticBreakdown, int]]) -> StaticBreakdown:
    """``Σ n·s`` over ``terms`` (static breakdown ``s`` of ``n`` layers), field by field in their order:
    the sums adding each term's ``n``-fold record to ``StaticBreakdown()`` would give, without the
    records in between (``x·1 = x`` exactly)."""
    p0 = o0 = g0 = p1 = o1 = g1 = p2 = o2 = g2 = 0.0
    for s, n in terms:
        a, b, c = s.non_expert, s.routed, s.shared
        p0, o0, g0 = p0 + a.params * n, o0 + a.optimizer_states * n, g0 + a.grads * n
        p1, o1, g1 = p1 + b.params * n, o1 + b.optimizer_states * n, g1 + b.grads * n
        p2, o2, g2 = p2 + c.params * n, o2 + c.optimizer_states * n, g2 + c.grads * n
    return StaticBreakdown(StaticBytes(p0, o0, g0), StaticBytes(p1, o1, g1), StaticBytes(p2, o2, g2))


@dataclass(frozen=True)
class StageFixed:
    """What a stage's memory owes to its layers and extras, not to its in-flight micro-batches μ:
    equal for every stage of one config with the same :func:`stage_signature` (bytes unless named)."""

    groups: tuple[tuple[tuple[int, int, tuple[str, bool]], ...], ...]  # per chunk: (first index, count, class)
    static: StaticBreakdown  # the layers' static bytes
    totals: StaticBytes  # + embedding / head (/ MTP embedding)
    mtp_embedding: bool  # :func:`mtp_embedding_on_stage`
    backward: float  # :func:`backward_overhead_bytes`
    grads_mb: float
    other_mb: float  # FSDP2's unsharded weights + the run-long framework allocations
    persistent: dict[str, float]  # MiB by name (``memory.framework``)
    reserve: dict[str, float]  # MiB by name (``memory.fsdp2``)


def stage_signature(cfg: EstimatorConfig, layout: StageLayout,
                    groups: Sequence[Sequence[tuple[int, int]]], mode: RecomputeMode) -> tuple[object, ...]:
    """What :class:`StageFixed` depends on besides the config: per chunk the classes of its layers in
    order (the (kind, count) runs: a chunk's layers ascend, so kinds come in runs, dense, moe, mtp;
    under per-layer recompute every layer's :func:`layer_class`), where the embedding, head and MTP
    layers sit, and the recompute mode."""
    m = cfg.model
    if checkpointed_layers(cfg) is not None:
        chunks: tuple[object, ...] = tuple(tuple(layer_class(cfg, i) for i in c) for c in layout.chunks)
    else:
        chunks = tuple(layout.kind_runs(m, c) for c in range(len(groups)))  # (groups: the layout's kind runs)
    return chunks, layout.embedding_chunk, layout.head_chunk, layout.mtp_chunk(m.num_layers), mode


def stage_fixed(cfg: EstimatorConfig, layout: StageLayout, mode: RecomputeMode,
                groups: Sequence[Sequence[tuple[int, int]]]) -> StageFixed:
    """The μ-independent part of :func:`stage_memory` (``groups``: :func:`layer_classes` per chunk)."""
    return _stage_fixed(cfg, layout, mode, groups, _prices(cfg))


def _stage_fixed(cfg: EstimatorConfig, layout: StageLayout, mode: RecomputeMode,
                 groups: Sequence[Sequence[tuple[int, int]]], memo: dict[Any, Any]) -> StageFixed:
    classes = []
    terms = []
    for chunk_groups in groups:
        classes.append(tuple((i, n, layer_class(cfg, i)) for i, n in chunk_groups))
        for i, n, key in classes[-1]:
            if key not in memo:
                memo[key] = layer_static(cfg, i)
            terms.append((memo[key], weight_copies(cfg.model, i, n)))
    static = summed_static(terms)
    mtp_embedding = mtp_embedding_on_stage(cfg, layout)
    extra = StaticBytes()
    if layout.has_embedding or mtp_embedding:
        extra = extra + embedding_static(cfg)
    if layout.has_head:
        extra = extra + head_static(cfg)
    totals = static.total + extra
    persistent = {k: v / BYTES_PER_MIB for k, v in framework.persistent_bytes(cfg, layout).items()}
    return StageFixed(
        groups=tuple(classes), static=static, totals=totals, mtp_embedding=mtp_embedding,
        backward=_backward_overhead_bytes(cfg, layout, mode, memo),
        grads_mb=(totals.grads if fsdp2.grads_live(cfg) else 0.0) / BYTES_PER_MIB,
        other_mb=fsdp2.unsharded_live_bytes(cfg, layout) / BYTES_PER_MIB + sum(persistent.values()),
        persistent=persistent,
        reserve={k: v / BYTES_PER_MIB for k, v in fsdp2.reserve_terms(cfg, layout, mode).items()},
    )


def _stage_fixed_of(cfg: EstimatorConfig, layout: StageLayout, mode: RecomputeMode,
                    memo: dict[Any, Any]) -> StageFixed:
    """The :class:`StageFixed` of ``layout``, kept in ``memo`` (:func:`_prices`) by :func:`stage_signature` (without
    layer-level SAC the signature is built from the chunks' kind runs kept on the layout)."""
    groups: Sequence[Sequence[tuple[int, int]]]
    signature: tuple[object, ...]
    if checkpointed_layers(cfg) is None:
        m = cfg.model
        groups, runs = layout.chunk_kinds(m)
        signature = ("fixed", (runs, layout.embedding_chunk, layout.head_chunk, layout.mtp_chunk(m.num_layers), mode))
    else:
        groups = chunk_classes(cfg, layout)
        signature = ("fixed", stage_signature(cfg, layout, groups, mode))
    fixed: StageFixed | None = memo.get(signature)
    if fixed is None:
        fixed = memo[signature] = _stage_fixed(cfg, layout, mode, groups, memo)
    return fixed


def stage_memory(cfg: EstimatorConfig, layout: StageLayout) -> StageMemory:
    """Assemble one stage (sizes in MiB). Layers of one :func:`layer_class` are priced once and
    multiplied by their count; :func:`_prices` (shared by the stages of one config and by the configs
    equal in :func:`estimator.shared.memo.pricing_key`) keeps those prices and each
    :func:`stage_signature`'s :class:`StageFixed`, so stages alike but for μ share it."""
    p = cfg.parallel
    mode = cfg.stage_recompute(layout.stage)
    m_micro = cfg.num_micro_batches
    memo = pricing_memo(cfg, "memory")  # (:func:`_prices`, inlined: every stage of every estimate)
    fixed = _stage_fixed_of(cfg, layout, mode, memo)
    activations = comm = 0.0
    mus: list[int] = []
    order = profile_of(cfg).interleaved_order
    mtp_chunk = layout.mtp_chunk(cfg.model.num_layers)
    inner_units = mode == "full" and derive.recompute_unit(cfg) > 1
    for chunk, chunk_groups in enumerate(fixed.groups):
        mu = in_flight(p.schedule, p.pp, p.vpp, m_micro, layout.stage, chunk, order=order,
                       extra_warmup=int(p.overlap_moe_expert_parallel_comm))
        mus.append(mu)
        off = offloaded_layers(cfg, layout.chunks[chunk]) if cfg.train.cpu_offloading_num_layers else {}
        in_transit = 0.0
        for i, n, key in chunk_groups:
            layer_act, layer_comm = _layer_dynamic(cfg, memo, i, key, mu, class_mode(cfg, mode, key))
            if inner_units and not key[1]:  # inside a uniform unit: its first layer's input stands for it
                layer_act = 0.0
            n_off = off.get(key, 0)
            activations += layer_act * (n - n_off)
            comm += layer_comm * n
            if n_off:
                in_transit = max(in_transit, layer_act)
        activations += in_transit
        if layout.embedding_chunk == chunk:
            activations += act.embedding_activation_bytes(cfg) * mu
            comm += buffers.embedding_comm_bytes(cfg)
        if layout.head_chunk == chunk:
            head_act, head_comm = head_dynamic_bytes(cfg, mu)
            activations += head_act
            comm += head_comm
        if mtp_chunk == chunk and fixed.mtp_embedding:
            activations += act.embedding_activation_bytes(cfg) * mu
    bwd = fixed.backward
    dynamic = activations + comm + bwd
    opts = cfg.options
    safety, overhead = stage_runtime_buffers_mb(dynamic > 0, opts.safety_buffer_mb, tp_shardable_overhead_mb(cfg),
                                                p.tp, tp_scaled=opts.tp_scaled_buffers)  # P1
    totals = fixed.totals
    components = {
        "params": totals.params / BYTES_PER_MIB,
        "optimizer_states": totals.optimizer_states / BYTES_PER_MIB,
        "grads": fixed.grads_mb,
        "activations": activations / BYTES_PER_MIB,
        "comm_buffers": comm / BYTES_PER_MIB,
        "backward_overhead": bwd / BYTES_PER_MIB,
        "safety_buffer": safety,
        "tp_shardable_overhead": overhead,
        "other": fixed.other_mb,
    }
    return StageMemory(
        stage=layout.stage,
        components=components,
        layers=layout.layers,
        in_flight=tuple(mus),
        recompute=mode,
        static_detail=fixed.static,
        reserve=dict(fixed.reserve),
        persistent=dict(fixed.persistent),
    )
