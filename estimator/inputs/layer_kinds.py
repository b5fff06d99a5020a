"""The kind of each layer of the stack — the one place for it: a transformer layer (attention + MLP: ``dense``,
``moe``, ``mtp``), a Gated DeltaNet transformer layer (``gdn_dense``, ``gdn_moe``: Megatron's
``--linear-attention-freq``, :mod:`estimator.inputs.gdn`), or a hybrid pattern's one-block layer (``mamba``,
``gdn``, ``attention``, ``mlp``, ``moe_mlp``: :data:`estimator.inputs.hybrid.HYBRID_SYMBOLS`). Layers of one kind
have the same parameters, ep, FLOPs and activations, so they are priced once per kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast

from estimator.inputs import gdn, hybrid

if TYPE_CHECKING:
    from estimator.config.schema import ModelConfig

LayerKind = Literal["dense", "moe", "mtp", "gdn_dense", "gdn_moe", "mamba", "gdn", "attention", "mlp", "moe_mlp"]


def layer_kind(model: ModelConfig, index: int) -> LayerKind:
    """``dense`` for the first ``num_dense_layers`` (DeepSeek first_k_dense_replace) or a dense model;
    ``moe`` otherwise; ``mtp`` for indices ≥ num_layers (MTP layers follow the main stack); ``gdn_`` before
    either for a GDN layer of ``linear_attention_freq`` (:func:`estimator.inputs.gdn.is_gdn_layer`). With
    ``hybrid_override_pattern`` the layer's symbol names its kind (:data:`hybrid.HYBRID_SYMBOLS`). (Called per
    layer on hot paths: the rule is written out, as in :func:`layer_kind_runs`.)"""
    if index >= model.num_layers:
        return "mtp"
    if model.hybrid_override_pattern is not None:
        return cast(LayerKind, hybrid.HYBRID_SYMBOLS[model.hybrid_override_pattern[index]])
    dense = not model.is_moe or index < model.num_dense_layers
    if model.linear_attention_freq is not None and gdn.is_gdn_layer(model, index):
        return "gdn_dense" if dense else "gdn_moe"
    return "dense" if dense else "moe"


def layer_kind_groups(model: ModelConfig, layers: Sequence[int]) -> list[tuple[int, int]]:
    """(first index, count) per :func:`layer_kind` among ``layers``, in first-seen order: layers of
    one kind have the same parameters, ep, FLOPs and activations, so they are priced once."""
    return [(first, n) for _, first, n in layer_kind_runs(model, layers)]


def layer_kind_runs(model: ModelConfig, layers: Sequence[int]) -> list[tuple[LayerKind, int, int]]:
    """(kind, first index, count) of :func:`layer_kind_groups`, the rule of :func:`layer_kind` (this runs for
    every stage of every estimate: the model's fields are read once)."""
    n_main, n_dense, moe = model.num_layers, model.num_dense_layers, model.is_moe
    pattern, freq = model.hybrid_override_pattern, model.linear_attention_freq
    first: dict[LayerKind, int] = {}
    count: dict[LayerKind, int] = {}
    for index in layers:
        if pattern is not None and index < n_main:
            kind = cast(LayerKind, hybrid.HYBRID_SYMBOLS[pattern[index]])
        elif index >= n_main:
            kind = "mtp"
        else:
            kind = "dense" if not moe or index < n_dense else "moe"
            if freq is not None and gdn.is_gdn_layer(model, index):
                kind = "gdn_dense" if kind == "dense" else "gdn_moe"
        if kind in count:
            count[kind] += 1
        else:
            first[kind], count[kind] = index, 1
    return [(k, first[k], count[k]) for k in first]


def mtp_is_moe(model: ModelConfig) -> bool:
    """MTP layers are MoE when any main layer is (reference §2.1, deepseek hook)."""
    return model.is_moe and model.num_dense_layers < model.num_layers


def kind_key(model: ModelConfig) -> tuple[int, int, bool, str | None, int | None]:
    """Everything :func:`layer_kind` reads from the model: (num_layers, num_dense_layers, is_moe, pattern,
    linear_attention_freq)."""
    return (model.num_layers, model.num_dense_layers, model.is_moe, model.hybrid_override_pattern,
            model.linear_attention_freq)


def layer_blocks(model: ModelConfig, index: int) -> tuple[hybrid.Mixer, hybrid.MlpBlock]:
    """(mixer, MLP block) of layer ``index`` (:func:`estimator.inputs.hybrid.layer_blocks`)."""
    return hybrid.layer_blocks(layer_kind(model, index), mtp_is_moe(model))
