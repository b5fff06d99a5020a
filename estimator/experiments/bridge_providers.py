"""What Megatron-Bridge's model providers set that a measured row's columns leave empty: dropout.

Megatron-Core's ``TransformerConfig`` defaults ``hidden_dropout`` and ``attention_dropout`` to 0.1, and Bridge's
``GPTModelProvider`` keeps them; every model family of the Bridge rows sets both to 0.0 in its provider, which the
perf recipes build (and the Hugging Face bridges of later releases set the same, e.g. @067f987df0
``models/llama/llama_bridge.py`` ``hidden_dropout=0.0``). With dropout 0 no mask is saved
(:func:`estimator.memory.activation.hidden_dropout_mask_bytes`), so a Bridge row of one of these families gets
``train.hidden_dropout`` and ``train.attention_dropout`` 0.0 as source facts, cited per family. A family not
listed keeps the config default (not stated: the masks are kept).

Families go by the lower-case start of ``model_name``; the providers are cited at NVIDIA-NeMo/Megatron-Bridge@21b02e0cfb,
where the rows' dimensions were read (Moonlight's provider is the DeepSeek one). ``config_from_measured_row(...,
row_rules=False)`` leaves them out (the model before).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_AT = "NVIDIA-NeMo/Megatron-Bridge@21b02e0cfb src/megatron/bridge/models/"
_ZERO = ": hidden_dropout 0.0, attention_dropout 0.0 (TransformerConfig's default 0.1 overridden)"

#: (model-name prefixes, provider citation) of each family whose provider sets both dropouts to 0
PROVIDER_DROPOUT: tuple[tuple[tuple[str, ...], str], ...] = (
    (("llama",), f"{_AT}llama/llama_provider.py LlamaModelProvider / Llama3ModelProvider{_ZERO}"),
    (("deepseek", "moonlight"), f"{_AT}deepseek/deepseek_provider.py DeepSeekModelProvider, "
                                f"MoonlightModelProvider16B{_ZERO}"),
    (("kimi",), f"{_AT}kimi/kimi_provider.py KimiK2Provider{_ZERO}"),
    (("qwen3", "qwen2"), f"{_AT}qwen/qwen_provider.py Qwen2ModelProvider, Qwen3ModelProvider, "
                         f"Qwen3MoEModelProvider{_ZERO}"),
    (("gpt-oss", "gpt_oss"), f"{_AT}gpt_oss/gpt_oss_provider.py GPTOSSProvider{_ZERO}"),
    (("nemotron-3", "nemotron-h", "nemotron-3.5", "nemotron_h"),
     f"{_AT}mamba/mamba_provider.py MambaModelProvider (the base of NemotronHModelProvider and its "
     f"Nemotron-3 providers){_ZERO}"),
    (("nemotron-4", "nemotron4"), f"{_AT}nemotron/nemotron_provider.py NemotronModelProvider{_ZERO}"),
)


def provider_facts(row: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """The dropout facts of a Bridge row's model family (:data:`PROVIDER_DROPOUT`, by the lower-case start of
    ``model_name``); empty for a family not listed."""
    name = (row.get("model_name") or "").strip().lower()
    for prefixes, citation in PROVIDER_DROPOUT:
        if name.startswith(prefixes):
            return {"train.hidden_dropout": (0.0, citation), "train.attention_dropout": (0.0, citation)}
    return {}
