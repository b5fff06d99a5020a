"""Architecture features a measured row states in its ``notes`` (the measured README: notes hold what the
columns cannot), and the hybrid stacks the estimator refuses. Used by
:func:`estimator.experiments.measured.config_from_measured_row`.
"""

from __future__ import annotations

from typing import Any

from estimator.config.errors import ConfigError

#: activations the estimator models (``model.activation``)
MODELLED_ACTIVATIONS = ("swiglu", "quick_geglu", "gelu", "squared_relu")
#: phrases of a row's ``notes`` (lower case) -> model fields they state (the measured README: notes hold
#: what the columns cannot): Bridge's GPT-OSS provider (sliding window (128, 0) on alternate layers,
#: learnable softmax sink) and Qwen3 providers (qk_layernorm)
NOTE_FEATURES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("sliding window (128,0) on alternate layers", {"sliding_window": 128, "global_attention_every": 2}),
    ("learnable softmax sink", {"attention_sinks": True}),
)
#: a phrase of ``notes`` naming a hybrid Mamba stack, which the estimator does not model
HYBRID_MAMBA_NOTE = "hybrid mamba"


def architecture_from_notes(notes: str, attention: str) -> dict[str, Any]:
    """Model fields the row's (lower-case) notes state beyond the columns; a hybrid Mamba-2 stack
    (Nemotron-H: Mamba-2 mixers beside attention and MoE layers) is refused with a ConfigError
    naming the column: its mixer's parameters, state, activations, FLOPs and kernels are not
    modelled, and pricing its layers as transformer layers would be a silent guess."""
    if HYBRID_MAMBA_NOTE in notes:
        raise ConfigError(
            "notes", "hybrid Mamba-2 / attention / MoE stack (hybrid_layer_pattern): the Mamba-2 mixer is not "
            "modelled (parameters, state, activations, FLOPs, kernels); the row is not evaluable")
    fields: dict[str, Any] = {}
    for phrase, values in NOTE_FEATURES:
        if phrase in notes:
            fields.update(values)
    if "qk_layernorm" in notes and attention != "mla":
        fields["qk_norm"] = True
    return fields
