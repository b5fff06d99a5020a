"""Context parallelism of the Mamba-2 and Gated DeltaNet mixers: all-to-alls between sequence and head sharding.

Megatron-Core runs both mixers over CP the same way (NVIDIA/Megatron-LM@d98e8a64dd
``megatron/core/ssm/mamba_context_parallel.py`` ``MambaContextParallel.pre_conv_ssm`` / ``post_conv_ssm``;
``megatron/core/ssm/gated_delta_net/common.py`` ``a2a_cp_to_hp`` / ``a2a_hp_to_cp``): in_proj runs on the
rank's s/cp tokens; its output is re-sharded from sequence to heads (all-to-all over the CP group) so that the
conv and the scan / delta rule run over the whole sequence with 1/cp of the rank's heads; the scan's output
(Mamba: y, d_i/tp wide; GDN: the gated norm's output, n_v·d_v/tp wide) goes back to sequence sharding before
out_proj. The mixer's FLOPs and bytes per rank are those of s/cp tokens and all the rank's heads (linear in the
tokens), as priced without CP; CP adds:

- the all-to-alls, forward: Mamba five in (z, x, B, C, dt) and one out, GDN one in (q, k, v, z, β, α after a head
  permutation) and one out, each of ``b·(s/cp)·width·B_c`` bytes; the backward runs the conjugate ones
  (:data:`estimator.perf.comm.BACKWARD_COMM_FACTOR` ``cp_a2a``); they sit between the mixer's kernels, nothing
  runs beside them (exposed);
- the re-layout copies around them (each one read and one write of the tensor): in — ``all_to_all_sp2hp``'s
  concatenation, GDN's head permutation (``index_select``) or Mamba's concatenation of the five, and
  ``_undo_attention_load_balancing`` (the attention layers' load-balanced chunk order back to sequence order),
  3 copies of the in_proj output; out — ``_redo_attention_load_balancing`` and ``all_to_all_hp2sp``'s
  concatenation, 2 copies of the output. Kernels: GDN 3 + 2, Mamba 7 (five concatenations, the joint one, the
  re-order) + 2. The backward is priced as the same copies (the conjugate re-layouts; assumption).

Mamba with fewer groups per TP rank than cp replicates the group states across CP ranks (``group_repeat_count``),
which changes the scan's group terms; that case is refused (:mod:`estimator.config.mixer_rules`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.inputs.gdn import gdn_dims
from estimator.inputs.hybrid import mamba_dims
from estimator.perf.comm import Collective
from estimator.perf.operators import Op, elementwise
from estimator.shared.arrays import all_true, where

if TYPE_CHECKING:
    from estimator.config.schema import ModelConfig

#: all-to-alls of one mixer's forward (in, out) and its re-layout kernels (in, out) under CP
MIXER_CP_CALLS = {"mamba": ((5, 1), (7, 2)), "gdn": ((1, 1), (3, 2))}
#: copies of the in_proj output and of the scan's output around the all-to-alls (each one read + one write)
IN_COPIES, OUT_COPIES = 3, 2
#: the recompute modules of the re-layout after the scan: GDN's ``gdn_norm_out`` re-runs the gated norm and its
#: HP-to-CP all-to-all (Megatron-Core ``TransformerConfig.recompute_modules``)
_OUT_MODULES = {"mamba": ("mamba",), "gdn": ("gdn", "gdn_norm_out")}


def mixer_cp_widths(model: ModelConfig, mixer: str, tp: int) -> tuple[float, float]:
    """(in_proj output, scan output) widths of one mixer per TP rank: Mamba (2·d_i + 2·g·N + n_h, d_i) / tp,
    GDN (2·n_k·d_k + 2·n_v·d_v + 2·n_v, n_v·d_v) / tp."""
    if mixer == "mamba":
        m = mamba_dims(model)
        return m.in_proj_width / tp, m.inner / tp
    g = gdn_dims(model)
    return g.in_proj_width / tp, g.v_width / tp


def mixer_cp_collectives(mixer: str, tokens_local: float, in_width: float, out_width: float, bytes_compute: float,
                         cp: int) -> list[Collective]:
    """Forward all-to-alls of one mixer layer (``mixer``: ``mamba`` / ``gdn``) under CP: the in_proj output
    (``in_width`` per TP rank) in the mixer's sections and the scan's output (``out_width``), each of
    ``tokens_local·width·B_c`` bytes in all (``tokens_local`` = b·s/cp); none at cp = 1."""
    if all_true(cp <= 1):  # (arrays: rows with cp = 1 price 0, a group of one)
        return []
    calls_in, calls_out = MIXER_CP_CALLS[mixer][0]
    size = tokens_local * bytes_compute
    return [Collective("all_to_all", size * in_width / calls_in, cp, calls_in),
            Collective("all_to_all", size * out_width, cp, calls_out)]


def mixer_cp_relayout_ops(mixer: str, tokens_local: float, in_width: float, out_width: float, bytes_compute: int,
                          cp: int) -> list[Op]:
    """The re-layout copies of one mixer layer under CP (module docstring), before the conv (``2·T·B·3·w_in``
    bytes) and after the scan (``2·T·B·2·w_out``), forward and backward alike, with the mixer's kernels; GDN's
    second one is part of its gated norm's recompute module ``gdn_norm_out``; none at cp = 1."""
    if all_true(cp <= 1):
        return []
    (kernels_in, kernels_out), modules_out = MIXER_CP_CALLS[mixer][1], _OUT_MODULES[mixer]
    out: list[Op] = []
    for name, copies, width, kernels, modules in (("in", IN_COPIES, in_width, kernels_in, (mixer,)),
                                                  ("out", OUT_COPIES, out_width, kernels_out, modules_out)):
        moved = where(cp > 1, 2.0 * tokens_local * bytes_compute * copies * width, 0.0)
        count = where(cp > 1, float(kernels), 0.0)  # (arrays: rows with cp = 1 copy nothing)
        out.append(elementwise(f"{mixer}_cp_relayout_{name}", modules, moved, kernels=count, bw_kernels=count,
                               bw_bytes=moved))
    return out
