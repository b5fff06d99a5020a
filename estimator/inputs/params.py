"""Parameter counts per layer kind (weights only; biases are ignored, < 0.1 % of a layer).

Symbols: h hidden, a heads, g KV heads, d head dim, F dense FFN width, F_e routed-expert width,
F_s total shared-expert width, E routed experts, V (padded) vocab. Matches Megatron's
``theoretical_memory_usage`` (memory-accounting facts §1.2) and the reference's layer counts
(reference §2.2) up to bias terms.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from estimator.inputs import gdn, hybrid
from estimator.inputs.derive import LayerKind, layer_kind, mtp_is_moe
from estimator.shared.memo import derived

if TYPE_CHECKING:
    from estimator.config.schema import ModelConfig

#: weight matrices of an MLP: SwiGLU and GPT-OSS's quick-GeGLU have gate, up and down; GeLU /
#: squared-ReLU have up and down
MLP_MATRICES = {"swiglu": 3, "quick_geglu": 3, "geglu": 3, "gelu": 2, "squared_relu": 2}
#: parameters per norm per hidden unit: RMSNorm has a scale, LayerNorm a scale and a bias
NORM_PARAMS_PER_UNIT = {"rmsnorm": 1, "layernorm": 2}
#: norms in a transformer layer: before attention and before the MLP
NORMS_PER_LAYER = 2


def gated_mlp(activation: str) -> bool:
    """A GLU MLP (gate and up projections, 2F wide fc1 output): SwiGLU and quick-GeGLU."""
    return MLP_MATRICES[activation] == 3


def attention_params(model: ModelConfig) -> int:
    """Attention weights of one layer.

    MHA/GQA: Q h·a·d + K,V 2·h·g·d + O a·d·h (+ a sink logits with ``attention_sinks``, GPT-OSS
    ``self_attn.sinks`` of shape [a]; + the gate h·a·d of ``attention_output_gate``,
    :func:`estimator.inputs.gdn.output_gate_params`). MLA (DeepSeek-V2/V3): q path h·q_lora + q_lora (norm)
    + q_lora·a·(d_qk + d_rope) (or h·a·(d_qk + d_rope) without q compression); kv path
    h·(kv_lora + d_rope) + kv_lora (norm) + kv_lora·a·(d_qk + d_v); O a·d_v·h.
    """
    h, a = model.hidden_size, model.num_attention_heads
    sinks = a if model.attention_sinks else 0
    if model.attention != "mla":
        d, g = model.head_size, model.kv_heads
        gate = gdn.output_gate_params(h, a, d) if model.attention_output_gate else 0
        return h * a * d + 2 * h * g * d + a * d * h + sinks + gate
    assert model.kv_lora_rank and model.qk_head_dim and model.v_head_dim is not None
    d_qk, d_rope, d_v = model.qk_head_dim, model.qk_rope_head_dim or 0, model.v_head_dim
    q_lora, kv_lora = model.q_lora_rank, model.kv_lora_rank
    q = h * q_lora + q_lora + q_lora * a * (d_qk + d_rope) if q_lora else h * a * (d_qk + d_rope)
    kv = h * (kv_lora + d_rope) + kv_lora + kv_lora * a * (d_qk + d_v)
    return q + kv + a * d_v * h + sinks


def mla_replicated_params(model: ModelConfig) -> int:
    """MLA weights every TP rank holds whole: the down-projections and their norms.

    Megatron-Core ``MLASelfAttention`` builds ``linear_q_down_proj`` (h·q_lora) and
    ``linear_kv_down_proj`` (h·(kv_lora + d_rope)) as ``TELinear`` with ``parallel_mode=
    'duplicated'`` (megatron/core/transformer/multi_latent_attention.py), and the q/kv norms
    (q_lora, kv_lora) are replicated like every norm. Only the up-projections and the output
    projection are TP-sharded. 0 for MHA/GQA.
    """
    if model.attention != "mla":
        return 0
    h, q_lora, kv_lora = model.hidden_size, model.q_lora_rank or 0, model.kv_lora_rank or 0
    q = h * q_lora + q_lora if q_lora else 0  # without q compression linear_q_proj is column-parallel
    return q + h * (kv_lora + (model.qk_rope_head_dim or 0)) + kv_lora


def mlp_params(hidden: int, ffn: int, activation: str) -> int:
    """One MLP: n_mat·h·F with n_mat = 3 for SwiGLU, 2 otherwise."""
    return MLP_MATRICES[activation] * hidden * ffn


def norm_params(model: ModelConfig) -> int:
    """The layer's two norms: 2·h (RMSNorm) or 2·2h (LayerNorm), twice that with ``post_norms`` (Gemma's sandwich
    norms), plus the q and k norms of ``qk_norm`` (one d-wide RMSNorm each, shared by the heads: Qwen3
    ``q_norm``/``k_norm``)."""
    qk = 2 * NORM_PARAMS_PER_UNIT["rmsnorm"] * model.head_size if model.qk_norm else 0
    norms = NORMS_PER_LAYER * (2 if model.post_norms else 1)  # (sandwich norms: one more after each block)
    return norms * NORM_PARAMS_PER_UNIT[model.norm] * model.hidden_size + qk


def router_params(model: ModelConfig) -> int:
    """MoE router h·E, + the shared experts' sigmoid gate h with ``shared_expert_gate`` (Megatron-Core
    ``SharedExpertMLP.gate_weight`` of shape [1, h], whole on every TP rank like the router; Qwen2-MoE / Qwen3-Next
    ``shared_expert_gate``)."""
    gate = model.hidden_size if model.shared_expert_gate and model.shared_ffn_total else 0
    return model.hidden_size * model.num_experts + gate


@dataclass(frozen=True)
class LayerParams:
    """Parameters of one layer split as the reference does: (non-expert, routed, shared).

    ``non_expert`` = attention + norms + router + dense MLP; ``norm`` is the replicated part of
    ``non_expert`` made of norms and the router (not TP-sharded in Megatron); ``mla_replicated``
    the MLA down-projections Megatron duplicates on every TP rank (``mla_replicated_params``);
    ``routed`` counts all E experts (divide by ep for one rank); ``duplicated`` the latent-MoE projections
    (:func:`latent_projection_params`), also whole on every TP rank.
    """

    non_expert: int
    routed: int
    shared: int
    norm: int
    mla_replicated: int = 0
    duplicated: int = 0

    @property
    def replicated(self) -> int:
        """Non-expert parameters every TP rank holds whole: norms, router, MLA down-projections, latent projections."""
        return self.norm + self.mla_replicated + self.duplicated

    def held_non_expert(self, tp: int) -> float:
        """Non-expert parameters one TP rank holds: ``(non_expert − replicated)/tp + replicated``.

        Megatron-Core splits every linear over TP but keeps norms, the router and the MLA
        down-projections whole on each rank (facts §1.2); the one place for that rule.
        """
        return (self.non_expert - self.replicated) / tp + self.replicated

    def held_linear(self, tp: int) -> float:
        """Non-expert linear weights one TP rank holds: :meth:`held_non_expert` less the norms and the router
        (``norm``), i.e. ``(non_expert − replicated)/tp + mla_replicated + duplicated``: the weights a recipe
        quantizes and Muon orthogonalises."""
        return (self.non_expert - self.replicated) / tp + self.mla_replicated + self.duplicated

    def held_experts(self, tp: int, ep: int, etp: int) -> tuple[float, float]:
        """(routed, shared) expert parameters one rank holds: ``routed/(ep·etp)`` (its ``E/ep`` experts, each
        split over the expert-TP group) and ``shared/tp``."""
        return self.routed / (ep * etp), self.shared / tp

    @property
    def total(self) -> int:
        return self.non_expert + self.routed + self.shared


def _moe_block(model: ModelConfig) -> tuple[int, int, int]:
    """(router, routed, shared) parameters of a MoE MLP block; routed experts map the latent width L
    to F_e and back with ``moe_latent_size`` (Megatron-Core ``experts.py``: expert input size
    ``moe_latent_size`` when set), else h."""
    width = model.moe_latent_size or model.hidden_size
    routed = model.num_experts * mlp_params(width, model.expert_ffn, model.activation)
    shared = mlp_params(model.hidden_size, model.shared_ffn_total, model.activation)
    return router_params(model), routed, shared


def latent_projection_params(model: ModelConfig) -> int:
    """Latent MoE projections of one MoE block: h·L down (``fc1_latent_proj``) + L·h up (``fc2_latent_proj``),
    0 without ``moe_latent_size``. NVIDIA/Megatron-LM@d98e8a64dd megatron/core/transformer/moe/moe_layer.py:
    both are ``TELinear(parallel_mode="duplicated")``, whole on every TP rank; the router and the shared
    experts see the full h-wide tokens, the dispatcher and the routed experts the L-wide ones."""
    return 2 * model.hidden_size * model.moe_latent_size if model.moe_latent_size else 0


def layer_params(model: ModelConfig, index: int) -> LayerParams:
    """Parameters of layer ``index`` (dense, MoE, or MTP = projection 2h·h + 2 norms + a layer); they
    depend on the layer's kind only, so they are counted once per (frozen) model instance and kind
    (:func:`estimator.shared.memo.derived`)."""
    kind = layer_kind(model, index)
    return derived(model, ("layer_params", kind), lambda: _kind_params(model, kind))


def _kind_params(model: ModelConfig, kind: LayerKind) -> LayerParams:
    if kind in hybrid.HYBRID_KINDS:
        return hybrid_layer_params(model, kind)
    attn, norms, mla = attention_params(model), norm_params(model), mla_replicated_params(model)
    if kind in ("gdn_dense", "gdn_moe"):  # the GDN mixer in place of attention (no q/k norms, no MLA)
        attn, norms, mla = gdn.gdn_sharded_params(model.hidden_size, gdn.gdn_dims(model)), gdn_norm_params(model), 0
    moe = kind in ("moe", "gdn_moe") or (kind == "mtp" and mtp_is_moe(model))
    if moe:
        router, routed, shared = _moe_block(model)
        latent = latent_projection_params(model)
        body = LayerParams(attn + norms + router + latent, routed, shared, norms + router, mla, latent)
    else:
        dense = mlp_params(model.hidden_size, model.dense_ffn, model.activation)
        body = LayerParams(attn + norms + dense, 0, 0, norms, mla)
    if kind != "mtp":
        return body
    extra = mtp_extra_params(model)
    mtp_norms = 2 * model.hidden_size  # the projection 2h·h is TP-sharded, its two norms are not
    return LayerParams(body.non_expert + extra, body.routed, body.shared, body.norm + mtp_norms, mla, body.duplicated)


def gdn_mixer_params(model: ModelConfig) -> int:
    """Weights of one GDN mixer: :func:`estimator.inputs.gdn.gdn_sharded_params` + its gated norm's d_v."""
    d = gdn.gdn_dims(model)
    return gdn.gdn_sharded_params(model.hidden_size, d) + gdn.gdn_replicated_params(d)


def gdn_norm_params(model: ModelConfig) -> int:
    """Replicated norms of a GDN transformer layer: the layer's two norms (no q/k norms: GDN L2-normalises q and
    k without weights) + the mixer's gated-norm weight d_v."""
    return NORMS_PER_LAYER * NORM_PARAMS_PER_UNIT[model.norm] * model.hidden_size + model.gdn_value_head_dim


def hybrid_layer_params(model: ModelConfig, kind: LayerKind) -> LayerParams:
    """A hybrid pattern's one-block layer (:mod:`estimator.inputs.hybrid`): its pre-norm (h, or 2h for
    LayerNorm; replicated) and one block: the Mamba-2 mixer (:func:`hybrid.mamba_mixer_params`, TP-sharded), the
    GDN mixer (:func:`gdn_mixer_params`; its gated-norm weight replicated),
    attention (+ the q/k norms of ``qk_norm``), a dense MLP, or a MoE block (router, routed and shared
    experts, latent projections)."""
    norm = NORM_PARAMS_PER_UNIT[model.norm] * model.hidden_size
    if kind == "mamba":
        return LayerParams(norm + hybrid.mamba_mixer_params(model.hidden_size, hybrid.mamba_dims(model)), 0, 0, norm)
    if kind == "gdn":
        d_v = model.gdn_value_head_dim
        return LayerParams(norm + gdn_mixer_params(model), 0, 0, norm + d_v)
    if kind == "attention":
        qk = norm_params(model) - NORMS_PER_LAYER * norm
        return LayerParams(norm + qk + attention_params(model), 0, 0, norm + qk, mla_replicated_params(model))
    if kind == "mlp":
        return LayerParams(norm + mlp_params(model.hidden_size, model.dense_ffn, model.activation), 0, 0, norm)
    router, routed, shared = _moe_block(model)
    latent = latent_projection_params(model)
    return LayerParams(norm + router + latent, routed, shared, norm + router, 0, latent)


def mtp_extra_params(model: ModelConfig) -> int:
    """MTP module beyond its transformer layer: projection 2h·h and two RMSNorms of h (DeepSeek-V3)."""
    h = model.hidden_size
    return 2 * h * h + 2 * h


def weight_copies(model: ModelConfig, index: int, n: int) -> int:
    """How many sets of weights ``n`` layers of ``index``'s kind hold: ``n``, but 1 for the MTP layers of
    ``mtp_repeated_layer`` (Megatron-Core ``mtp_use_repeated_layer``: every MTP depth runs the same layer, so
    its weights, gradients and optimizer state exist once while its compute and activations repeat)."""
    return 1 if n and model.mtp_repeated_layer and layer_kind(model, index) == "mtp" else n


def embedding_params(model: ModelConfig) -> int:
    """Word embedding V·h, plus learned position embeddings s_max·h are added by the caller."""
    return model.vocab * model.hidden_size


def head_params(model: ModelConfig) -> int:
    """Output head V·h (0 when tied to the embedding) plus the final norm."""
    final_norm = NORM_PARAMS_PER_UNIT[model.norm] * model.hidden_size
    return (0 if model.tied_embeddings else model.vocab * model.hidden_size) + final_norm


def position_embedding_params(model: ModelConfig, seq_length: int) -> int:
    """Learned absolute position embeddings s·h (Megatron GPT default); 0 with RoPE."""
    return seq_length * model.hidden_size if model.position_embedding == "learned" else 0


def total_params(model: ModelConfig, seq_length: int = 0) -> int:
    """All parameters: layers + MTP + embedding (+ positions) + head."""
    mtp = weight_copies(model, model.num_layers, model.mtp_layers)
    layers = sum(layer_params(model, i).total for i in range(model.num_layers + mtp))
    return layers + embedding_params(model) + position_embedding_params(model, seq_length) + head_params(model)


def activated_params(model: ModelConfig) -> int:
    """Parameters used per token: routed experts count top-k of E (no MTP, no embedding)."""
    total = 0
    for i in range(model.num_layers):
        lp = layer_params(model, i)
        routed = lp.routed * model.moe_topk // model.num_experts if lp.routed else 0
        total += lp.non_expert + lp.shared + routed
    return total


@dataclass(frozen=True)
class ParamCounts:
    """The model's size as ``ndval estimate`` and the importers state it (weights, no biases).

    ``total``: every parameter the model defines: layers, MTP modules, the word embedding and the
    output layer (counted once when tied) and the final norm (:func:`total_params`, no learned
    positions). ``active``: the parameters one token of the main model touches: the layers with
    top-k of the routed experts (:func:`activated_params`), the embedding and the output layer
    as the model defines them (tied: once), the final norm; MTP modules excluded (DeepSeek-V3
    publishes 671B total / 37B activated for the main model, MTP apart). ``main``: ``total``
    without the MTP modules.
    """

    total: int
    active: int
    main: int

    def to_dict(self) -> dict[str, int]:
        return {"params_total": self.total, "params_active": self.active, "params_main": self.main}


def param_counts(model: ModelConfig) -> ParamCounts:
    """:class:`ParamCounts` of ``model``."""
    outer = embedding_params(model) + head_params(model)
    total = total_params(model)
    held = weight_copies(model, model.num_layers, model.mtp_layers)
    mtp = sum(layer_params(model, i).total for i in range(model.num_layers, model.num_layers + held))
    return ParamCounts(total=total, active=activated_params(model) + outer, main=total - mtp)
