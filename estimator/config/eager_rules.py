"""The cross-field rules of plain PyTorch eager blocks (``train.eager_ops``, ``train.eager_rmsnorm``;
:mod:`estimator.perf.eager` prices them): :mod:`estimator.config.rules` runs them in its table."""

from __future__ import annotations

from estimator.config.rule import Cfg, Rule


def _eager_unmodelled(cfg: Cfg) -> str:
    """The model feature :mod:`estimator.perf.eager` has no decomposition for ('' when none)."""
    m = cfg.model
    for what, broken in (("a MoE model", m.is_moe), (f"attention {m.attention!r}", m.attention == "mla"),
                         (f"activation {m.activation!r}", m.activation != "swiglu"),
                         ("a hybrid stack", (m.hybrid_override_pattern is not None) or (m.linear_attention_freq is not None)),
                         ("MTP layers", m.mtp_layers > 0)):
        if broken:
            return what
    return ""


def eager_rules() -> list[Rule]:
    """``train.eager_ops`` on the blocks :mod:`estimator.perf.eager` decomposes (dense MHA / GQA with SwiGLU,
    torchtitan's Llama 3 and Qwen3), ``train.eager_rmsnorm`` with it on an RMSNorm model: structural."""
    return [
        Rule("train.eager_ops", lambda c: c.train.eager_ops & bool(_eager_unmodelled(c)),
             lambda c: f"is modelled for dense MHA/GQA blocks with SwiGLU (torchtitan's Llama 3 / Qwen3, "
             f"estimator.perf.eager); {_eager_unmodelled(c)} has no eager decomposition here: a valid example: "
             "model llama3-8b with train: {eager_ops: true}", structural=True),
        Rule("train.eager_rmsnorm", lambda c: c.train.eager_rmsnorm & ((not c.train.eager_ops) | (c.model.norm != "rmsnorm")),
             lambda c: "needs train.eager_ops: true and model.norm: rmsnorm (it decomposes the RMSNorm of eager blocks)",
             structural=True),
    ]
