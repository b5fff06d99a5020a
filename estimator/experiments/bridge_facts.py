"""What Megatron-Bridge sets that a measured row's columns leave empty: its providers' dropout and its performance
scripts' gradient dtype.

**Dropout** (:func:`provider_facts`). Megatron-Core's ``TransformerConfig`` defaults ``hidden_dropout`` and
``attention_dropout`` to 0.1, and Bridge's ``GPTModelProvider`` keeps them; every model family of the Bridge rows
sets both to 0.0 in its provider, which the perf recipes build (the Hugging Face bridges of later releases set the
same, e.g. @067f987df0 ``models/llama/llama_bridge.py`` ``hidden_dropout=0.0``). With dropout 0 no mask is saved
(:func:`estimator.memory.activation.hidden_dropout_mask_bytes`), so a Bridge row of one of these families gets
``train.hidden_dropout`` and ``train.attention_dropout`` 0.0, cited per family; a family not listed keeps the config
default (not stated: the masks are kept). Families go by the lower-case start of ``model_name``; the providers are
cited at NVIDIA-NeMo/Megatron-Bridge@21b02e0cfb, where the rows' dimensions were read (Moonlight's provider is the
DeepSeek one).

**Gradient dtype** (:func:`benchmark_facts`). The performance-summary benchmarks run with
``grad_reduce_in_fp32 = False`` in every release of the rows, for every family: 25.09 (@bf71eba07b) in each
``scripts/performance/configs/<family>/*_llm_pretrain.yaml`` (``mixed_precision: grad_reduce_in_fp32: false``,
applied to the DDP config by ``MixedPrecisionConfig.setup``); 25.11 to 26.06.01 (@7af9601c9d, @21b02e0cfb,
@1f0cfc3bc5, @0fbfe7d3e9, @cab6db381e, @fcbb603110, @cba825fddb) in each family's
``scripts/performance/configs/<family>/*_llm_pretrain.py`` common settings (``cfg.mixed_precision.grad_reduce_in_fp32
= False``, ``cfg.ddp.grad_reduce_in_fp32 = False``); 26.08 (@5796c06a1c) in
``src/megatron/bridge/perf_recipes/_common.py`` ``_benchmark_common`` and ``_perf_precision``. Megatron-Core then
keeps the main gradients in the parameter dtype (NVIDIA/Megatron-LM@d98e8a64dd
``megatron/core/distributed/param_and_grad_buffer.py`` ``group_params_for_buffers``: "grad_dtype: torch.float if
grad_reduce_in_fp32, else param.dtype"): ``precision.grads: bf16`` for a ``mbridge_perf_summary`` row whose
``grad_dtype`` column is empty (a stated column wins).

**Cross entropy** (:func:`benchmark_facts`). The same scripts set ``cross_entropy_fusion_impl = "te"`` on top of the
providers' ``cross_entropy_loss_fusion = True`` (``GPTModelProvider`` and ``MambaModelProvider``): 25.09 in the same
YAML files (``cross_entropy_fusion_impl: "te"``), 25.11 ``scripts/performance/utils/helpers.py``
``set_common_perf_overrides``, 26.02-26.06.01 ``scripts/performance/utils/overrides.py`` ``_set_common_perf_overrides``,
26.08 ``_benchmark_common(cfg, cross_entropy_impl="te")``, except Nemotron-3 Ultra, whose 26.08 defaults pass
``"native"`` (``perf_recipes/nemotronh/common.py`` ``_apply_nemotron_3_ultra_perf_defaults``: "TE fusion has known
stability issues"): ``train.cross_entropy_fusion`` ``te`` (TE's in-place loss on the compute-dtype logits,
:func:`estimator.memory.activation.loss_in_place`) or ``native``.

``config_from_measured_row(..., row_rules=False)`` leaves both out (the model before).
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

#: source ids of Megatron-Bridge's performance-summary tables (every hardware and release)
BENCHMARK_PREFIX = "mbridge_perf_summary"
BENCHMARK_GRADS = ("NVIDIA-NeMo/Megatron-Bridge performance scripts of releases 25.09-26.08 (@bf71eba07b "
                   "scripts/performance/configs/<family>/*_llm_pretrain.yaml; @7af9601c9d..@cba825fddb "
                   "scripts/performance/configs/<family>/*_llm_pretrain.py; @5796c06a1c "
                   "src/megatron/bridge/perf_recipes/_common.py _benchmark_common): grad_reduce_in_fp32 = False, "
                   "so Megatron-Core keeps the main gradients in the parameter dtype (bf16; NVIDIA/Megatron-LM@"
                   "d98e8a64dd param_and_grad_buffer.py group_params_for_buffers)")

BENCHMARK_LOSS = ("NVIDIA-NeMo/Megatron-Bridge performance scripts of releases 25.09-26.08 (@bf71eba07b "
                  "scripts/performance/configs/<family>/*_llm_pretrain.yaml cross_entropy_fusion_impl: te; @7af9601c9d "
                  "scripts/performance/utils/helpers.py set_common_perf_overrides; @21b02e0cfb..@cba825fddb "
                  "scripts/performance/utils/overrides.py _set_common_perf_overrides; @5796c06a1c "
                  "src/megatron/bridge/perf_recipes/_common.py _benchmark_common): cross_entropy_fusion_impl = 'te' "
                  "with the providers' cross_entropy_loss_fusion = True")
#: model-name starts whose benchmark recipe passes the native fused cross entropy instead
NATIVE_LOSS_MODELS = ("nemotron-3 ultra",)
BENCHMARK_LOSS_NATIVE = ("NVIDIA-NeMo/Megatron-Bridge@5796c06a1c src/megatron/bridge/perf_recipes/nemotronh/common.py "
                         "_apply_nemotron_3_ultra_perf_defaults: _benchmark_common(cfg, cross_entropy_impl='native') "
                         "(TE fusion has known stability issues)")


def provider_facts(row: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """The dropout facts of a Bridge row's model family (:data:`PROVIDER_DROPOUT`, by the lower-case start of
    ``model_name``); empty for a family not listed."""
    name = (row.get("model_name") or "").strip().lower()
    for prefixes, citation in PROVIDER_DROPOUT:
        if name.startswith(prefixes):
            return {"train.hidden_dropout": (0.0, citation), "train.attention_dropout": (0.0, citation)}
    return {}


def benchmark_facts(row: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    """The performance scripts' gradient dtype and cross entropy for a performance-summary row (``source_id``
    starting with :data:`BENCHMARK_PREFIX`): ``precision.grads`` bf16 (:data:`BENCHMARK_GRADS`) and
    ``train.cross_entropy_fusion`` ``te``, ``native`` for Nemotron-3 Ultra (:data:`BENCHMARK_LOSS`); empty for other
    sources."""
    if not (row.get("source_id") or "").strip().startswith(BENCHMARK_PREFIX):
        return {}
    name = (row.get("model_name") or "").strip().lower()
    loss = ("native", BENCHMARK_LOSS_NATIVE) if name.startswith(NATIVE_LOSS_MODELS) else ("te", BENCHMARK_LOSS)
    return {"precision.grads": ("bf16", BENCHMARK_GRADS), "train.cross_entropy_fusion": loss}
