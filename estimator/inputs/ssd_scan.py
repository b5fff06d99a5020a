"""The Mamba-2 SSD chunked scan's achieved HBM share on the B200, measured (``efficiency.ssd_scan_memory``).

ndval prices the scan as one operator (:func:`estimator.perf.mamba.mamba_ops`): its FLOPs on the matmul table, its
bytes (:func:`estimator.perf.mamba.ssd_scan_bytes`) on the HBM share, plus a fixed latency per kernel (five forward).
On the Nemotron-3 shapes the bytes bind, so the HBM share sets the scan's time. The B200's general share (SimuMax's
0.666) is that of simple streaming kernels; the scan's Triton kernels reach much less.

NVIDIA's aiconfigurator timed that forward scan on a B200 (ai-dynamo/aiconfigurator@095f58a51c
``aic-core/src/aiconfigurator_core/systems/data/b200_sxm/linear_attention/trtllm/1.3.0rc15/mamba2_perf.parquet``,
kernel source ``mamba_chunk_scan_combined``: TensorRT-LLM's copy of mamba_ssm's Triton SSD kernels, the ones
Megatron-Core's ``MambaMixer`` calls in training; ``collector/trtllm/collect_mamba2.py``), on the mixers of
Nemotron-3 Nano, Super and Ultra (64 / 128 / 256 heads of 64, state 128, 8 groups, chunk 128), batch 1–64, 4096
to 262,144 tokens per call (a pre-training micro-batch and more): 116 rows. Per row, the share under which ndval's
operator reproduces the measured time is

    ``share = bytes / (HBM · (t_measured − 5 · kernel_latency))``  (HBM 8 TB/s, kernel latency 30 µs)

median **0.2697** (IQR 0.2535 – 0.2972). The backward's eleven gradient kernels and four recomputed ones are the
same family of Triton kernels and are taken at the same share (assumption: no measurement of the backward).
B300, GB200, GB300 and Rubin carry the B200's efficiencies and this share with them (assumption, stated in each
source); the Hopper presets have no measurement and keep the general table. ``options.ssd_scan_memory: false``
prices the scan on the general table, as before.
"""

from __future__ import annotations

from typing import Any

#: the median share of the module docstring, and its source
SSD_SCAN_MEMORY = 0.2697
SSD_SCAN_SOURCE = ("ai-dynamo/aiconfigurator@095f58a51c aic-core/src/aiconfigurator_core/systems/data/b200_sxm/"
                   "linear_attention/trtllm/1.3.0rc15/mamba2_perf.parquet (kernel mamba_chunk_scan_combined, "
                   "measured): median over 116 Nemotron-3 Nano / Super / Ultra rows of 4096+ tokens of ndval's scan "
                   "bytes / (8 TB/s · (latency - 5 · 30 us)) = 0.2697 (IQR 0.2535-0.2972; estimator.inputs.ssd_scan); "
                   "the backward at the same share (assumption)")


def with_ssd_scan(efficiency: dict[str, Any]) -> dict[str, Any]:
    """``efficiency`` (the B200's block) with :data:`SSD_SCAN_MEMORY` and its source."""
    return {**efficiency, "ssd_scan_memory": SSD_SCAN_MEMORY,
            "sources": {**efficiency["sources"], "ssd_scan_memory": SSD_SCAN_SOURCE}}
