"""Hugging Face families with Mamba-2 mixers: Nemotron-H / Nemotron-3 (``nemotron_h``: Mamba-2, attention, MLP
and MoE layers by ``hybrid_override_pattern``) and pure Mamba-2 stacks (``mamba2``, transformers ``Mamba2Config``:
every layer one Mamba-2 mixer). Both read the mixer's dimensions with :func:`mamba_dims`.
"""

from __future__ import annotations

from estimator.importers.common import as_bool, as_int, bad
from estimator.importers.hf_reader import Reader, common, dense_ffn, squared_relu, tied_embeddings

#: the estimator's Mamba-2 fields and, per family, the key and the family's default (None: required)
_NEMOTRON_H_KEYS = (("mamba_num_heads", "mamba_num_heads", None), ("mamba_head_dim", "mamba_head_dim", None),
                    ("mamba_state_dim", "ssm_state_size", None), ("mamba_num_groups", "n_groups", None),
                    ("mamba_conv_kernel", "conv_kernel", 4), ("mamba_chunk_size", "chunk_size", 128))
#: transformers ``Mamba2Config``'s keys and defaults (num_heads 128, head_dim 64, state_size 128, n_groups 8,
#: conv_kernel 4, chunk_size 256)
_MAMBA2_KEYS = (("mamba_num_heads", "num_heads", 128), ("mamba_head_dim", "head_dim", 64),
                ("mamba_state_dim", "state_size", 128), ("mamba_num_groups", "n_groups", 8),
                ("mamba_conv_kernel", "conv_kernel", 4), ("mamba_chunk_size", "chunk_size", 256))


def mamba_dims(r: Reader, keys: tuple[tuple[str, str, int | None], ...]) -> tuple[int, int]:
    """Read the Mamba-2 mixer's heads, head dim, state, groups, conv kernel and chunk (``keys``: field, key,
    default); return (heads, head dim). The inner width is heads × head dim, as Megatron-Core takes it."""
    values = {field: r.put(field, key, default=default) for field, key, default in keys}
    return values["mamba_num_heads"], values["mamba_head_dim"]


def nemotron_h(r: Reader) -> None:
    """NemotronHConfig: one symbol per layer (M Mamba-2, * attention, - MLP, E MoE), squared-ReLU MLPs
    (``mlp_hidden_act`` relu2), no position embedding, latent MoE and MTP layers of pattern ``*E``."""
    common(r, tied_default=False, activation=False)
    squared_relu(r, "mlp_hidden_act", "Nemotron-H")
    r.get("hidden_act")  # NemotronHConfig's MLPs read mlp_hidden_act; hidden_act drives no modelled size
    r.out.put("model.position_embedding", "none", "model_type nemotron_h: no position embedding")
    pattern = r.get("hybrid_override_pattern")
    if not isinstance(pattern, str):
        raise bad(r.file, "hybrid_override_pattern", "required for nemotron_h: one of M * - E per layer")
    r.out.put("model.hybrid_override_pattern", pattern, "hybrid_override_pattern")
    mamba_dims(r, _NEMOTRON_H_KEYS)
    r.get("expand")  # d_inner = mamba_num_heads·mamba_head_dim (read above), as Megatron-Core takes it
    if "-" in pattern:
        dense_ffn(r)
    if "E" in pattern:
        r.put("num_experts", "n_routed_experts")
        r.put("moe_topk", "num_experts_per_tok")
        r.put("moe_ffn_hidden_size", "moe_intermediate_size")
        if r.get("moe_shared_expert_intermediate_size"):
            r.put("shared_expert_ffn_hidden_size", "moe_shared_expert_intermediate_size")
            r.put("num_shared_experts", "n_shared_experts", default=1)
        if r.get("moe_latent_size"):
            r.put("moe_latent_size", "moe_latent_size")
    mtp = r.put("mtp_layers", "num_nextn_predict_layers", default=0, minimum=0)
    if mtp and r.get("mtp_hybrid_override_pattern", "*E") != "*E":
        raise bad(r.file, "mtp_hybrid_override_pattern", "MTP layers other than '*E' (attention + MoE) are not modelled")


def mamba2(r: Reader) -> None:
    """Mamba2Config (transformers ``models/mamba2``; Mamba-Codestral, state-spaces mamba2-*): ``num_hidden_layers``
    blocks of one RMSNorm and one Mamba-2 mixer each (in_proj to z, x, B, C and dt; a depthwise conv over x, B, C
    with its bias; the gated RMSNorm; out_proj), no attention, no MLP, no position embedding; the inner width
    ``num_heads · head_dim`` must be ``expand · hidden_size``. As a hybrid stack: pattern ``M`` on every layer.
    ``num_attention_heads`` (no attention layer) is set to the Mamba heads. ``rms_norm`` false, the in/out
    projections' biases (``use_bias``) and a conv without bias (``use_conv_bias`` false) are reported."""
    layers = r.put("num_layers", "num_hidden_layers", default=64)
    hidden = r.put("hidden_size", "hidden_size", default=4096)
    r.put("vocab_size", "vocab_size", default=32768)
    tied_embeddings(r, False)  # (Mamba2Config's default)
    heads, head_dim = mamba_dims(r, _MAMBA2_KEYS)
    expand = as_int(r.file, "expand", r.get("expand", 2))
    if heads * head_dim != expand * hidden:
        raise bad(r.file, "num_heads", f"num_heads × head_dim ({heads} × {head_dim}) must equal expand × hidden_size "
                  f"({expand} × {hidden}): the Mamba-2 inner width")
    r.out.put("model.num_attention_heads", heads, "no attention layer: the Mamba-2 heads (num_heads)")
    r.out.put("model.hybrid_override_pattern", "M" * layers, "model_type mamba2: a Mamba-2 mixer on every layer")
    r.out.put("model.norm", "rmsnorm", "Mamba2RMSNorm before each mixer and at the end")
    r.out.put("model.position_embedding", "none", "model_type mamba2: no position embedding")
    if r.get("hidden_act", "silu") != "silu":
        raise bad(r.file, "hidden_act", f"{r.get('hidden_act')!r}: the Mamba-2 mixer is modelled with SiLU")
    if not as_bool(r.file, "rms_norm", r.get("rms_norm", True)):
        raise bad(r.file, "rms_norm", "a Mamba-2 mixer without its gated RMSNorm is not modelled (true is)")
    if as_bool(r.file, "use_bias", r.get("use_bias", False)):
        r.out.not_modelled["use_bias"] = "the in_proj / out_proj biases are not counted (under 0.01 % of a layer)"
    if not as_bool(r.file, "use_conv_bias", r.get("use_conv_bias", True)):
        r.out.not_modelled["use_conv_bias"] = ("false: the model counts the conv's bias (heads · head dim + 2 · groups "
                                               "· state per layer, under 0.01 %)")
    r.get("time_step_rank")
