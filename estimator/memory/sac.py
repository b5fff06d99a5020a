"""Selective activation checkpointing as torchtitan applies it (``recompute.selective_ac_option``).

Source: pytorch/torchtitan@9dec370 ``torchtitan/parallelisms/parallelize_llama.py``
(``_apply_ac_to_transformer_block``), the commit of the torchtitan H100 benchmark rows:

- **op** (``selective_ac_option = "op"``): each transformer block is wrapped in a non-reentrant
  checkpoint whose policy returns ``MUST_SAVE`` for the outputs of the ops in ``_save_list`` —
  ``aten.mm``, ``aten._scaled_dot_product_flash_attention`` / ``_efficient_attention``,
  ``_c10d_functional.reduce_scatter_tensor``, ``aten.abs``, ``aten.max`` — *except every second
  mm*: a counter in ``meta`` (a fresh ``defaultdict`` per checkpointed call, so per block) counts
  mm calls and the even-numbered ones are recomputed. Everything else is recomputed in backward.
  What a block keeps between forward and backward is therefore its input (the checkpoint's
  argument) plus the saved op outputs.
- **layer** (``selective_ac_option = "<n>"``): every n-th block (``_count % n == 0`` with a
  counter starting at 1, i.e. 0-based layers n−1, 2n−1, …) is fully checkpointed (keeps only its
  input); the others are not checkpointed at all.

Forward mm order of a torchtitan Llama block: ``wq``, ``wk``, ``wv`` (attention input
projections), ``wo``, then ``w1``, ``w3``, ``w2`` (SwiGLU ``w2(silu(w1(x)) * w3(x))``; a GeLU MLP has
``fc1``, ``fc2``). So op-level SAC saves wq, wv, w1, w2 outputs (odd positions 1, 3, 5, 7) and
recomputes wk, wo, w3. With TP t (torchtitan's plan: column-parallel wq/wk/wv/w1/w3, row-parallel
wo/w2 with sequence-parallel outputs) column outputs are /t, row-parallel local mm outputs are
full-size partial sums, and the reduce-scatter of wo and w2 (saved op) is T·h/t.

Not modelled: ``aten.abs`` outputs under Float8 linears (torchao computes amax as
``max(abs(x))``; under torch.compile the abs fuses into the reduction and no full-size tensor is
materialised), the tiny ``max`` outputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.inputs.derive import layer_kind, sequence_shard
from estimator.inputs.params import gated_mlp
from estimator.inputs.profiles import resolved_bytes

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig

#: fp32 log-sum-exp kept per head and token by the flash / memory-efficient SDPA kernels
SDPA_LSE_BYTES = 4


def mm_outputs_per_token(cfg: EstimatorConfig) -> list[float]:
    """Elements per token of each mm output of one dense block, in forward order (local to the rank)."""
    m, t = cfg.model, cfg.parallel.tp
    a, g, d, h = m.num_attention_heads, m.kv_heads, m.head_size, m.hidden_size
    # row-parallel wo / w2: the local mm output is a full-size partial sum (reduced afterwards)
    attention = [a * d / t, g * d / t, g * d / t, h]
    fc1 = [m.dense_ffn / t] * (2 if gated_mlp(m.activation) else 1)  # SwiGLU / quick-GeGLU: w1, w3
    return attention + fc1 + [h]


def op_sac_layer_bytes(cfg: EstimatorConfig, index: int) -> float:
    """Bytes one block keeps under torchtitan's op-level policy, per micro-batch.

    = input T·h·B/r + Σ odd-numbered mm outputs ·B + SDPA output T·a·d·B/t and log-sum-exp
    T·a·4/t (flash/efficient kernels only; the math kernel is not in the save list) + with
    t > 1 the two reduce-scatter outputs 2·T·h·B/t. T = s·b/cp tokens, B compute bytes,
    r = t with sequence parallelism else 1.
    """
    if layer_kind(cfg.model, index) != "dense":
        raise ValueError("op-level SAC is modelled for dense blocks only (config validation rejects others)")
    m, p, tr = cfg.model, cfg.parallel, cfg.train
    tokens = tr.seq_length * tr.micro_batch_size / p.cp
    b_c, t, r = resolved_bytes(cfg).compute, p.tp, sequence_shard(cfg)
    saved = tokens * m.hidden_size * b_c / r
    saved += sum(n for k, n in enumerate(mm_outputs_per_token(cfg), start=1) if k % 2 == 1) * tokens * b_c
    if tr.flash_attention:
        a, d = m.num_attention_heads, m.head_size
        saved += tokens * a * d * b_c / t + tokens * a * SDPA_LSE_BYTES / t
    if t > 1:
        saved += 2 * tokens * m.hidden_size * b_c / t
    return saved


def layer_level_every(cfg: EstimatorConfig) -> int | None:
    """n of layer-level SAC (``selective_ac_option: "<n>"``), or None for any other policy."""
    option = cfg.recompute.selective_ac_option
    return int(option) if option is not None and option.isdigit() else None


def layer_checkpointed(index: int, every: int) -> bool:
    """Layer-level SAC: 0-based layer ``index`` is fully checkpointed when (index + 1) is a multiple of ``every``."""
    return (index + 1) % every == 0
