"""Hugging Face families that are Llama's decoder (:func:`estimator.importers.hf_reader.llama`) or DeepSeek's MoE
keys with one named difference each: GLM-4 (sandwich norms), OLMo 2 / 3 (q/k norms, output norms, windows), Granite
(μP multipliers; MoE, shared expert), SmolLM3 (NoPE layers), Seed-OSS, MiMo (MTP layers), dots.llm1 (q/k norms on
DeepSeek's MoE), EXAONE 4.0 (q/k norms, post-LN, local / global layers), the Qwen2-VL / Qwen2.5-VL and Ministral 3
text towers, and StarCoder2 (Llama's shapes with a GELU MLP and LayerNorm). The keys are transformers'
``configuration_<family>.py`` names; each mapper's docstring names what it reads beyond Llama's.
"""

from __future__ import annotations

from estimator.importers.common import bad
from estimator.importers.hf_reader import (
    Reader,
    biases,
    common,
    deepseek_moe,
    dense_ffn,
    layer_types,
    llama,
    mixtral_experts,
    sliding,
    window_pattern,
)


def glm(r: Reader) -> None:
    """GlmConfig (GLM-4-9B-chat in transformers' layout): Llama's layers with partial RoPE (``partial_rotary_factor``)
    and q/k/v biases (``attention_bias``, not counted) (transformers ``models/glm``)."""
    llama(r)


def glm4(r: Reader) -> None:
    """Glm4Config (GLM-4-0414 9B / 32B, GLM-Z1): GLM's layers with sandwich norms — ``post_self_attn_layernorm`` and
    ``post_mlp_layernorm`` on the attention and MLP outputs beside the two pre-norms (``model.post_norms``); the
    MLP's fused ``gate_up_proj`` is 2 × ``intermediate_size`` wide (transformers ``models/glm4``)."""
    llama(r)
    r.out.put("model.post_norms", True, "Glm4DecoderLayer's post_self_attn_layernorm / post_mlp_layernorm")


def olmo2(r: Reader) -> None:
    """Olmo2Config / Olmo3Config (OLMo 2, OLMo 3): Llama's shapes with q/k RMSNorm over the whole projection
    (weights counted per head, as for OLMoE) and the two norms on the attention and MLP outputs instead of their
    inputs (the same count); OLMo 3's ``layer_types`` with ``sliding_window`` (transformers ``models/olmo2``,
    ``models/olmo3``)."""
    common(r, tied_default=False)
    dense_ffn(r)
    r.out.put("model.qk_norm", True, "Olmo2Attention's q_norm / k_norm (weights counted per head)")
    r.get("use_sliding_window")
    layer_types(r)


def granite(r: Reader) -> None:
    """GraniteConfig (Granite 3.x dense): Llama's layers; the μP multipliers (``embedding_multiplier``,
    ``residual_multiplier``, ``attention_multiplier``, ``logits_scaling``) scale values, not sizes
    (transformers ``models/granite``)."""
    llama(r)


def granite_moe(r: Reader) -> None:
    """GraniteMoeConfig / GraniteMoeSharedConfig (Granite 3.x MoE): routed experts on every layer with Mixtral's
    keys (``num_local_experts`` of ``intermediate_size``, top ``num_experts_per_tok``), and with
    ``shared_intermediate_size`` one shared expert of that width (transformers ``models/granitemoe``,
    ``models/granitemoeshared``)."""
    llama(r)
    mixtral_experts(r)
    shared = r.get("shared_intermediate_size")
    if shared:
        r.out.put("model.num_shared_experts", 1, "GraniteMoeSharedMoE: one shared MLP")
        r.put("shared_expert_ffn_hidden_size", "shared_intermediate_size")


def smollm3(r: Reader) -> None:
    """SmolLM3Config: Llama's layers; ``no_rope_layers`` / ``no_rope_layer_interval`` drop RoPE on some layers (no
    effect on sizes) (transformers ``models/smollm3``)."""
    llama(r)
    r.get("no_rope_layers")
    r.get("no_rope_layer_interval")


def seed_oss(r: Reader) -> None:
    """SeedOssConfig (Seed-OSS-36B): Llama's layers with ``head_dim`` (query width 80 × 128 over hidden 5120) and
    q/k/v biases (``attention_bias``; ``attention_out_bias``; not counted) (transformers ``models/seed_oss``)."""
    llama(r)
    r.get("attention_out_bias")


def mimo(r: Reader) -> None:
    """MiMoConfig (Xiaomi MiMo-7B): Qwen2's layers and ``num_nextn_predict_layers`` MTP layers."""
    llama(r)
    r.put("mtp_layers", "num_nextn_predict_layers", default=0, minimum=0)


def dots1(r: Reader) -> None:
    """Dots1Config (rednote dots.llm1): Llama's attention with q/k RMSNorm per head, DeepSeek-V3's MoE keys
    (:func:`deepseek_moe`: routed + shared experts, ``first_k_dense_replace`` dense layers of
    ``intermediate_size``); a window on some layers (``max_window_layers`` under the layer count) is refused
    (transformers ``models/dots1``)."""
    common(r, tied_default=False)
    dense_ffn(r)
    r.out.put("model.qk_norm", True, "Dots1Attention's q_norm / k_norm (RMSNorm of head_dim)")
    deepseek_moe(r)
    if r.get("sliding_window") is not None and r.get("use_sliding_window", False):
        raise bad(r.file, "use_sliding_window", f"a window on {r.get('max_window_layers')} of "
                  f"{r.get('num_hidden_layers')} layers is not modelled")
    r.get("max_window_layers")


def qwen2_vl(r: Reader) -> None:
    """Qwen2-VL / Qwen2.5-VL's text tower: Qwen2's layers (the multimodal RoPE sections, ``rope_scaling``, change no
    size); the vision encoder is listed as not modelled by the importer (transformers ``models/qwen2_vl``,
    ``models/qwen2_5_vl``)."""
    llama(r)
    r.get("max_window_layers")


def ministral3(r: Reader) -> None:
    """Ministral 3's text tower (``ministral3`` inside a ``mistral3`` wrapper, whose Pixtral encoder is listed as not
    modelled): Llama's layers with ``head_dim``; the YaRN / Llama-4 scaling in ``rope_parameters`` changes no size
    (Megatron-Bridge ``ministral3_bridge.py`` maps the same keys)."""
    llama(r)


def exaone4(r: Reader) -> None:
    """Exaone4Config (EXAONE 4.0): Llama's shapes with q/k RMSNorm per head and pure post-LN — a norm on the
    attention output and one on the MLP output, none on their inputs (the same count) — and, on the larger models,
    ``sliding_window`` on every layer but each ``sliding_window_pattern``-th (``"LLLG"``: 3 local, 1 global; or
    ``layer_types``) (transformers ``models/exaone4``; Megatron-Bridge ``exaone4``)."""
    common(r, tied_default=False)
    dense_ffn(r)
    r.out.put("model.qk_norm", True, "Exaone4Attention's q_norm / k_norm (RMSNorm of head_dim)")
    window_pattern(r)


def starcoder2(r: Reader) -> None:
    """Starcoder2Config (StarCoder2 3B / 7B / 15B): GQA, a non-gated tanh-GELU MLP (``c_fc`` / ``c_proj``,
    ``hidden_act`` ``gelu_pytorch_tanh``), LayerNorm with weight and bias (``norm_epsilon``), ``sliding_window`` on
    every layer; the linear biases (``use_bias``) are reported, not counted (transformers ``models/starcoder2``)."""
    common(r, tied_default=True, activation=False)
    dense_ffn(r)
    act = r.get("hidden_act", "gelu_pytorch_tanh")
    if act not in ("gelu_pytorch_tanh", "gelu"):
        raise bad(r.file, "hidden_act", f"{act!r}: StarCoder2's MLP is modelled with GELU")
    r.out.put("model.activation", "gelu", f"hidden_act {act!r} with c_fc / c_proj (no gate)")
    r.out.put("model.norm", "layernorm", "Starcoder2's nn.LayerNorm (weight and bias; norm_epsilon)")
    sliding(r)  # (on every layer: StarCoder2 has no use_sliding_window)
    biases(r, "use_bias", default=True)
    for key in ("norm_epsilon", "residual_dropout", "embedding_dropout"):
        r.get(key)
