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
    ``ngroups % tp == 0``) and over CP (``MambaContextParallel``: heads over tp·cp, groups over tp·cp; the
    replicated group states of fewer groups than cp are not modelled); the GDN mixer over TP (Megatron-Core
    ``_GDNBase`` splits the key and the value heads: ``num_key_heads // tp_size``, ``num_value_heads //
    tp_size``) and over CP (``a2a_cp_to_hp``: both over tp·cp); adapters, whose targets are a transformer
    layer's attention and MLP linears, on neither (:mod:`estimator.perf.mixer_cp` prices the CP all-to-alls)."""
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
        Rule("model.post_norms", lambda c: c.model.post_norms & ((c.model.hybrid_override_pattern is not None)
                                                                 | _gdn(c)),
             lambda c: "sandwich norms (Gemma's post norms) are modelled on transformer layers only, not on a hybrid "
             "stack or Gated DeltaNet layers; a valid example: model.post_norms: false", structural=True),
        Rule("parallel.cp", lambda c: _mamba(c) & (c.parallel.cp > 1)
             & (hybrid.mamba_dims(c.model).heads % (c.parallel.tp * c.parallel.cp) != 0),
             lambda c: f"tp·cp must divide the Mamba heads ({hybrid.mamba_dims(c.model).heads}); got "
             f"{c.parallel.tp}·{c.parallel.cp} (Megatron-Core MambaContextParallel: nheads must be evenly divisible "
             "by tp_size * cp_size)"),
        Rule("parallel.cp", lambda c: _mamba(c) & (c.parallel.cp > 1)
             & (c.model.mamba_num_groups // c.parallel.tp % c.parallel.cp != 0),
             lambda c: f"must divide the Mamba groups per TP rank ({c.model.mamba_num_groups // c.parallel.tp}); "
             f"got {c.parallel.cp}: with fewer groups than cp Megatron-Core's MambaContextParallel replicates the "
             "group states across CP ranks (group_repeat_count), which is not modelled; otherwise it asserts "
             "ngroups % (tp_size * cp_size) == 0"),
        Rule("parallel.cp", lambda c: _gdn(c) & (c.parallel.cp > 1)
             & ((c.model.gdn_num_key_heads % (c.parallel.tp * c.parallel.cp) != 0)
                | (c.model.gdn_num_value_heads % (c.parallel.tp * c.parallel.cp) != 0)),
             lambda c: f"tp·cp must divide the GDN key and value heads ({c.model.gdn_num_key_heads}, "
             f"{c.model.gdn_num_value_heads}); got {c.parallel.tp}·{c.parallel.cp} (Megatron-Core a2a_cp_to_hp: "
             "'split_sections ... must be divisible by cp_size for GDN', heads split over tp·cp)"),
    ]
