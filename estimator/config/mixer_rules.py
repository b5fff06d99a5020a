"""The cross-field rules of the mixers beside attention (:mod:`estimator.config.rules` runs them in its table):
the Mamba-2 mixer and the Gated DeltaNet mixer over TP and CP, and adapters on such stacks."""

from __future__ import annotations

from estimator.config.rule import Cfg, Rule
from estimator.inputs import hybrid


def _mamba(cfg: Cfg) -> bool:
    return "M" in (cfg.model.hybrid_override_pattern or "")


def _gdn(cfg: Cfg) -> bool:
    """The model has GDN layers: ``linear_attention_freq`` above 1, or a hybrid pattern's ``G``."""
    freq = cfg.model.linear_attention_freq
    return (freq is not None and freq > 1) or "G" in (cfg.model.hybrid_override_pattern or "")


def mixer_rules() -> list[Rule]:
    """The Mamba-2 mixer over TP (Megatron-Core ``MambaMixer`` asserts ``nheads % tp == 0`` and
    ``ngroups % tp == 0``) and over CP (its ``MambaContextParallel`` all-to-alls are not modelled); the GDN
    mixer over TP (Megatron-Core ``_GDNBase`` splits the key and the value heads: ``num_key_heads // tp_size``,
    ``num_value_heads // tp_size``) and over CP (its ``a2a_cp_to_hp`` all-to-alls are not modelled); adapters,
    whose targets are a transformer layer's attention and MLP linears, on neither."""
    return [
        Rule("parallel.tp", lambda c: _mamba(c) & (hybrid.mamba_dims(c.model).heads % c.parallel.tp != 0),
             lambda c: f"must divide the Mamba heads ({hybrid.mamba_dims(c.model).heads}); got {c.parallel.tp} "
             "(Megatron-Core MambaMixer: nheads % tp == 0)"),
        Rule("parallel.tp", lambda c: _mamba(c) & (c.model.mamba_num_groups % c.parallel.tp != 0),
             lambda c: f"must divide model.mamba_num_groups ({c.model.mamba_num_groups}); got {c.parallel.tp} "
             "(Megatron-Core MambaMixer: ngroups % tp == 0)"),
        Rule("parallel.tp", lambda c: _gdn(c) & (c.model.gdn_num_key_heads % c.parallel.tp != 0),
             lambda c: f"must divide model.gdn_num_key_heads ({c.model.gdn_num_key_heads}); got {c.parallel.tp} "
             "(Megatron-Core GatedDeltaNet splits the key and value heads over TP)"),
        Rule("adapter.kind", lambda c: (c.adapter.kind != "none") & ((c.model.hybrid_override_pattern is not None)
                                                                    | _gdn(c)),
             lambda c: "adapters on a hybrid stack (model.hybrid_override_pattern) or on Gated DeltaNet layers are "
             "not modelled: the adapter targets are a transformer layer's attention and MLP linears; a valid "
             "example: adapter.kind: none", structural=True),
        Rule("parallel.cp", lambda c: _mamba(c) & (c.parallel.cp > 1),
             lambda c: "context parallelism of Mamba-2 layers (Megatron-Core MambaContextParallel: all-to-alls "
             "between sequence and head sharding) is not modelled; a valid example: parallel.cp: 1"),
        Rule("parallel.cp", lambda c: _gdn(c) & (c.parallel.cp > 1),
             lambda c: "context parallelism of Gated DeltaNet layers (Megatron-Core a2a_cp_to_hp: all-to-alls "
             "between sequence and head sharding) is not modelled; a valid example: parallel.cp: 1"),
    ]
