"""Architecture features a measured row states in its ``notes`` (the measured README: notes hold what the
columns cannot), including the hybrid Mamba-2 / attention / MoE stacks (Nemotron-H, Nemotron-3). Used by
:func:`estimator.experiments.measured.config_from_measured_row`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from estimator.config.errors import ConfigError

#: activations the estimator models (``model.activation``)
MODELLED_ACTIVATIONS = ("swiglu", "quick_geglu", "geglu", "gelu", "squared_relu")
#: phrases of a row's ``notes`` (lower case) -> model fields they state (the measured README: notes hold
#: what the columns cannot): Bridge's GPT-OSS provider (sliding window (128, 0) on alternate layers,
#: learnable softmax sink, add_bias_linear) and Qwen3 providers (qk_layernorm)
NOTE_FEATURES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sliding window (128,0) on alternate layers", {"sliding_window": 128, "global_attention_every": 2}),
    ("learnable softmax sink", {"attention_sinks": True}),
    ("add_bias_linear", {"linear_bias": True}),
)
#: a phrase of ``notes`` naming a hybrid Mamba stack (its facts: :data:`HYBRID_NOTE_FACTS`)
HYBRID_MAMBA_NOTE = "hybrid mamba"
#: a Gated DeltaNet / linear-attention phrase: modelled (estimator.inputs.gdn), but a row states neither the layers'
#: layout nor their dims, which only a known family's facts give (:data:`QWEN3_NEXT_FACTS`)
_GDN_NOTE = re.compile(r"gated[\s_-]*delta[\s_-]*(?:net|rule|product)|\bdeltanet\b|\bgdn\b|\blinear[\s_-]attention\b")
#: gated attention as a row's notes may state it: ``model.attention_output_gate`` (:func:`architecture_from_notes`)
_GATED_ATTENTION_NOTE = re.compile(r"\bgated attention\b|\battention output gate\b|\battn_output_gate\b"
                                   r"|\battention_output_gate\b")
#: architecture features a row's (lower-case) notes may state that the estimator does not model: pattern -> what
#: (the row is refused, never estimated as the transformer its columns describe; the Hugging Face importer refuses
#: the same families by model type, ``estimator.importers.hf_keys.REFUSED_TYPES``)
UNMODELLED_NOTE_FEATURES: tuple[tuple[re.Pattern[str], str], ...] = (
    (_GDN_NOTE, "Gated DeltaNet (linear-attention) mixers whose layout and dims the row does not state (known for "
     "Qwen3-Next rows by name; set model.linear_attention_freq and the gdn_* fields by hand)"),
    (re.compile(r"\blightning attention\b"), "lightning (linear) attention mixers (MiniMax)"),
    (re.compile(r"\b(?:lightning|sparse)[\s_-]*indexer\b|\bsparse attention\b|\bindex_topk\b|\bdsa\b"),
     "sparse attention (DeepSeek-V3.2's lightning indexer and its top-k keys per query)"),
    (re.compile(r"\bchunked (?:local )?attention\b|\battention_chunk_size\b"), "chunked local attention (Llama 4)"),
    (re.compile(r"\bnope layers?\b|\bno[\s_-]rope layers?\b"), "layers without position embedding (NoPE)"),
    (re.compile(r"\bsoft[\s_-]?capp?ing\b|\bsoftcap\b"), "logit soft-capping"),
    (re.compile(r"\bsandwich norm\b|\bpost[\s_-]?norms?\b|\bfour norms\b"), "norms after the attention / MLP blocks on layers "
     "the row does not name (model.post_norms, set by hand or by a Gemma 3 config.json import)"),
    (re.compile(r"\bvision (?:encoder|tower|model)\b|\bvit\b|\bmultimodal\b|\bimage tokens?\b"),
     "a vision encoder and its image tokens"),
    (re.compile(r"\bhyper[\s_-]?connections?\b|\bmhc\b"), "hyper-connections (several residual streams; "
     "DeepSeek-V4's mHC)"),
    (re.compile(r"\bhash[\s_-]?(?:routed|routing|moe)\b"), "hash-routed MoE layers"),
)
#: what a hybrid row's (lower-case) notes state, as the Bridge Blackwell rows spell it: model field -> pattern
#: (the layer pattern as Bridge's ``hybrid_layer_pattern`` or Megatron's ``--hybrid-override-pattern``, the
#: mamba heads × head dim, the state size, the B/C groups, the latent MoE width)
HYBRID_NOTE_FACTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("hybrid_override_pattern", re.compile(r"(?:hybrid_layer_pattern|--hybrid-override-pattern) ([mg*e\-]+)")),
    ("mamba_num_heads", re.compile(r"mamba (\d+) ?(?:heads )?x ?\d+")),
    ("mamba_head_dim", re.compile(r"mamba \d+ ?(?:heads )?x ?(\d+)")),
    ("mamba_state_dim", re.compile(r"\bstate (\d+)")),
    ("mamba_num_groups", re.compile(r"\b(\d+) groups\b")),
    ("moe_latent_size", re.compile(r"--moe-latent-size (\d+)")),
)
#: the fields a hybrid row must state (in notes or as a source fact) to be estimated
HYBRID_REQUIRED = ("hybrid_override_pattern", "mamba_num_heads", "mamba_head_dim", "mamba_state_dim",
                   "mamba_num_groups")
#: the Bridge provider the Nano rows cite (their notes), from which Lightning is built (its notes)
_NANO_PROVIDER = ("NVIDIA-NeMo/Megatron-Bridge@067f987df0:src/megatron/bridge/recipes/nemotronh/h100/"
                  "nemotron_3_nano.py (as transcribed in the Nano rows' notes)")
_NANO_PATTERN = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
#: Nemotron-H's vocabulary (the Bridge rows leave vocab empty: the tokenizer comes from the HF checkpoint)
_NEMOTRON_VOCAB = (131072, "not stated by the row (tokenizer from HF); NemotronHConfig vocab_size = 131072 "
                   "(NVIDIA configuration_nemotron_h.py, as documented at docs.vllm.ai transformers_utils/configs/"
                   "nemotron_h); consistent with NVIDIA's Nemotron 3 white paper: Nano 3.2B active, 3.6B with "
                   "embeddings (131072·2688 = 0.35B)")
_SUPER_PROVIDER = ("NVIDIA-NeMo/Megatron-Bridge@160ccccbb4:src/megatron/bridge/models/nemotronh/nemotron_h_provider.py "
                   "Nemotron3SuperProvider: mamba_state_dim 128, mamba_num_groups 8 (NemotronHModelProvider)")
_ULTRA_DEFAULTS = ("not set by the row's launch config (NVIDIA/Megatron-LM@07321821f8 NVIDIA-Nemotron-3-Ultra-"
                   "550B-A55B-BF16.sh), so Megatron-Core's defaults apply: transformer_config.py@d98e8a64dd "
                   "mamba_state_dim = 128, mamba_num_groups = 8")
#: published facts about hybrid models whose rows' notes leave a value out: model_name -> {config path: (value,
#: citation)}. Facts of the model, not of one source: they hold for its rows of any source (other hardware,
#: other releases; :func:`estimator.experiments.measured.source_facts`, a source's own facts win)
HYBRID_MODEL_FACTS: dict[str, dict[str, tuple[Any, str]]] = {
    "Nemotron-3 Nano 30B-A3B": {"model.vocab_size": _NEMOTRON_VOCAB},
    "Nemotron-3.5 Lightning 30B-A3B": {
        "model.vocab_size": _NEMOTRON_VOCAB,
        "model.hybrid_override_pattern": (_NANO_PATTERN, f"the row's notes: dims as {_NANO_PROVIDER}"),
        "model.mamba_state_dim": (128, f"the row's notes: dims as {_NANO_PROVIDER}: state 128"),
        "model.mamba_num_groups": (8, f"the row's notes: dims as {_NANO_PROVIDER}: 8 groups"),
    },
    "Nemotron-3 Super 120B-A12B": {
        "model.vocab_size": _NEMOTRON_VOCAB,
        "model.mamba_state_dim": (128, _SUPER_PROVIDER),
        "model.mamba_num_groups": (8, _SUPER_PROVIDER),
    },
    "Nemotron-3 Ultra 550B-A55B": {
        "model.vocab_size": _NEMOTRON_VOCAB,
        "model.mamba_state_dim": (128, _ULTRA_DEFAULTS),
        "model.mamba_num_groups": (8, _ULTRA_DEFAULTS),
    },
}
#: facts of a hybrid Nemotron-H-family model the rows name but :data:`HYBRID_MODEL_FACTS` does not list (another
#: size, another release): the family's tokenizer. model-name prefix -> {config path: (value, citation)}
HYBRID_FAMILY_FACTS: dict[str, dict[str, tuple[Any, str]]] = {
    "Nemotron": {"model.vocab_size": (131072, "not stated by the row; the Nemotron-H family's tokenizer: " +
                                      _NEMOTRON_VOCAB[1].removeprefix("not stated by the row (tokenizer from HF); "))},
}


#: a Qwen3-Next row's model name (lower case): its Gated DeltaNet layers and gated attention are
#: :data:`QWEN3_NEXT_FACTS`
QWEN3_NEXT_NAME = re.compile(r"qwen[\s_-]*3[\s._-]*next")
_QWEN3_NEXT_PROVIDER = ("NVIDIA-NeMo/Megatron-Bridge@21b02e0cfb:src/megatron/bridge/models/qwen/qwen_provider.py "
                        "Qwen3NextModelProvider (the base of every Qwen3-Next size)")
#: what every Qwen3-Next model is beside its rows' columns (Bridge's provider; Megatron-Core's GDN defaults agree)
QWEN3_NEXT_FACTS: dict[str, tuple[Any, str]] = {
    "model.linear_attention_freq": (4, f"{_QWEN3_NEXT_PROVIDER}: linear_attention_freq 4 (one gated attention "
                                       "layer per 4, Gated DeltaNet in the others)"),
    "model.gdn_num_key_heads": (16, f"{_QWEN3_NEXT_PROVIDER}: linear_num_key_heads 16"),
    "model.gdn_num_value_heads": (32, f"{_QWEN3_NEXT_PROVIDER}: linear_num_value_heads 32"),
    "model.gdn_key_head_dim": (128, f"{_QWEN3_NEXT_PROVIDER}: linear_key_head_dim 128"),
    "model.gdn_value_head_dim": (128, f"{_QWEN3_NEXT_PROVIDER}: linear_value_head_dim 128"),
    "model.gdn_conv_kernel": (4, f"{_QWEN3_NEXT_PROVIDER}: linear_conv_kernel_dim 4"),
    "model.attention_output_gate": (True, f"{_QWEN3_NEXT_PROVIDER}: attention_output_gate True (gated attention)"),
    "model.qk_norm": (True, f"{_QWEN3_NEXT_PROVIDER}: qk_layernorm True (Qwen3MoEModelProvider)"),
    "model.shared_expert_gate": (True, f"{_QWEN3_NEXT_PROVIDER}: moe_shared_expert_gate True"),
}


def model_facts(row: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """Facts about the row's model, whatever its source: :data:`HYBRID_MODEL_FACTS` by name, :data:`QWEN3_NEXT_FACTS`
    for a Qwen3-Next row, else, for a hybrid row (notes naming a hybrid Mamba stack), its family's
    (:data:`HYBRID_FAMILY_FACTS`, by name prefix)."""
    name = (row.get("model_name") or "").strip()
    if QWEN3_NEXT_NAME.search(name.lower()):
        return QWEN3_NEXT_FACTS
    if name in HYBRID_MODEL_FACTS:
        return HYBRID_MODEL_FACTS[name]
    if HYBRID_MAMBA_NOTE not in (row.get("notes") or "").lower():
        return {}
    return next((facts for prefix, facts in HYBRID_FAMILY_FACTS.items() if name.startswith(prefix)), {})


#: where a repeated MTP layer's depth comes from (``model.assumed``: the mtp_layers column is empty)
REPEATED_MTP_REASON = ("notes: mtp_num_layers=N with a repeated layer: N MTP passes (compute and activations N "
                       "times) over one set of MTP weights (model.mtp_repeated_layer); the MTP layer is attention "
                       "+ MoE (Bridge mtp_hybrid_override_pattern '*E')")
#: recipe item of a repeated MTP layer (Bridge ``mtp_num_layers=N`` with ``mtp_use_repeated_layer``)
_MTP_REPEATED = re.compile(r"mtp_num_layers=(\d+)\(repeated layer\)")


def architecture_from_notes(notes: str, attention: str) -> dict[str, Any]:
    """Model fields the row's (lower-case) notes state beyond the columns. A hybrid Mamba-2 stack (Nemotron-H:
    Mamba-2 mixers beside attention and MoE layers) gets its layer pattern, Mamba-2 dims and latent MoE width
    (:data:`HYBRID_NOTE_FACTS`), no position embedding, and its MTP passes; what is still missing after the
    source facts is refused by :func:`check_hybrid_facts`."""
    fields: dict[str, Any] = {}
    for phrase, values in NOTE_FEATURES:
        if phrase in notes:
            fields.update(values)
    if "qk_layernorm" in notes and attention != "mla":
        fields["qk_norm"] = True
    if _GATED_ATTENTION_NOTE.search(notes) and attention != "mla":
        fields["attention_output_gate"] = True
    if HYBRID_MAMBA_NOTE in notes:
        fields.update(_hybrid_fields(notes))
    return fields


def _hybrid_fields(notes: str) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, pattern in HYBRID_NOTE_FACTS:
        if (found := pattern.search(notes)) is not None:
            value = found.group(1)
            fields[name] = value.upper() if name == "hybrid_override_pattern" else int(value)
    if "no position embedding" in notes:
        fields["position_embedding"] = "none"
    if (mtp := _MTP_REPEATED.search(notes)) is not None:  # the passes run N times over one repeated layer
        fields["mtp_layers"] = int(mtp.group(1))
        fields["mtp_repeated_layer"] = True
    return fields


#: model families whose name alone says the row holds a feature the estimator does not model (a row naming one is
#: refused even when its notes leave the feature out): name pattern (lower case) -> the feature
UNMODELLED_MODEL_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"qwen[\s_-]*3\.5"), "Qwen3.5's vision encoder (a natively multimodal model; Bridge benchmarks "
     "Qwen3.5-VL) and its own Gated DeltaNet dims, which a row does not state"),
    (re.compile(r"deepseek[\s_-]*v3\.2"), "DeepSeek-V3.2's sparse attention (lightning indexer)"),
    (re.compile(r"llama[\s_-]*4\b"), "Llama 4's chunked local attention and NoPE layers"),
    (re.compile(r"\bgemma[\s_-]*2\b"), "Gemma 2's logit soft-capping"),
    (re.compile(r"\bgemma[\s_-]*3\b"), "Gemma 3's sandwich norms, GeGLU and 5:1 local / global window pattern, which a "
     "row's columns do not state (import its config.json: ndval import --hf-config)"),
    (re.compile(r"kimi[\s_-]*linear|minimax[\s_-]*(?:text|m1\b|01\b)"), "linear-attention mixers"),
    (re.compile(r"minimax[\s_-]*m3"), "MiniMax-M3's vision encoder and lightning-indexer sparse attention"),
    (re.compile(r"deepseek[\s_-]*v4"), "DeepSeek-V4's hyper-connections (mHC), compressed sparse and sliding-window "
     "attention layers and hash-routed MoE layers (Megatron-Bridge DeepSeekV4Bridge)"),
    (re.compile(r"\bglm[\s_-]*5|glm[\s_-]*moe[\s_-]*dsa"), "GLM-5's sparse attention (DSA indexer layers; "
     "Megatron-Bridge GLM5Bridge)"),
    (re.compile(r"[\s_.-]vl(?![a-z0-9])|(?<![a-z0-9])omni(?![a-z0-9])"), "a vision encoder and its image tokens "
     "(a vision-language model)"),
    (re.compile(r"\bjamba\b|falcon[\s_-]*h1|\bzamba|\bbamba\b"), "a hybrid Mamba stack other than Nemotron-H's"),
)


def check_unmodelled_features(notes: str, model_name: str = "") -> None:
    """Refuse a row whose model is a family with a feature the estimator does not model
    (:data:`UNMODELLED_MODEL_NAMES`: a ConfigError on ``model_name``) or whose (lower-case) notes state one
    (:data:`UNMODELLED_NOTE_FEATURES`; a sliding window other than the GPT-OSS phrase the reader parses, Mamba
    layers outside a hybrid Mamba stack): a ConfigError on ``notes`` naming the feature and the phrase."""
    for pattern, what in UNMODELLED_MODEL_NAMES:
        if pattern.search(model_name.lower()):
            raise ConfigError("model_name", f"{model_name!r}: {what}: not modelled; the row is not evaluable")
    facts_give_gdn = QWEN3_NEXT_NAME.search(model_name.lower()) is not None  # QWEN3_NEXT_FACTS: layout and dims
    for pattern, what in UNMODELLED_NOTE_FEATURES:
        if pattern is _GDN_NOTE and facts_give_gdn:
            continue
        if (found := pattern.search(notes)) is not None:
            raise ConfigError("notes", f"{what}: not modelled (the row's notes state {found.group(0)!r}); the row "
                              "is not evaluable")
    if "sliding window" in notes and not any(phrase in notes for phrase, values in NOTE_FEATURES
                                             if "sliding_window" in values):
        raise ConfigError("notes", "a sliding window in a form the reader does not parse (it reads 'sliding window "
                          "(128,0) on alternate layers', Bridge's GPT-OSS provider): set model.sliding_window and "
                          "model.global_attention_every by hand; the row is not evaluable as stated")
    if re.search(r"\bmamba\b", notes) and HYBRID_MAMBA_NOTE not in notes:
        raise ConfigError("notes", "the notes name Mamba layers but no hybrid Mamba stack (the reader's phrase "
                          f"{HYBRID_MAMBA_NOTE!r} with its layer pattern and Mamba-2 dims): the row is not evaluable")


def check_hybrid_facts(row: Mapping[str, str], model: Mapping[str, Any]) -> None:
    """Refuse a hybrid row (notes name a hybrid Mamba stack) whose notes and source facts leave a field the
    estimate needs: a ConfigError naming the missing model fields (never a guess)."""
    if HYBRID_MAMBA_NOTE not in (row.get("notes") or "").lower():
        return
    if "G" in str(model.get("hybrid_override_pattern") or ""):
        raise ConfigError("notes", "hybrid stack with Gated DeltaNet layers ('G'): the row states neither their dims "
                          "(model.gdn_*) nor a family whose facts give them; the row is not evaluable")
    missing = [name for name in HYBRID_REQUIRED if model.get(name) is None]
    if missing:
        raise ConfigError("notes", "hybrid Mamba-2 / attention / MoE stack: the row states no "
                          f"{', '.join('model.' + name for name in missing)} (in notes or as a source fact); "
                          "the row is not evaluable")
