"""Host API call sequences that have a fused torch_npu / MindSpeed affinity API (data).

Facts from msprof-analyze 26.2.0 ``msprof_analyze/advisor/rules/timeline_fusion_ops.yaml`` (the rule sets of CANN
6.3.RC2 .. 8.0.RC3, each inheriting the previous ones; ``analyzer/schedule/fusion_ops/fusion_ops_analyzer.py``
matches them), written here in this table's own notation:

- a pattern is a space-separated sequence of host API names; ``aten`` patterns are matched against the names of
  the trace's ``aten::*`` / ``npu::*`` host events with the ``aten::`` prefix removed, ``optimizer`` patterns
  against ``Optimizer.step#*`` events with that prefix removed;
- ``name?`` is an optional call (0 or 1), ``name{a,b}`` a call repeated ``a`` to ``b`` times;
- ``cann`` is the first CANN version whose rule set lists the entry.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = "msprof-analyze 26.2.0 msprof_analyze/advisor/rules/timeline_fusion_ops.yaml"
ATEN, OPTIMIZER = "aten", "optimizer"


@dataclass(frozen=True)
class AffinityPattern:
    """One call sequence and the fused API that replaces it."""

    api: str
    mode: str
    pattern: str
    cann: str


def _entries(api: str, cann: str, *patterns: str, mode: str = ATEN) -> tuple[AffinityPattern, ...]:
    return tuple(AffinityPattern(api, mode, p, cann) for p in patterns)


_TRANSPOSE = tuple(f"{a} contiguous? {b}" for a, b in (("permute", "reshape"), ("permute", "view"),
                                                      ("transpose", "reshape"), ("transpose", "view"),
                                                      ("reshape", "permute"), ("reshape", "transpose"),
                                                      ("view", "permute"), ("view", "transpose")))
_SWIGLU = tuple(f"{s} {rest}" for s in ("slice", "chunk")
                for rest in ("silu mul", "mul silu", "sigmoid mul mul", "mul sigmoid mul", "mul mul sigmoid"))
_OPTIMIZERS = ("AdamW", "SGD", "Adadelta", "Lamb", "AdamP", "BertAdam", "RMSprop", "RMSpropTF", "Adam")

PATTERNS: tuple[AffinityPattern, ...] = (
    *_entries("torch_npu.npu_confusion_transpose", "6.3.RC2", *_TRANSPOSE),
    *_entries("torch_npu.fast_gelu", "6.3.RC2", "gelu"),
    *_entries("torch_npu.npu_scaled_masked_softmax", "6.3.RC2", "softmax mul? masked_fill_", "softmax mul? add"),
    *_entries("optimizer.clip_grad_norm_fused_", "6.3.RC2", "add reciprocal mul"),
    *(p for name in _OPTIMIZERS
      for p in _entries(f"torch_npu.optim.NpuFused{name}", "6.3.RC2", f"{name}.step", mode=OPTIMIZER)),
    *_entries("torch_npu.npu_fusion_attention", "7.0.RC1",
              "matmul add? mul? masked_fill_? softmax dropout? matmul", "matmul add? mul? add? softmax dropout? matmul"),
    *_entries("torch_npu.npu_rotary_mul", "7.0.RC1", "chunk neg cat mul{0,2} add", "slice neg cat mul{0,2} add"),
    *_entries("torch_npu.npu_rms_norm", "7.0.0", "pow? mean? add? rsqrt mul type_as?"),
    *_entries("torch_npu.npu_swiglu", "7.0.0", *_SWIGLU),
    *_entries("torch_npu.npu_geglu", "8.0.RC1", "slice gelu mul", "chunk gelu mul", "slice mul gelu", "chunk mul gelu"),
    *_entries("torch_npu.npu_group_norm_silu", "8.0.RC1", "group_norm silu"),
    *_entries("torch.addmm", "8.0.RC1", "mul mul add"),
    *_entries("torch_npu.npu_add_layer_norm", "8.0.RC1", "add layer_norm"),
    *_entries("mindspeed.ops.npu_matmul_add", "8.0.RC3", "matmul add"),
    *_entries("mindspeed.ops.npu_moe_token_permute", "8.0.RC3", "argsort argsort index_select"),
    *_entries("mindspeed.ops.npu_moe_token_unpermute", "8.0.RC3", "index_select mul reduce_sum"),
)
