"""Derived degrees and sharding factors — the one place for them.

Symbols (reference §2): d = dp, t = tp, cp, ep, etp, p = pp, vp = vpp, E = routed experts.
- expert degrees ``t_exp``, ``d_exp`` (reference §2.3, ``config_dp_tp_exp``);
- optimizer shard size ``os_max_shard`` and the sharding factors ``shard_*`` (reference §2.3,
  ``config_optimizer_shard``) including the seed's P2 switch ``expert_zero3_sharding``;
- the layer partition: which layers sit on which (stage, chunk), where the embedding and the
  output head (+MTP) go, which layers are dense or MoE, and each layer's ep.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any

from estimator.inputs import pipeline_split

# the layer kinds' one place is estimator.inputs.layer_kinds; re-exported here for the derived values' callers
from estimator.inputs.layer_kinds import LayerKind as LayerKind
from estimator.inputs.layer_kinds import kind_key as kind_key
from estimator.inputs.layer_kinds import layer_blocks as layer_blocks
from estimator.inputs.layer_kinds import layer_kind as layer_kind
from estimator.inputs.layer_kinds import layer_kind_groups as layer_kind_groups
from estimator.inputs.layer_kinds import layer_kind_runs as layer_kind_runs
from estimator.inputs.layer_kinds import mtp_is_moe as mtp_is_moe
from estimator.inputs.profiles import profile_of
from estimator.shared.arrays import gcd, where
from estimator.shared.memo import derived
from ndval.core import cache

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig, ModelConfig
    from estimator.config.sections import RecomputeMode



@dataclass(frozen=True)
class ExpertDegrees:
    """Expert tensor-parallel degree ``t_exp`` and expert data-parallel degree ``d_exp``."""

    t_exp: int
    d_exp: float


def expert_degrees(dp: int, tp: int, cp: int, ep: int, etp: int | None) -> ExpertDegrees:
    """Expert groups as the reference derives them (reference §2.3).

    With etp: t_exp = etp, d_exp = d·t·cp/(etp·ep). Without: t_exp = t; d_exp = d/ep when d ≥ ep,
    else d·t/ep; and t_exp = 1 when t_exp·ep > d·t. Every branch of d_exp carries 1/ep — the source
    of the seed's P2 cancellation.
    """
    if etp is not None:  # ge 1 when set; an array of layouts too (estimator.shared.arrays)
        return ExpertDegrees(t_exp=etp, d_exp=dp * tp * cp / (etp * ep))
    d_exp = where(dp >= ep, dp / ep, dp * tp / ep)  # arrays of layouts too (estimator.shared.arrays)
    t_exp = where(tp * ep > dp * tp, 1, tp)
    return ExpertDegrees(t_exp=t_exp, d_exp=d_exp)


def os_max_shard(cfg: EstimatorConfig) -> int:
    """Optimizer shard size: ``optimizer_shard_size`` if set, else d·t with the distributed optimizer, else 1."""
    p = cfg.parallel
    if not p.distributed_optimizer:
        return 1
    return p.optimizer_shard_size or p.dp * p.tp


@dataclass(frozen=True)
class ShardFactors:
    """Divisors of the reference's static memory (reference §2.3-§2.4).

    Param/OS: non-expert ``p_os_non_exp_partial``, routed ``p_os_exp`` (after a further /ep), shared
    ``p_os_exp_partial``; grads: ``grad_non_exp``, ``grad_exp``, ``grad_exp_partial``; embedding
    ``embed`` (Hyper: t·d).
    """

    p_os_non_exp_partial: float
    p_os_non_exp: float
    grad_non_exp: float
    p_os_exp_partial: float
    p_os_exp: float
    grad_exp: float
    grad_exp_partial: float
    embed: float


def routed_expert_shard(
    d_exp: float, cp: int, t_exp: int, *, has_op: bool, expert_zero3_sharding: bool
) -> float:
    """Divisor of routed-expert params/OS after /ep (seed §4.2.2).

    ``expert_zero3_sharding``: (d_exp if has_op else 1)·cp·t_exp — routed/ep/(d/ep·…) cancels ep;
    otherwise cp·t_exp, so routed memory scales as 1/ep. Without has_op both give cp·t_exp.
    """
    if expert_zero3_sharding:
        return (d_exp if has_op else 1) * cp * t_exp
    return cp * t_exp


def shard_factors(cfg: EstimatorConfig) -> ShardFactors:
    """All sharding factors of ``cfg`` (reference §2.3, upstream variant)."""
    p, m = cfg.parallel, cfg.model
    has_op = p.distributed_optimizer
    degrees = expert_degrees(p.dp, p.tp, p.cp, p.ep, p.etp)
    os_shard = os_max_shard(cfg)
    p_os_non_exp_partial = (os_shard if has_op else p.tp) * p.cp
    p_os_non_exp = (p.dp if has_op else 1) * p.cp * p.tp
    p_os_exp_partial = gcd(m.num_experts, (os_shard if has_op else 1) * degrees.t_exp)
    p_os_exp = routed_expert_shard(
        degrees.d_exp, p.cp, degrees.t_exp, has_op=has_op, expert_zero3_sharding=p.expert_zero3_sharding
    )
    return ShardFactors(
        p_os_non_exp_partial=p_os_non_exp_partial,
        p_os_non_exp=p_os_non_exp,
        grad_non_exp=p_os_non_exp if p.grad_sharding else p.tp,
        p_os_exp_partial=p_os_exp_partial,
        p_os_exp=p_os_exp,
        grad_exp=p_os_exp if p.grad_sharding else degrees.t_exp,
        grad_exp_partial=p_os_exp_partial if p.grad_sharding else degrees.t_exp,
        embed=p.tp * p.dp,
    )


@dataclass(frozen=True)
class ExpertGroups:
    """The expert groups of one pipeline stage: expert tensor-parallel degree ``etp`` and
    expert-data-parallel size ``edp`` (etp·ep·edp = dp·tp·cp)."""

    etp: int
    edp: int


def expert_groups(cfg: EstimatorConfig) -> ExpertGroups:
    """The expert tensor-parallel degree and the expert-DP size: the one rule memory, step time and
    search read, per framework profile (``Profile.sharding``).

    - ``megatron``, ``fsdp2``: Megatron-Core's — etp = ``parallel.etp``, unset = tp
      (``TransformerConfig.expert_tensor_parallel_size`` defaults to ``tensor_model_parallel_size``);
      validation requires ep | dp·cp then.
    - ``sapp-nd``: the reference's (reference §2.3, :func:`expert_degrees`) — etp, else tp, and 1
      once tp·ep > dp·tp.

    edp = dp·tp·cp // (etp·ep): whole under ``megatron``/``fsdp2`` (validation: ep | dp·cp without
    etp, ep·etp | dp·tp·cp with it); under ``sapp-nd`` the reference's etp = tp with ep ≤ dp and
    ep ∤ dp·cp leaves a fraction, floored (the reference itself shards by d_exp = d/ep there).
    """
    p = cfg.parallel
    if p.etp is not None:  # ge 1 when set; an array of layouts too (estimator.shared.arrays)
        etp = p.etp
    elif profile_of(cfg).sharding == "sapp-nd":
        etp = expert_degrees(p.dp, p.tp, p.cp, p.ep, None).t_exp
    else:
        etp = p.tp
    return ExpertGroups(etp=etp, edp=p.dp * p.tp * p.cp // (etp * p.ep))


def sequence_shard(cfg: EstimatorConfig) -> int:
    """Divisor of the replicated (non-TP-sharded) activations: tp with sequence parallelism, else 1."""
    return cfg.parallel.tp if cfg.parallel.sequence_parallel else 1


# --------------------------------------------------------------------------------------------
# layers


def attended_keys(model: ModelConfig, seq: int) -> int:
    """Keys per query a flash-attention kernel visits, averaged over the main layers, in the
    convention of :func:`estimator.perf.compute.attention_core_flops` (no causal halving: a full
    layer counts s keys, twice the s/2 a causal query really sees).

    A sliding-window layer (``model.sliding_window`` w; FlashAttention ``window_size``, GPT-OSS
    ``sliding_attention``) really sees min(q, w) keys, about w for s ≫ w, so it counts min(s, 2·w)
    in the same convention. With ``global_attention_every`` n every n-th layer is full:
    keys = (L_full·s + (L − L_full)·min(s, 2·w)) / L, L_full = ⌊L/n⌋ (0 for n = 0). Layers of one
    kind are priced once, so the mean stands for each layer (the stage split of an alternating
    pattern moves at most one layer's attention between stages).
    """
    window = model.sliding_window
    if window is None:
        return seq
    n_layers, every = model.num_layers, model.global_attention_every
    n_full = n_layers // every if every else 0
    windowed = min(seq, 2 * window)
    return round((n_full * seq + (n_layers - n_full) * windowed) / n_layers)


def layer_ep(cfg: EstimatorConfig, index: int) -> int:
    """EP degree a layer runs with: 1 for dense layers (reference hook_dense sets ep := 1)."""
    return kind_ep(cfg, layer_kind(cfg.model, index))


def kind_ep(cfg: EstimatorConfig, kind: LayerKind) -> int:
    """:func:`layer_ep` of a layer of kind ``kind``."""
    if kind in ("dense", "gdn_dense") or (kind == "mtp" and not mtp_is_moe(cfg.model)):
        return 1
    return cfg.parallel.ep


def num_virtual_stages(cfg: EstimatorConfig) -> int:
    """pp·vpp model chunks."""
    return cfg.parallel.pp * cfg.parallel.vpp


def layers_per_virtual_stage(cfg: EstimatorConfig) -> list[int]:
    """Decoder layers of each virtual stage: the stated uneven split (``estimator.inputs.pipeline_split``:
    ``layers_per_stage``, Megatron's layout string, first/last-stage counts, embedding/loss
    accounting) or an even split."""
    return pipeline_split.decoder_layers_per_virtual_stage(cfg.parallel, cfg.model.num_layers)


def virtual_stage_position(cfg: EstimatorConfig, v: int) -> tuple[int, int]:
    """(stage, chunk) of virtual stage ``v``.

    Interleaved: stage = v mod p, chunk = v div p. zero_bubble_v: the second chunk runs back up the
    pipeline (V shape), so chunk 1 of stage i holds virtual stage 2p−1−i (reference §2.7).
    """
    p = cfg.parallel.pp
    chunk, offset = divmod(v, p)
    if cfg.parallel.schedule == "zero_bubble_v" and chunk % 2 == 1:
        return p - 1 - offset, chunk
    return offset, chunk


@dataclass(frozen=True)
class StageLayout:
    """Layers of one pipeline stage per chunk, and the extras it carries. Shared by every config with
    the same split (:func:`stage_layouts`), so what it keeps is keyed by value."""

    stage: int
    chunks: tuple[tuple[int, ...], ...]  # global layer indices (MTP: num_layers + j) per chunk
    embedding_chunk: int | None  # chunk holding the embedding, or None
    head_chunk: int | None  # chunk holding the output head (+MTP), or None
    #: every layer of the stage, chunk by chunk (built once per layout)
    layers: tuple[int, ...] = field(init=False, repr=False, compare=False)
    #: the largest layer index of each chunk (−1 for an empty chunk), built once per layout
    chunk_tops: tuple[int, ...] = field(init=False, repr=False, compare=False)
    #: the stage holds the embedding / the output head (``embedding_chunk`` / ``head_chunk`` set)
    has_embedding: bool = field(init=False, repr=False, compare=False)
    has_head: bool = field(init=False, repr=False, compare=False)
    #: [the model last asked about (held), its {chunk: kind runs}, {num_layers: MTP chunk},
    #: {:func:`kind_key`: {chunk: kind runs}}]
    _kept: list[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(chain.from_iterable(self.chunks)))
        object.__setattr__(self, "chunk_tops", tuple(max(layers) if layers else -1 for layers in self.chunks))
        object.__setattr__(self, "_kept", [None, {}, {}, {}])
        object.__setattr__(self, "has_embedding", self.embedding_chunk is not None)
        object.__setattr__(self, "has_head", self.head_chunk is not None)

    def mtp_chunk(self, num_layers: int) -> int | None:
        """Chunk holding the MTP layers (indices ≥ ``num_layers``), or None (kept per ``num_layers``)."""
        kept: dict[int, int | None] = self._kept[2]
        if num_layers in kept:
            return kept[num_layers]
        chunk = kept[num_layers] = next((c for c, top in enumerate(self.chunk_tops) if top >= num_layers), None)
        return chunk

    def kind_groups(self, model: ModelConfig, chunk: int | None = None) -> tuple[tuple[int, int], ...]:
        """:func:`layer_kind_groups` of the stage's layers (or of chunk ``chunk``'s), kept on the layout
        per :func:`kind_key` of the model (the last model asked about held, so its own runs are found
        by identity)."""
        holder = self._kept
        hit = holder[1].get(chunk) if holder[0] is model else None
        return (hit or self._kinds(model, chunk))[0]

    def kind_runs(self, model: ModelConfig, chunk: int | None = None) -> tuple[tuple[LayerKind, int], ...]:
        """(:func:`layer_kind`, count) of each of :meth:`kind_groups`, kept alike (what stages with the
        same layers share, whatever their indices)."""
        holder = self._kept
        hit = holder[1].get(chunk) if holder[0] is model else None
        return (hit or self._kinds(model, chunk))[1]

    def chunk_kinds(self, model: ModelConfig) -> tuple[tuple[tuple[tuple[int, int], ...], ...],
                                                       tuple[tuple[tuple[LayerKind, int], ...], ...]]:
        """(:meth:`kind_groups`, :meth:`kind_runs`) of every chunk, kept alike (what the stage's memory
        signature reads)."""
        kept = self._kept_for(model)
        hit = kept.get("chunks")
        if hit is None:
            kinds = [self._kinds(model, c) for c in range(len(self.chunks))]
            hit = kept["chunks"] = (tuple(k[0] for k in kinds), tuple(k[1] for k in kinds))
        return hit

    def _kept_for(self, model: ModelConfig) -> dict[object, Any]:
        """The kind runs kept for ``model``'s :func:`kind_key` (the model held for the identity check)."""
        holder = self._kept
        if holder[0] is not model:
            if len(holder[3]) >= _KINDS_MAX:
                holder[3].clear()
            holder[0], holder[1] = model, holder[3].setdefault(kind_key(model), {})
        return holder[1]  # type: ignore[no-any-return]

    def _kinds(self, model: ModelConfig, chunk: int | None) -> tuple[tuple[tuple[int, int], ...],
                                                                     tuple[tuple[LayerKind, int], ...]]:
        kept = self._kept_for(model)
        hit = kept.get(chunk)
        if hit is None:
            runs = layer_kind_runs(model, self.layers if chunk is None else self.chunks[chunk])
            hit = kept[chunk] = (tuple((i, n) for _, i, n in runs), tuple((k, n) for k, _, n in runs))
        return hit


#: most :func:`kind_key` values a layout keeps kind runs for (cleared when full)
_KINDS_MAX = 64
#: stage layouts by :func:`split_key` (a sweep's configs repeat the same few splits); cleared when full
_LAYOUTS = cache.store("estimator.stage_layouts", bound=1024, key="split_key(cfg): pp, vpp, schedule, uneven-split "
                       "fields, main and MTP layer counts", holds="((), the stage layouts)")


def split_key(cfg: EstimatorConfig) -> tuple[object, ...]:
    """Everything :func:`_stage_layouts` reads from ``cfg``: pp, vpp, the schedule, the uneven-split
    fields (:data:`estimator.inputs.pipeline_split` reads no others) and the main and MTP layer counts."""
    p, m = cfg.parallel, cfg.model
    per_stage = None if p.layers_per_stage is None else tuple(p.layers_per_stage)
    return (p.pp, p.vpp, p.schedule, per_stage, p.pipeline_layout, p.decoder_first_pipeline_num_layers,
            p.decoder_last_pipeline_num_layers, p.account_for_embedding_in_pipeline_split,
            p.account_for_loss_in_pipeline_split, m.num_layers, m.mtp_layers)


def stage_layouts(cfg: EstimatorConfig) -> tuple[StageLayout, ...]:
    """The partition: embedding on the first virtual stage, output head on the last, MTP layers on the
    last unless Megatron's layout string puts its ``m`` elsewhere (``pipeline_split.mtp_virtual_stage``).
    Built once per config instance (:func:`estimator.shared.memo.derived`; memory and step time share it) and
    shared by configs with the same :func:`split_key`."""
    return derived(cfg, "stage_layouts", lambda: _shared_layouts(cfg))


def _shared_layouts(cfg: EstimatorConfig) -> tuple[StageLayout, ...]:
    """:func:`_stage_layouts` kept in :data:`_LAYOUTS` by :func:`split_key`."""
    return cache.shared_value(_LAYOUTS, split_key(cfg), (), lambda: _stage_layouts(cfg))


def _stage_layouts(cfg: EstimatorConfig) -> tuple[StageLayout, ...]:
    p, vp = cfg.parallel.pp, cfg.parallel.vpp
    counts = layers_per_virtual_stage(cfg)
    chunks: list[list[list[int]]] = [[[] for _ in range(vp)] for _ in range(p)]
    start = 0
    for v, n in enumerate(counts):
        stage, chunk = virtual_stage_position(cfg, v)
        chunks[stage][chunk].extend(range(start, start + n))
        start += n
    first_stage, first_chunk = virtual_stage_position(cfg, 0)
    last_stage, last_chunk = virtual_stage_position(cfg, len(counts) - 1)
    mtp = range(cfg.model.num_layers, cfg.model.num_layers + cfg.model.mtp_layers)
    mtp_stage, mtp_chunk = virtual_stage_position(cfg, pipeline_split.mtp_virtual_stage(cfg.parallel))
    chunks[mtp_stage][mtp_chunk].extend(mtp)
    return tuple(
        StageLayout(
            stage=s,
            chunks=tuple(tuple(c) for c in chunks[s]),
            embedding_chunk=first_chunk if s == first_stage else None,
            head_chunk=last_chunk if s == last_stage else None,
        )
        for s in range(p)
    )


def recomputed_layers(cfg: EstimatorConfig) -> frozenset[int] | None:
    """The layers re-run whole when recompute is chosen per layer; None when every layer of a stage follows
    the stage's mode (:meth:`EstimatorConfig.stage_recompute`). With ``options.per_layer_recompute``:

    * Megatron ``recompute.method: block`` with ``num_layers`` N (``--recompute-method block``,
      ``megatron/core/recompute.py``: ``use_checkpoint = layer_idx < recompute_num_layers`` over the
      ``num_layers_per_pipeline_rank`` layers of one ``TransformerBlock``, i.e. one model chunk): the first N
      decoder layers of each chunk of the stages whose mode is ``full``; MTP layers are not re-run
      (``multi_token_prediction.py``: "recompute_method == 'block' is not supported for MTP yet");
    * torchtitan's layer-level SAC (``recompute.selective_ac_option: "<n>"``, mode ``selective``): every n-th
      layer, 0-based index i with (i + 1) % n == 0 (``estimator.memory.sac.layer_checkpointed``).

    Built once per config instance. (Megatron's FP8 exception, a chunk's first layers skipped while their
    input needs no gradient, never applies to a trained model's chunks: the embedding output and the
    received activations carry gradients.)"""
    r = cfg.recompute
    option = r.selective_ac_option
    if (r.method != "block" and (option is None or not option.isdigit())) or not cfg.options.per_layer_recompute:
        return None  # (the common case first: this runs for every stage of every estimate)
    return derived(cfg, "recomputed_layers", lambda: _recomputed_layers(cfg))


def _recomputed_layers(cfg: EstimatorConfig) -> frozenset[int]:
    r, n_main = cfg.recompute, cfg.model.num_layers
    if r.method != "block":
        every = int(r.selective_ac_option or 1)
        return frozenset(i for i in range(n_main + cfg.model.mtp_layers) if (i + 1) % every == 0)
    n = r.num_layers or 0
    chosen: set[int] = set()
    for layout in stage_layouts(cfg):
        if cfg.stage_recompute(layout.stage) == "full":
            for chunk in layout.chunks:
                chosen.update([i for i in chunk if i < n_main][:n])
    return frozenset(chosen)


def stage_choice(cfg: EstimatorConfig, mode: RecomputeMode) -> frozenset[int] | None:
    """:func:`recomputed_layers` where they apply to a stage of recompute ``mode``, else None: under Megatron's
    ``block`` method a stage that is not ``full`` keeps its own mode."""
    chosen = recomputed_layers(cfg)
    if chosen is None or (mode != "full" and cfg.recompute.method == "block"):
        return None
    return chosen


def layer_recompute(cfg: EstimatorConfig, stage: int, index: int) -> RecomputeMode:
    """Recompute mode of layer ``index`` on pipeline stage ``stage``: ``full`` or ``none`` where
    :func:`stage_choice` chooses per layer, else the stage's mode."""
    mode = cfg.stage_recompute(stage)
    chosen = stage_choice(cfg, mode)
    return mode if chosen is None else ("full" if index in chosen else "none")


def recomputed_by_kind(cfg: EstimatorConfig, layout: StageLayout) -> tuple[tuple[LayerKind, int], ...] | None:
    """(kind, layers re-run whole) of the stage where :func:`recomputed_layers` chooses per layer, in the order
    of the stage's kind runs; None otherwise (what per-stage prices add to their keys)."""
    chosen = recomputed_layers(cfg)
    if chosen is None:
        return None
    m = cfg.model
    return tuple((kind, sum(1 for i in layout.layers if i in chosen and layer_kind(m, i) == kind))
                 for kind, _ in layout.kind_runs(m))


def recompute_unit(cfg: EstimatorConfig) -> int:
    """Layers per Megatron ``uniform`` recompute unit (``recompute.num_layers`` with method ``uniform`` or unset
    under full recompute; 1 otherwise, or with ``options.per_layer_recompute`` off)."""
    r = cfg.recompute
    if not r.num_layers or r.method == "block" or not cfg.options.per_layer_recompute:
        return 1
    return r.num_layers


def unit_inputs(cfg: EstimatorConfig) -> frozenset[int]:
    """Layers whose input a ``uniform`` recompute unit saves (``megatron/core/recompute.py``: the layers of one
    ``TransformerBlock``, i.e. one model chunk, in units of ``recompute_num_layers``, ``chunk_runner(layer_idx,
    layer_idx + recompute_num_layers, True)``: one checkpoint per unit): the first of each unit of each chunk,
    and every MTP layer (recomputed on its own). The unit's other layers keep nothing; its backward re-runs
    the unit's forward, so the unit's activations live together then."""
    k, n_main = recompute_unit(cfg), cfg.model.num_layers

    def inputs() -> frozenset[int]:
        heads: set[int] = set(range(n_main, n_main + cfg.model.mtp_layers))
        for layout in stage_layouts(cfg):
            for chunk in layout.chunks:
                heads.update([i for i in chunk if i < n_main][::k])
        return frozenset(heads)

    return derived(cfg, "unit_inputs", inputs)


def kv_dim(m: ModelConfig) -> float:
    """Width of the K and V rows a CP ring passes (per K or V): ``n_kv·d_h``; MLA: ``a·(d_qk+d_rope+d_v)/2``."""
    if m.attention == "mla":
        assert m.qk_head_dim and m.v_head_dim
        return m.num_attention_heads * (m.qk_head_dim + (m.qk_rope_head_dim or 0) + m.v_head_dim) / 2.0
    return float(m.kv_heads * m.head_size)
