"""Device kernels one rank launches per layer and micro-batch, per pass (forward, backward, recompute).

The host (CPU) issues every kernel of an eager PyTorch run one by one; the device runs them
asynchronously. When kernels are short (small micro-batches, small hidden sizes, large TP) the host
is the slower side and the pass takes at least ``kernels × per-launch host cost``
(:mod:`estimator.perf.parts` uses that bound; the per-launch cost is profile data with its source in
:mod:`estimator.inputs.profiles`).

Counting (Megatron-LM ``ParallelTransformerLayer`` / ``TransformerLayer`` in eager mode, one rank;
every rank of a TP/CP/EP group launches the same kernels, so the count does not shrink with
parallelism — only ``E/ep`` local experts do). Each op has a forward and a backward kernel count:

* ``GEMM`` (linear, ``baddbmm``/``bmm``): 1 forward; 2 backward (input gradient + weight gradient,
  the same split that makes backward FLOPs 2× forward).
* ``NORM`` (fused LayerNorm/RMSNorm): 1 forward; 2 backward (input gradient; gamma/beta gradient).
* ``POINTWISE`` (fused bias-activation, bias-dropout-add, softmax, dropout, RoPE, permute copy,
  routing top-k): 1 forward; 1 backward.
* ``COLLECTIVE`` (NCCL all-reduce / all-gather / reduce-scatter / all-to-all / p2p): 1 forward;
  1 backward (the conjugate collective).
* ``FLASH`` (FlashAttention-2 fused core attention): 1 forward; 2 backward (the ``dO·O`` row-sum
  pre-processing kernel and the main backward kernel).
* ``CROSS_ENTROPY`` (Megatron vocab-parallel cross entropy: max, subtract, exp, sum, target gather,
  log-loss): 6 forward; 2 backward (softmax minus one-hot, scale).
* PyTorch eager blocks (``train.eager_ops``, :mod:`estimator.perf.eager`): ``EAGER_RMSNORM`` for each RMSNorm
  (``train.eager_rmsnorm``; 8 forward, 16 backward), ``EAGER_ROPE`` for RoPE on q and on k (3, 3) and
  ``EAGER_SWIGLU`` for the dense MLP's ``silu · mul`` (2, 3), in place of their one fused kernel each.

Per layer (forward ops):

* attention block: input norm; QKV GEMM (MHA/GQA: one fused GEMM, + q and k norms with ``qk_norm``;
  MLA: q down + q norm + q up, or
  one q GEMM without q compression, and kv down + kv norm + kv up); RoPE on q and k (2 pointwise,
  when ``position_embedding: rope`` or MLA); core attention (flash: 1 FLASH; unfused: ``baddbmm``
  QKᵀ + fused scale-mask-softmax + dropout + ``bmm`` PV + the permute copy = 2 GEMM + 3 pointwise);
  output GEMM; bias-dropout-add residual.
* dense MLP block: norm, fc1 GEMM (SwiGLU: gate and up fused), activation, fc2 GEMM, residual.
* MoE block: norm, router GEMM, softmax + top-k (2 pointwise), token permute and unpermute (2),
  per LOCAL expert (``E/ep``, Megatron's ``SequentialMLP``) fc1 + activation + fc2, shared experts
  (one fused MLP: 2 GEMM + 1 pointwise), residual; EP > 1 adds dispatch and combine all-to-alls.
* a hybrid layer (``model.hybrid_override_pattern``, :mod:`estimator.inputs.hybrid`): its one block with
  its norm and residual; a Mamba-2 mixer: in_proj and out_proj GEMMs, the two layout copies and
  A = −exp(A_log) (3 pointwise, the copies counted at micro-batch 1 too), the gated norm, the causal conv
  (``CAUSAL_CONV``) and the SSD scan (``SSD_SCAN``: :data:`estimator.perf.mamba.SSD_KERNELS`); a Gated
  DeltaNet mixer (a hybrid ``G`` layer, or a transformer layer's under ``linear_attention_freq``): in_proj and
  out_proj GEMMs, FLA's causal conv (``GDN_CONV``), the q/k L2 norm, the gates and the copy back (3
  pointwise), the gated norm and the delta rule (``GDN_RULE``: :data:`estimator.perf.gdn.RULE_KERNELS`); no CP
  collectives outside attention layers. Gated attention adds its sigmoid gate (``OUTPUT_GATE``).
* TP collectives per TP-sharded block: 1 all-reduce, or all-gather + reduce-scatter with sequence
  parallelism (the same blocks :func:`estimator.perf.comm.tp_layer_collectives` prices).
* CP ring (``cp > 1``): core attention runs once per KV block (``cp`` times), with ``2·(cp−1)`` p2p
  send/recv kernels and ``cp−1`` output-merge pointwise kernels. CP all-to-all (Ulysses,
  ``cp_comm a2a``): core attention runs once, with 4 all-to-alls (Q, K, V in, output back). CP all-gather
  (``allgather``): core attention runs twice (two query chunks), after 2 all-gathers and 2 re-order copies.

Stage extras per micro-batch: embedding (lookup, + learned position lookup and add, + dropout) on
the first stage; final norm, logits GEMM and cross entropy on the last (TP > 1: 3 all-reduces in
the vocab-parallel cross entropy). Recompute: ``full`` re-runs the layer's forward kernels;
``selective`` re-runs the forward kernels of the listed modules (``core_attn`` default). FSDP2's copies on
the compute stream, per sharded group (each block, and the root group) and micro-batch: one forward copy-out,
in backward one copy-out when resharded plus one copy-in, never recomputed
(:func:`estimator.perf.operators.fsdp2_copy_kernels`). Per-step work (optimizer, DP collectives) and Python
work between kernels are not counted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from estimator.perf import gdn
from estimator.perf.comm import cp_attention_steps
from estimator.perf.eager import RMSNORM_KERNELS, ROPE_KERNELS, SWIGLU_KERNELS
from estimator.perf.mamba import CONV_KERNELS, SSD_KERNELS, mamba_kernel_ops
from estimator.perf.mixer_cp import MIXER_CP_CALLS
from estimator.perf.operators import OUTPUT_GATE_KERNELS
from estimator.perf.sac import OP_SAC, RECOMPUTED_MMS
from estimator.shared.arrays import ARRAY, per_unique
from ndval.core import cache

if TYPE_CHECKING:
    from estimator.config.schema import ModelConfig

#: (forward kernels, backward kernels) per op kind — see the module docstring for the reasoning
OP_KERNELS: dict[str, tuple[int, int]] = {
    "GEMM": (1, 2),
    "NORM": (1, 2),
    "POINTWISE": (1, 1),
    "COLLECTIVE": (1, 1),
    "FLASH": (1, 2),
    "CROSS_ENTROPY": (6, 2),
    "SSD_SCAN": SSD_KERNELS,  # the Mamba-2 chunked scan (estimator.perf.mamba)
    "CAUSAL_CONV": CONV_KERNELS,  # its causal conv
    "GDN_RULE": gdn.RULE_KERNELS,  # the Gated DeltaNet chunked delta rule (estimator.perf.gdn)
    "GDN_CONV": gdn.CONV_KERNELS,  # its causal conv (flash-linear-attention's)
    "OUTPUT_GATE": OUTPUT_GATE_KERNELS,  # gated attention's sigmoid gate (estimator.perf.operators.output_gate_op)
    "EAGER_RMSNORM": RMSNORM_KERNELS,  # PyTorch eager blocks (train.eager_ops, estimator.perf.eager): RMSNorm's ATen ops
    "EAGER_ROPE": ROPE_KERNELS,  # complex RoPE on q or k
    "EAGER_SWIGLU": SWIGLU_KERNELS,  # silu and the multiply
}


@dataclass(frozen=True)
class PassKernels:
    """Kernels one rank launches for one micro-batch, per pass."""

    forward: float
    backward: float
    recompute: float

    def __add__(self, other: PassKernels) -> PassKernels:
        return PassKernels(self.forward + other.forward, self.backward + other.backward,
                           self.recompute + other.recompute)

    def scaled(self, n: float) -> PassKernels:
        return PassKernels(self.forward * n, self.backward * n, self.recompute * n)


@dataclass(frozen=True)
class LayerShape:
    """What the kernel count of one layer depends on (from the config and the parallel layout)."""

    attention: str  # mha | gqa | mla
    q_compressed: bool  # MLA with q_lora_rank
    rope: bool
    flash_attention: bool
    moe: bool
    local_experts: int  # E/ep on this rank (MoE layers)
    shared_experts: bool
    layer_ep: int
    tp: int
    sequence_parallel: bool
    tp_blocks: int  # TP-sharded blocks (2; 1 for a MoE layer whose experts are not TP-sharded)
    cp: int
    cp_comm: str = "p2p"  # Megatron cp_comm_type: p2p (ring), a2a (Ulysses), allgather
    qk_norm: bool = False  # per-head q and k RMSNorm (Qwen3, --qk-layernorm): two norm kernels
    post_norms: bool = False  # Gemma's sandwich norms: a norm after each block
    mixer: str = "attention"  # the layer's mixer (estimator.inputs.hybrid): attention, mamba, gdn or none
    output_gate: bool = False  # gated attention (attention_output_gate): the sigmoid gate's kernels
    mlp_block: bool = True  # the layer has an MLP block (dense or MoE)
    eager: tuple[bool, bool] = (False, False)  # (pointwise ops, RMSNorm) as PyTorch eager kernels (estimator.perf.eager)


def forward_kernels(ops: Counter[str]) -> float:
    """Forward kernels of a bag of ops: ``Σ n_op · fw_op`` (:data:`OP_KERNELS`)."""
    return float(sum(n * OP_KERNELS[op][0] for op, n in ops.items()))


def backward_kernels(ops: Counter[str]) -> float:
    """Backward kernels of a bag of ops: ``Σ n_op · bw_op`` (:data:`OP_KERNELS`)."""
    return float(sum(n * OP_KERNELS[op][1] for op, n in ops.items()))


def layer_modules(shape: LayerShape) -> dict[str, Counter[str]]:
    """Forward ops of one layer on one rank, by Megatron recompute-module name.

    Keys: ``layernorm`` (both norms), ``attn_proj`` (QKV/MLA projections + RoPE + output GEMM),
    ``mla_up_proj`` (the MLA up-projections, a subset counted inside ``attn_proj`` too),
    ``core_attn``, ``mlp`` / ``moe`` (the MLP block of a dense / MoE layer), ``shared_experts``
    (inside ``moe``), ``moe_act`` (the local experts' activations, inside ``moe``), ``residual``,
    ``tp_comm``, ``cp_comm``. ``mla_up_proj``, ``shared_experts`` and ``moe_act`` are views for
    selective recompute and are not added again by :func:`layer_pass_kernels`.
    """
    m: dict[str, Counter[str]] = {}
    blocks = (shape.mixer != "none") + shape.mlp_block
    m["layernorm"] = Counter({_norm(shape): blocks})
    if shape.post_norms:  # Gemma's sandwich norms, one after each block (no recompute module re-runs them)
        m["post_norm"] = Counter({"NORM": blocks})
    if shape.mixer == "mamba":
        m["mamba"] = mamba_kernel_ops()
    if shape.mixer == "gdn":
        m["gdn"] = gdn.gdn_kernel_ops()
        m["gdn_norm_out"] = gdn.gdn_norm_out_kernel_ops(shape.cp)  # a view inside "gdn" (and cp_comm)
    if shape.mixer == "attention":
        _attention_modules(shape, m)
    if shape.mlp_block:
        _mlp_modules(shape, m)
    m["residual"] = Counter({"POINTWISE": blocks})
    if shape.tp > 1:
        per_block = 2 if shape.sequence_parallel else 1
        m["tp_comm"] = Counter({"COLLECTIVE": per_block * shape.tp_blocks})
    if shape.cp > 1 and shape.cp_comm == "a2a" and shape.mixer == "attention":
        m["cp_comm"] = Counter({"COLLECTIVE": 4})
    elif shape.cp > 1 and shape.cp_comm == "allgather" and shape.mixer == "attention":
        m["cp_comm"] = Counter({"COLLECTIVE": 2, "POINTWISE": 2})  # K, V gathered, then re-ordered by chunk
    elif shape.cp > 1 and shape.mixer == "attention":
        m["cp_comm"] = Counter({"COLLECTIVE": 2 * (shape.cp - 1), "POINTWISE": shape.cp - 1})
    elif shape.cp > 1 and shape.mixer in MIXER_CP_CALLS:  # the mixers' all-to-alls and re-layouts (mixer_cp)
        (a2a_in, a2a_out), (copies_in, copies_out) = MIXER_CP_CALLS[shape.mixer]
        m["cp_comm"] = Counter({"COLLECTIVE": a2a_in + a2a_out, "POINTWISE": copies_in + copies_out})
    return m


def _attention_modules(shape: LayerShape, m: dict[str, Counter[str]]) -> None:
    """The attention block's modules of :func:`layer_modules` (``attn_proj``, ``mla_up_proj``, ``core_attn``)."""
    proj: Counter[str] = Counter()
    if shape.attention == "mla":
        proj["GEMM"] += 2 if shape.q_compressed else 1  # q down + q up, or one q GEMM
        proj["NORM"] += 1 if shape.q_compressed else 0  # q_a_layernorm
        proj["GEMM"] += 2  # kv down (+ rope key) and kv up
        proj["NORM"] += 1  # kv_a_layernorm
        m["mla_up_proj"] = Counter({"GEMM": 2 if shape.q_compressed else 1})
    else:
        proj["GEMM"] += 1  # fused QKV
        proj[_norm(shape)] += 2 if shape.qk_norm else 0  # q_norm, k_norm (Qwen3 / Megatron --qk-layernorm)
    if shape.rope or shape.attention == "mla":
        proj["EAGER_ROPE" if shape.eager[0] else "POINTWISE"] += 2  # RoPE on q and k
    proj["OUTPUT_GATE"] += 1 if shape.output_gate and shape.attention != "mla" else 0
    proj["GEMM"] += 1  # output projection
    m["attn_proj"] = proj
    blocks = cp_attention_steps(shape.cp, shape.cp_comm)
    core = Counter({"FLASH": 1}) if shape.flash_attention else Counter({"GEMM": 2, "POINTWISE": 3})
    m["core_attn"] = Counter({k: v * blocks for k, v in core.items()})


def _mlp_modules(shape: LayerShape, m: dict[str, Counter[str]]) -> None:
    """The MLP block's modules of :func:`layer_modules` (``mlp``, or ``moe`` with its views)."""
    if shape.moe:
        per_expert = Counter({"GEMM": 2, "POINTWISE": 1})
        moe = Counter({"GEMM": 1, "POINTWISE": 4})  # router; softmax, top-k, permute, unpermute
        moe.update({k: v * shape.local_experts for k, v in per_expert.items()})
        if shape.shared_experts:
            moe.update(per_expert)
            m["shared_experts"] = Counter(per_expert)
        if shape.layer_ep > 1:
            moe["COLLECTIVE"] += 2  # dispatch + combine all-to-all
        m["moe"] = moe
        m["moe_act"] = Counter({"POINTWISE": shape.local_experts})
    else:
        m["mlp"] = Counter({"GEMM": 2, "EAGER_SWIGLU" if shape.eager[0] else "POINTWISE": 1})


def _norm(shape: LayerShape) -> str:
    """The op kind of the layer's norms: ``NORM`` (fused), ``EAGER_RMSNORM`` in PyTorch eager blocks."""
    return "EAGER_RMSNORM" if shape.eager[1] else "NORM"


#: modules whose ops are already inside another module (views for selective recompute)
_VIEW_MODULES = ("mla_up_proj", "shared_experts", "moe_act", "gdn_norm_out")


@cache.memoize("estimator.layer_pass_kernels", bound=4096, key="(layer shape, recompute mode, modules)",
               holds="kernels per pass")  # one layer shape recurs across a sweep's layouts
def layer_pass_kernels(shape: LayerShape, recompute: str, modules: frozenset[str] = frozenset()) -> PassKernels:
    """Kernels of one layer for one micro-batch: forward, backward and recompute passes.

    Forward = Σ forward kernels of the layer's ops; backward = Σ backward kernels
    (:data:`OP_KERNELS`); recompute: ``full`` = forward, ``selective`` = forward kernels of
    ``modules`` (default ``{core_attn}``), ``none`` = 0.
    """
    mods = layer_modules(shape)
    ops: Counter[str] = Counter()
    for name, c in mods.items():
        if name not in _VIEW_MODULES:
            ops.update(c)
    fw = forward_kernels(ops)
    if recompute == "full":
        rec = fw
    elif recompute == "selective" and OP_SAC in modules:  # torchtitan's op-level policy (estimator.perf.sac)
        rec = _op_sac_kernels(ops)
    elif recompute == "selective":
        chosen = set(modules or {"core_attn"})
        if "moe" in chosen:  # the MoE block already holds its shared experts and activations
            chosen -= {"shared_experts", "moe_act"}
        rec = sum(forward_kernels(mods[name]) for name in chosen if name in mods)
    elif recompute == "none":
        rec = 0.0
    else:
        raise ValueError(f"recompute mode {recompute!r}: expected none, selective or full")
    return PassKernels(fw, backward_kernels(ops), float(rec))


def _op_sac_kernels(ops: Counter[str]) -> float:
    """Recompute kernels under torchtitan's op-level policy: the forward's non-matmul kernels (not the
    saved flash attention, not the collectives) and the re-run mms (:data:`RECOMPUTED_MMS`)."""
    again = Counter({k: n for k, n in ops.items() if k not in ("GEMM", "FLASH", "COLLECTIVE")})
    again["GEMM"] = RECOMPUTED_MMS
    return forward_kernels(again)


@cache.memoize("estimator.embedding_pass_kernels", bound=4, key="learned position", holds="kernels per pass")
def embedding_pass_kernels(learned_position: bool) -> PassKernels:
    """First stage, per micro-batch: word lookup (+ position lookup and add) + dropout (pointwise)."""
    ops = Counter({"POINTWISE": 2 + (2 if learned_position else 0)})
    return PassKernels(forward_kernels(ops), backward_kernels(ops), 0.0)


def head_pass_kernels(tp: int, eager_norm: bool = False) -> PassKernels:
    """Last stage, per micro-batch: final norm (``eager_norm``: its eager ATen ops), logits GEMM, vocab-parallel
    cross entropy (+ 3 all-reduces when ``tp > 1``; an array of layouts: per distinct tp)."""
    if type(tp) is ARRAY:
        return PassKernels(*per_unique(lambda t: _as_tuple(head_pass_kernels(t, eager_norm)), tp))
    return _head_pass_kernels(bool(tp > 1), eager_norm)


@cache.memoize("estimator.head_pass_kernels", bound=4, key="(tp collectives, eager norm)", holds="kernels per pass")
def _head_pass_kernels(tp_collectives: bool, eager_norm: bool = False) -> PassKernels:
    ops = Counter({"EAGER_RMSNORM" if eager_norm else "NORM": 1, "GEMM": 1, "CROSS_ENTROPY": 1})
    if tp_collectives:
        ops["COLLECTIVE"] += 3
    return PassKernels(forward_kernels(ops), backward_kernels(ops), 0.0)


def _as_tuple(k: PassKernels) -> tuple[float, float, float]:
    return k.forward, k.backward, k.recompute


def mtp_extra_pass_kernels(tp: int) -> PassKernels:
    """DeepSeek MTP module beyond its transformer layer: 2 norms, concat, projection GEMM and a
    second head (:func:`head_pass_kernels`)."""
    ops = Counter({"NORM": 2, "POINTWISE": 1, "GEMM": 1})
    return PassKernels(forward_kernels(ops), backward_kernels(ops), 0.0) + head_pass_kernels(tp)


def layer_shape(model: ModelConfig, *, moe: bool, layer_ep: int, tp: int, sequence_parallel: bool,
                tp_blocks: int, cp: int, flash_attention: bool, cp_comm: str = "p2p",
                blocks: tuple[str | None, str | None] = ("attention", "dense"),
                eager: tuple[bool, bool] = (False, False)) -> LayerShape:
    """The :class:`LayerShape` of a layer of ``model`` under the given layout; ``blocks``: its (mixer, MLP
    block) (:func:`estimator.inputs.derive.layer_blocks`; a transformer layer has both)."""
    return LayerShape(
        attention=model.attention,
        q_compressed=bool(model.q_lora_rank),
        rope=model.position_embedding == "rope",
        flash_attention=flash_attention,
        moe=moe,
        local_experts=max(1, model.num_experts // max(1, layer_ep)) if moe else 0,
        shared_experts=moe and model.shared_ffn_total > 0,
        layer_ep=layer_ep,
        tp=tp,
        sequence_parallel=sequence_parallel,
        tp_blocks=tp_blocks,
        cp=cp,
        cp_comm=cp_comm,
        qk_norm=model.qk_norm,
        post_norms=model.post_norms,
        mixer=blocks[0] or "none",
        output_gate=model.attention_output_gate,
        mlp_block=blocks[1] is not None,
        eager=eager,
    )
