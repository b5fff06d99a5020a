"""Hugging Face ``config.json`` -> the estimator's ``model`` section (a local file; no network).

One mapper per family (:data:`FAMILIES`, keyed by ``model_type``; the keys read are transformers'
``configuration_<family>.py`` names, listed per family in docs/model-files.md); a multimodal wrapper's text tower
is read and its encoder reported as not modelled; known families the estimator does not model are refused with the
reason (:data:`estimator.importers.hf_keys.REFUSED_TYPES`). Every key of the file is mapped, ignored with a reason
(:data:`IGNORED`), or reported as a warning. The reader and the fields the families share are
:mod:`estimator.importers.hf_reader`; the families with Mamba-2 mixers (``nemotron_h``, ``mamba2``) are
:mod:`estimator.importers.hf_mamba`; those that are Llama's layers with one named difference (GLM-4, OLMo, Granite,
SmolLM3, Seed-OSS, MiMo, dots.llm1, EXAONE 4, the Qwen2-VL and Ministral 3 text towers) are
:mod:`estimator.importers.hf_llama_like`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from estimator.importers import hf_llama_like as like
from estimator.importers.common import Imported, as_bool, as_int, bad
from estimator.importers.hf_keys import IGNORED, REFUSED_TYPES
from estimator.importers.hf_mamba import mamba2, nemotron_h
from estimator.importers.hf_reader import (
    Reader,
    biases,
    common,
    deepseek_moe,
    dense_ffn,
    full_every,
    layer_types,
    llama,
    mixtral_experts,
    read_json,
    routed_and_shared,
    squared_relu,
    window_pattern,
)


def _mixtral(r: Reader) -> None:
    llama(r)
    mixtral_experts(r)


def _qwen3(r: Reader) -> None:
    llama(r)
    r.out.put("model.qk_norm", True, "model_type qwen3*: Qwen3Attention's q_norm / k_norm (RMSNorm of head_dim)")
    r.get("max_window_layers")


def _qwen3_moe(r: Reader) -> None:
    _qwen3(r)
    r.put("num_experts", "num_experts")
    r.put("moe_topk", "num_experts_per_tok")
    r.put("moe_ffn_hidden_size", "moe_intermediate_size")
    _leading_dense(r, r.get("mlp_only_layers") or [], r.get("decoder_sparse_step", 1))


def _qwen3_next(r: Reader) -> None:
    """Qwen3NextConfig (Qwen3-Next-80B-A3B, Qwen3-Coder-Next): Qwen3-MoE's attention with q/k norms and an output
    gate (``Qwen3NextAttention``: q_proj projects the query and its gate; ``attn_output_gate``, default true) on
    every ``full_attention_interval``-th layer (or ``layer_types``), Gated DeltaNet mixers (``linear_*``) on the
    others, routed experts and one gated shared expert
    (transformers ``models/qwen3_next``; NVIDIA-NeMo/Megatron-Bridge qwen3_next_bridge.py maps the same keys)."""
    _qwen2_moe(r)
    _gated_delta_layers(r)


def _qwen3_5(r: Reader) -> None:
    """Qwen3.5's text tower, dense (``qwen3_5_text``): Qwen3-Next's layers (:func:`_gated_delta_layers`) with a
    dense SwiGLU MLP, and its MTP layers (``mtp_num_hidden_layers``) (transformers ``models/qwen3_5``)."""
    llama(r)
    _gated_delta_layers(r)
    r.put("mtp_layers", "mtp_num_hidden_layers", default=0, minimum=0)


def _qwen3_5_moe(r: Reader) -> None:
    """Qwen3.5's text tower, MoE (``qwen3_5_moe_text``): :func:`_qwen3_next` and its MTP layers."""
    _qwen3_next(r)
    r.put("mtp_layers", "mtp_num_hidden_layers", default=0, minimum=0)


def _gated_delta_layers(r: Reader) -> None:
    """Qwen3-Next / Qwen3.5 attention: q/k norms, the output gate (``attn_output_gate``, default true) and Gated
    DeltaNet layers by ``full_attention_interval`` or ``layer_types`` with the ``linear_*`` dims."""
    r.out.put("model.qk_norm", True, "Qwen3-Next / Qwen3.5 attention's q_norm / k_norm")
    r.out.put("model.attention_output_gate", as_bool(r.file, "attn_output_gate", r.get("attn_output_gate", True)),
              "attn_output_gate (absent: true, the family's gated q_proj)")
    every = r.get("full_attention_interval")
    kinds = r.get("layer_types")
    if kinds is not None:
        every = full_every(kinds, "linear_attention")
        if not every:
            raise bad(r.file, "layer_types", "this pattern of full and linear attention is not modelled (every n-th "
                      "layer full_attention, the others linear_attention)")
    if every is None:
        raise bad(r.file, "full_attention_interval", "required for qwen3_next (or layer_types)")
    r.out.put("model.linear_attention_freq", as_int(r.file, "full_attention_interval", every),
              "full_attention_interval: layer i is full attention when (i + 1) % n == 0, Gated DeltaNet elsewhere")
    for field, key in (("gdn_num_key_heads", "linear_num_key_heads"), ("gdn_num_value_heads", "linear_num_value_heads"),
                       ("gdn_key_head_dim", "linear_key_head_dim"), ("gdn_value_head_dim", "linear_value_head_dim"),
                       ("gdn_conv_kernel", "linear_conv_kernel_dim")):
        r.put(field, key)


def _qwen2_moe(r: Reader) -> None:
    """Qwen2MoeConfig (Qwen1.5-MoE, Qwen2-MoE): Qwen2's attention, routed experts of ``moe_intermediate_size``
    and one shared expert of ``shared_expert_intermediate_size`` (and its sigmoid gate, one weight of ``h``),
    leading dense layers by ``mlp_only_layers`` (transformers ``models/qwen2_moe``)."""
    llama(r)
    r.get("max_window_layers")
    r.put("num_experts", "num_experts")
    r.put("moe_topk", "num_experts_per_tok")
    r.put("moe_ffn_hidden_size", "moe_intermediate_size")
    if r.get("shared_expert_intermediate_size"):
        r.put("shared_expert_ffn_hidden_size", "shared_expert_intermediate_size")
        r.out.put("model.num_shared_experts", 1, "Qwen2MoeSparseMoeBlock: one gated shared expert")
        r.out.put("model.shared_expert_gate", True, "Qwen2MoeSparseMoeBlock.shared_expert_gate: Linear(h, 1)")
    _leading_dense(r, r.get("mlp_only_layers") or [], r.get("decoder_sparse_step", 1))


def _leading_dense(r: Reader, dense_layers: list[Any], step: Any) -> None:
    """Qwen-MoE ``mlp_only_layers`` must be the first k layers and ``decoder_sparse_step`` 1."""
    if as_int(r.file, "decoder_sparse_step", step) != 1:
        raise bad(r.file, "decoder_sparse_step", "MoE on every n-th layer only is not modelled (must be 1)")
    if sorted(dense_layers) != list(range(len(dense_layers))):
        raise bad(r.file, "mlp_only_layers", "dense layers other than the first k are not modelled")
    r.out.put("model.num_dense_layers", len(dense_layers), "mlp_only_layers (count of leading dense layers)")


def _deepseek(r: Reader) -> None:
    common(r, tied_default=False)
    dense_ffn(r)
    r.out.put("model.attention", "mla", "model_type deepseek_v2/v3: multi-head latent attention")
    q_lora = r.get("q_lora_rank")
    if q_lora is not None:
        r.put("q_lora_rank", "q_lora_rank")
    r.put("kv_lora_rank", "kv_lora_rank")
    r.put("qk_head_dim", "qk_nope_head_dim")
    r.put("qk_rope_head_dim", "qk_rope_head_dim", minimum=0)
    r.put("v_head_dim", "v_head_dim")
    deepseek_moe(r)
    r.put("mtp_layers", "num_nextn_predict_layers", default=0, minimum=0)
    r.out.data["model"].pop("head_dim", None)


def _glm4_moe(r: Reader) -> None:
    """Glm4MoeConfig (GLM-4.5 / 4.6): GQA with ``head_dim`` and q/k norms when ``use_qk_norm``, partial RoPE,
    DeepSeek-V3's MoE (``n_routed_experts``, ``n_shared_experts`` of ``moe_intermediate_size``, sigmoid router,
    ``first_k_dense_replace`` dense layers of ``intermediate_size``) and MTP layers (``num_nextn_predict_layers``)
    (transformers ``models/glm4_moe``)."""
    common(r, tied_default=False)
    dense_ffn(r)
    qk_norm = r.get("use_qk_norm", False)
    if as_bool(r.file, "use_qk_norm", qk_norm):
        r.out.put("model.qk_norm", True, "use_qk_norm: Glm4MoeAttention's q_norm / k_norm (RMSNorm of head_dim)")
    deepseek_moe(r)
    r.put("mtp_layers", "num_nextn_predict_layers", default=0, minimum=0)


def _ernie4_5(r: Reader) -> None:
    """Ernie4_5_Config (ERNIE-4.5 dense): Llama's layers (GQA, SwiGLU, RMSNorm, RoPE), tied embeddings by default;
    ``use_bias`` true adds linear biases, which are not modelled (transformers ``models/ernie4_5``)."""
    common(r, tied_default=True)
    dense_ffn(r)
    biases(r, "use_bias")


def _ernie4_5_moe(r: Reader) -> None:
    """Ernie4_5_MoeConfig (ERNIE-4.5-21B-A3B, 300B-A47B): ERNIE-4.5's attention, ``moe_num_experts`` routed experts of
    ``moe_intermediate_size`` (top ``moe_k``) and ``moe_num_shared_experts`` shared ones, one MLP of
    n_shared × ``moe_intermediate_size`` (``Ernie4_5_MoeSparseMoeBlock``), on the layers from
    ``moe_layer_start_index`` to ``moe_layer_end_index`` (the leading ones dense, of ``intermediate_size``); MoE on
    every ``moe_layer_interval``-th layer only, or trailing dense layers, are not modelled (transformers
    ``models/ernie4_5_moe``). MTP layers (``num_nextn_predict_layers``) are read."""
    _ernie4_5(r)
    routed_and_shared(r, "moe_num_experts", "moe_k", "moe_num_shared_experts", "Ernie4_5_MoeSparseMoeBlock")
    if as_int(r.file, "moe_layer_interval", r.get("moe_layer_interval", 1)) != 1:
        raise bad(r.file, "moe_layer_interval", "MoE on every n-th layer only is not modelled (must be 1)")
    layers = r.integer("num_hidden_layers")
    end = r.get("moe_layer_end_index")
    if end is not None and as_int(r.file, "moe_layer_end_index", end, minimum=-1) not in (-1, layers - 1):
        raise bad(r.file, "moe_layer_end_index", f"dense layers after the MoE layers are not modelled (must be the last "
                  f"layer, {layers - 1}, or -1 / null)")
    r.put("num_dense_layers", "moe_layer_start_index", default=0, minimum=0)
    r.put("mtp_layers", "num_nextn_predict_layers", default=0, minimum=0)


def _gemma(r: Reader) -> None:
    """GemmaConfig (Gemma 1, 2B / 7B; also Gemma 3's base): MQA / MHA with ``head_dim``, a tanh-GELU gated MLP
    (``hidden_activation`` / ``hidden_act`` ``gelu_pytorch_tanh`` or ``gelu``: GeGLU), tied embeddings; its RMSNorm
    scales by 1 + w (the same weights) (transformers ``models/gemma``)."""
    common(r, tied_default=True, activation=False)
    dense_ffn(r)
    act = r.get("hidden_activation") or r.get("hidden_act", "gelu_pytorch_tanh")
    if act not in ("gelu_pytorch_tanh", "gelu"):
        raise bad(r.file, "hidden_activation", f"{act!r}: Gemma's gated MLP is modelled with tanh-GELU")
    r.out.put("model.activation", "geglu", f"hidden_activation {act!r} with gate/up/down: GeGLU")


def _gemma3(r: Reader) -> None:
    """Gemma3TextConfig (Gemma 3's text tower, ``gemma3_text``; a ``gemma3`` wrapper's vision encoder is listed as
    not modelled): GQA with ``head_dim``, q/k RMSNorm per head, sandwich norms (pre and post attention and
    feed-forward), a tanh-GELU gated MLP (``hidden_act`` / ``hidden_activation`` ``gelu_pytorch_tanh``: GeGLU), tied
    embeddings, ``sliding_window`` on every layer but each ``sliding_window_pattern``-th (or ``layer_types``) full;
    logit soft-capping (Gemma 2's) is refused (transformers ``models/gemma3``)."""
    _gemma(r)
    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        if r.get(key) is not None:
            raise bad(r.file, key, "logit soft-capping is not modelled")
    r.out.put("model.qk_norm", True, "Gemma3Attention's q_norm / k_norm (RMSNorm of head_dim)")
    r.out.put("model.post_norms", True, "Gemma3DecoderLayer's post_attention_layernorm / post_feedforward_layernorm")
    if as_bool(r.file, "use_bidirectional_attention", r.get("use_bidirectional_attention", False)):
        raise bad(r.file, "use_bidirectional_attention", "bidirectional (encoder) attention is not modelled")
    window_pattern(r)
    r.get("query_pre_attn_scalar")
    r.get("rope_local_base_freq")


def _olmoe(r: Reader) -> None:
    """OlmoeConfig (OLMoE-1B-7B): routed experts on every layer (``num_experts`` of ``intermediate_size``, top
    ``num_experts_per_tok``), no shared expert, q/k RMSNorm over the whole projection (counted per head, as for
    MiniMax-M2); ``clip_qkv`` clamps values (no effect on sizes) (transformers ``models/olmoe``)."""
    common(r, tied_default=False)
    dense_ffn(r)
    r.put("num_experts", "num_experts")
    r.put("moe_topk", "num_experts_per_tok")
    r.put("moe_ffn_hidden_size", "intermediate_size")
    r.out.put("model.qk_norm", True, "OlmoeAttention's q_norm / k_norm (weights counted per head)")
    r.get("clip_qkv")


def _nemotron(r: Reader) -> None:
    """NemotronConfig (Nemotron-4 15B / 340B, Minitron; Megatron-Bridge ``NemotronBridge``): GQA with ``head_dim``
    (or ``kv_channels``), a squared-ReLU MLP of up / down projections (``hidden_act`` relu2), LayerNorm1P (a
    LayerNorm with weight and bias), partial RoPE (``partial_rotary_factor``: no effect on sizes), untied
    embeddings by default (transformers ``models/nemotron``)."""
    common(r, tied_default=False, activation=False)
    dense_ffn(r)
    squared_relu(r, "hidden_act", "Nemotron")
    r.out.put("model.norm", "layernorm", "NemotronLayerNorm1P: LayerNorm with weight and bias (norm_eps)")
    kv_channels = r.get("kv_channels")
    if kv_channels is not None and r.cfg.get("head_dim") is None:
        r.out.put("model.head_dim", as_int(r.file, "kv_channels", kv_channels), "kv_channels (the head dim)")
    r.get("norm_eps")


def _bailing_moe(r: Reader) -> None:
    """BailingMoeConfig / BailingMoeV2Config (Ling-lite / Ling-plus, Ling 2.0 and Ring 2.0; Megatron-Bridge
    ``bailing``): GQA (``head_dim`` when given), ``num_experts`` routed experts of ``moe_intermediate_size`` (top
    ``num_experts_per_tok``) with ``num_shared_experts`` shared ones as one MLP of n × that width (or of
    ``moe_shared_expert_intermediate_size`` × n), ``first_k_dense_replace`` leading dense layers of
    ``intermediate_size``, q/k RMSNorm with ``use_qk_norm``, MTP layers (``num_nextn_predict_layers``); biases
    (``use_bias``, ``use_qkv_bias``) are reported, ``norm_head`` normalises the output weight (no parameter)."""
    common(r, tied_default=False)
    dense_ffn(r)
    routed_and_shared(r, "num_experts", "num_experts_per_tok", "num_shared_experts", "BailingMoeSparseMoeBlock",
                      width_key="moe_shared_expert_intermediate_size")
    r.put("num_dense_layers", "first_k_dense_replace", default=0, minimum=0)
    if as_bool(r.file, "use_qk_norm", r.get("use_qk_norm", False)):
        r.out.put("model.qk_norm", True, "use_qk_norm: the attention's query / key RMSNorm of head_dim")
    r.put("mtp_layers", "num_nextn_predict_layers", default=0, minimum=0)
    biases(r, "use_bias", "use_qkv_bias")
    for key in ("norm_head", "norm_softmax", "use_rmsnorm", "score_function", "router_dtype",
                "moe_router_enable_expert_bias", "embedding_dropout", "output_dropout"):
        r.get(key)


def _minimax_m2(r: Reader) -> None:
    """MiniMaxM2Config (MiniMax-M2 / M2.5 / M2.7; Megatron-Bridge ``MiniMaxM2Bridge``): routed experts on every
    layer with Mixtral's keys (``num_local_experts``, ``num_experts_per_tok``, ``intermediate_size``) and no shared
    expert, full GQA attention (``attn_type_list`` all 1: a 0 is MiniMax-Text-01's lightning attention, refused),
    q/k RMSNorm over the whole projection (``qk_norm_type: per_layer``; the model's q/k norm weights are per head,
    (a·d + g·d − 2·d) fewer per layer: under 0.001 % of the parameters), partial RoPE (``rotary_dim``: no effect on
    sizes), sigmoid routing with a bias. The MTP modules (``use_mtp``, ``num_mtp_modules``) are not counted: the
    published 230B total excludes them and Bridge maps none."""
    common(r, tied_default=False)
    dense_ffn(r)
    mixtral_experts(r)
    kinds = r.get("attn_type_list") or []
    if any(k != 1 for k in kinds):
        raise bad(r.file, "attn_type_list", "layers of type 0 (MiniMax-Text-01's lightning attention) are not "
                  "modelled; only full attention (1) is")
    if as_int(r.file, "shared_intermediate_size", r.get("shared_intermediate_size", 0), minimum=0):
        raise bad(r.file, "shared_intermediate_size", "MiniMax's gated shared expert is not modelled (0 is)")
    if as_bool(r.file, "use_qk_norm", r.get("use_qk_norm", False)):
        norm = r.get("qk_norm_type", "per_layer")
        if norm not in ("per_layer", "per_head"):
            raise bad(r.file, "qk_norm_type", f"{norm!r}: per_layer or per_head")
        r.out.put("model.qk_norm", True, f"use_qk_norm with qk_norm_type {norm!r} (weights counted per head)")
    r.get("rotary_dim")
    if as_bool(r.file, "use_mtp", r.get("use_mtp", False)):
        r.out.not_modelled["use_mtp"] = (f"{r.get('num_mtp_modules')} MTP modules of {r.get('mtp_transformer_layers')} "
                                         "layer(s): not counted (the published total excludes them; Megatron-Bridge "
                                         "maps none); set model.mtp_layers to train them")


def _gpt_oss(r: Reader) -> None:
    common(r, tied_default=False)
    dense_ffn(r)
    r.out.put("model.activation", "quick_geglu", "model_type gpt_oss: GptOssExperts' clamped GLU "
              "gate·σ(1.702·gate)·(up + 1), swiglu_limit; hidden_act 'silu' is not used by the experts")
    r.out.put("model.attention_sinks", True, "model_type gpt_oss: GptOssAttention.sinks (one logit per head)")
    r.out.put("model.linear_bias", True, "model_type gpt_oss: attention_bias and GptOssExperts' gate_up_proj_bias / "
              "down_proj_bias")
    mixtral_experts(r)
    layer_types(r)


#: model_type -> (family label, mapper)
FAMILIES: dict[str, tuple[str, Callable[[Reader], None]]] = {
    "llama": ("Llama 2 / 3.x", llama),
    "mistral": ("Mistral", llama),
    "phi3": ("Phi-3 / Phi-4 (fused qkv and gate/up weights of Llama's shapes)", llama),
    "mixtral": ("Mixtral", _mixtral),
    "qwen2": ("Qwen2 / 2.5", llama),
    "qwen2_moe": ("Qwen1.5-MoE / Qwen2-MoE", _qwen2_moe),
    "qwen3": ("Qwen3", _qwen3),
    "qwen3_moe": ("Qwen3-MoE", _qwen3_moe),
    "qwen3_next": ("Qwen3-Next (Gated DeltaNet + gated attention)", _qwen3_next),
    **dict.fromkeys(("qwen3_5_text", "qwen3_5"), ("Qwen3.5 text tower (Gated DeltaNet + gated attention, dense)",
                                                 _qwen3_5)),
    **dict.fromkeys(("qwen3_5_moe_text", "qwen3_5_moe"), ("Qwen3.5 text tower (Gated DeltaNet + gated attention, "
                                                         "MoE)", _qwen3_5_moe)),
    **dict.fromkeys(("qwen3_vl_text", "qwen3_vl"), ("Qwen3-VL text tower (Qwen3 dense)", _qwen3)),
    **dict.fromkeys(("qwen3_vl_moe_text", "qwen3_vl_moe"), ("Qwen3-VL text tower (Qwen3-MoE)", _qwen3_moe)),
    "deepseek_v2": ("DeepSeek-V2", _deepseek),
    "deepseek_v3": ("DeepSeek-V3", _deepseek),
    "glm4_moe": ("GLM-4.5 / 4.6", _glm4_moe),
    "minimax_m2": ("MiniMax-M2 / M2.5 / M2.7 (full attention, 256 routed experts)", _minimax_m2),
    "ernie4_5": ("ERNIE-4.5 dense", _ernie4_5),
    "olmoe": ("OLMoE (routed experts on every layer, q/k norms)", _olmoe),
    "nemotron": ("Nemotron-4 / Minitron (squared-ReLU MLP, LayerNorm1P)", _nemotron),
    **dict.fromkeys(("bailing_moe", "bailing_moe_v2"), ("Ling / Ring (BailingMoe: routed + shared experts, leading "
                                                        "dense layers, q/k norms, MTP)", _bailing_moe)),
    "gemma": ("Gemma 1 (GeGLU, tied, head_dim 256)", _gemma),
    "starcoder2": ("StarCoder2 (GELU MLP, LayerNorm, biases, sliding window)", like.starcoder2),
    **dict.fromkeys(("gemma3_text", "gemma3"), ("Gemma 3 text tower (sandwich norms, GeGLU, 5:1 local / global)",
                                               _gemma3)),
    "ernie4_5_moe": ("ERNIE-4.5 MoE (routed + shared experts, leading dense layers)", _ernie4_5_moe),
    "gpt_oss": ("GPT-OSS", _gpt_oss),
    "nemotron_h": ("Nemotron-H / Nemotron-3", nemotron_h),
    "glm": ("GLM-4 (transformers' Glm layout: Llama's layers)", like.glm),
    "glm4": ("GLM-4-0414 / GLM-Z1 (sandwich norms)", like.glm4),
    **dict.fromkeys(("olmo2", "olmo3"), ("OLMo 2 / 3 (q/k norms, output norms, OLMo 3's windows)", like.olmo2)),
    "granite": ("Granite 3.x dense (Llama's layers, μP multipliers)", like.granite),
    **dict.fromkeys(("granitemoe", "granitemoeshared"), ("Granite 3.x MoE (routed experts, a shared one)",
                                                         like.granite_moe)),
    "smollm3": ("SmolLM3 (Llama's layers, NoPE layers)", like.smollm3),
    "seed_oss": ("Seed-OSS (Llama's layers, head_dim)", like.seed_oss),
    "mimo": ("MiMo (Qwen2's layers, MTP layers)", like.mimo),
    "dots1": ("dots.llm1 (q/k norms, DeepSeek-V3's MoE)", like.dots1),
    **dict.fromkeys(("qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text"),
                    ("Qwen2-VL / Qwen2.5-VL text tower (Qwen2's layers)", like.qwen2_vl)),
    "ministral3": ("Ministral 3 text tower (Llama's layers)", like.ministral3),
    "exaone4": ("EXAONE 4.0 (q/k norms, post-LN, 3:1 local / global)", like.exaone4),
    "mamba2": ("Mamba-2 (Mamba-Codestral, state-spaces mamba2-*: a Mamba-2 mixer on every layer)", mamba2),
}


def known_architectures() -> list[str]:
    """The model types the importer maps, then those it knows and refuses."""
    return [*FAMILIES, *(f"{t} (refused)" for t in REFUSED_TYPES)]


def import_hf_config(path: str | Path, name: str | None = None) -> Imported:
    """The ``model`` section of a Hugging Face ``config.json``, or of the one in the model folder ``path`` (see the
    module docstring)."""
    path = Path(path)
    stem = path.stem
    if path.is_dir() and (path / "config.json").is_file():  # a model folder (a Hugging Face snapshot): its config
        stem, path = path.name, path / "config.json"
    file = str(path)
    cfg = read_json(path)
    vision = [k for k in ("vision_config", "audio_config") if isinstance(cfg.get(k), dict)]
    if isinstance(cfg.get("text_config"), dict):  # multimodal wrappers keep the decoder here
        outer = {k: cfg[k] for k in ("tie_word_embeddings",) if k in cfg}  # (Qwen3-VL keeps it outside)
        cfg = {**outer, **cfg["text_config"],
               "model_type": cfg["text_config"].get("model_type", cfg.get("model_type"))}
    model_type = cfg.get("model_type")
    if model_type in REFUSED_TYPES:
        raise bad(file, "model_type", f"{model_type!r}: {REFUSED_TYPES[model_type]}")
    if model_type not in FAMILIES:
        raise bad(file, "model_type", f"unknown architecture {model_type!r}; known: {', '.join(FAMILIES)} "
                  f"(refused: {', '.join(REFUSED_TYPES)})")
    out = Imported(file=file)
    out.put("model.name", name or stem, "the file or folder name" if name is None else "given name")
    for key in vision:  # the estimate is the text tower's: say so, never drop the encoder silently
        out.not_modelled[key] = "the multimodal encoder (its parameters, activations and FLOPs) is not modelled: the " \
                                "estimate is the text tower's alone"
    reader = Reader(file, cfg, out)
    FAMILIES[model_type][1](reader)
    named = " ".join(out.sources.values())
    for key in cfg:
        if key in IGNORED and key not in reader.used:
            out.ignored[key] = IGNORED[key]
        elif key in reader.used and key not in named:
            out.ignored[key] = f"checked: {cfg[key]!r} is what the estimator models (no field needed)"
    out.unknown(sorted(k for k in cfg if k not in reader.used and k not in IGNORED and k not in out.not_modelled
                       and k != "text_config"), "key")
    return out
