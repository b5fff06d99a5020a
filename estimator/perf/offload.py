"""Transformer Engine's CPU activation offload in time: the copies to and from host memory run on a side stream
beside the layers' compute; what does not fit is exposed on the compute stream.

Megatron-Core opens TE's offload context with ``cpu_offloading_num_layers`` N of the model's L layers
(NVIDIA/Megatron-LM@d98e8a64dd ``transformer_block.py`` ``get_cpu_offload_context``); TE's default schedule
(NVIDIA/TransformerEngine@d0067d0da ``docs/features/other_optimizations/cpu_offloading/cpu_offloading.rst``,
"Default Offloading Scheduling"):

- the first N layers are offloaded; a layer's copy to the host starts as soon as it saves tensors for backward
  (priced: from the layer's start, finishing no earlier than the layer's end) and the copies run one after
  another on one stream;
- at most L − N layers' activations are on the GPU at any time: "both compute and reload may be stalled to
  enforce this limit" — the forward of layer j (j ≥ N) waits until no more than L − 1 − j copies are pending
  (so every copy has finished when the last layer starts);
- in the backward, a freed layer's slot lets the next reload start (layer N − k after the k-th backward layer,
  k = 1 … N, counted from the last layer), reloads run one after another, and "reloading must complete by the
  time the tensor is needed for the layer's backward pass".

A copy takes its layer's activation bytes (:func:`estimator.memory.activation.layer_activation_bytes`, one
micro-batch) over the host link (``hardware.host_link_gb_s``, :mod:`estimator.inputs.host_link`). The stall of
each pass is added to that pass's compute part (FW_COMPUTE / BW_COMPUTE, hence COMP): the compute stream waits.
Megatron allows the offload without pipeline parallelism and without recompute only
(:mod:`estimator.config.rules`), so one stage runs all L layers, one micro-batch after another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from estimator.memory.activation import layer_activation_bytes
from estimator.perf import roofline
from estimator.shared.arrays import maximum
from ndval.core.units import BYTES_PER_GB

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig
    from estimator.inputs.derive import StageLayout
    from estimator.perf.context import Ctx


@dataclass(frozen=True)
class OffloadTime:
    """Seconds per micro-batch of the offload copies: their total (both directions) and the stall each pass
    takes (forward, backward); hidden = copies − stalls where a stall is shorter than the copies."""

    copies_s: float
    forward_stall_s: float
    backward_stall_s: float

    @property
    def exposed_s(self) -> float:
        return self.forward_stall_s + self.backward_stall_s

    @property
    def hidden_s(self) -> float:
        return maximum(0.0, self.copies_s - self.exposed_s)


def forward_stall_s(forward_s: Sequence[float], copy_s: Sequence[float]) -> float:
    """Stall of the forward pass under TE's offload limit (module docstring).

    ``forward_s[j]``: layer j's forward seconds (L layers); ``copy_s[i]``: layer i's copy to the host
    (N = len(copy_s) < L layers). With s_j the start of layer j and c_i the end of copy i:
    ``c_i = max(max(s_i, c_{i−1}) + x_i, s_i + f_i)``; ``s_j = s_{j−1} + f_{j−1}``, held back to ``c_{k−1}``
    when k > 0, where k = min(j, N) − a_j and a_j = L − N − 1 − max(0, j − N) is how many copies may still be
    pending (layers N … j−1 and j itself hold the other slots; a_{L−1} = 0). Returns
    ``s_{L−1} + f_{L−1} − Σ f``."""
    n, layers = len(copy_s), len(forward_s)
    t = 0.0
    link = 0.0
    done: list[float] = []
    for j, f in enumerate(forward_s):
        k = min(j, n) - (layers - n - 1 - max(0, j - n))
        if k > 0:
            t = maximum(t, done[k - 1])
        if j < n:
            link = maximum(maximum(t, link) + copy_s[j], t + f)
            done.append(link)
        t = t + f
    return maximum(0.0, t - sum(forward_s))


def backward_stall_s(backward_s: Sequence[float], copy_s: Sequence[float]) -> float:
    """Stall of the backward pass: reloads behind freed slots, each done before its layer's backward.

    ``backward_s[j]``: layer j's backward seconds (run from j = L − 1 down to 0); ``copy_s[i]``: layer i's
    reload (i < N). When layer j's backward ends at e_j, the reload of layer ``j − (L − N)`` (if ≥ 0) starts at
    ``max(e_j, r_prev)`` and ends ``x`` later (r); layer i < N starts its backward at ``max(e_{i+1}, r_i)``.
    Returns ``e_0 − Σ g``."""
    n, layers = len(copy_s), len(backward_s)
    t = 0.0
    link = 0.0
    ready: dict[int, float] = {}
    for j in range(layers - 1, -1, -1):
        if j < n:
            t = maximum(t, ready[j])
        t = t + backward_s[j]
        reload = j - (layers - n)
        if reload >= 0:
            link = maximum(t, link) + copy_s[reload]
            ready[reload] = link
    return maximum(0.0, t - sum(backward_s))


def offload_time(cfg: EstimatorConfig, layout: StageLayout, layer_seconds: Sequence[tuple[float, float]]) -> OffloadTime | None:
    """The offload copies and stalls of the stage ``layout`` (``layer_seconds``: each layer's forward and
    backward device seconds, in order) over the hardware's host link (:func:`unpriced_reason` None)."""
    n = cfg.train.cpu_offloading_num_layers
    rate = cfg.hardware.host_link_gb_s
    assert rate is not None
    mode = cfg.stage_recompute(layout.stage)
    layers = list(layout.layers)
    copies = [layer_activation_bytes(cfg, i, mode) / (rate * BYTES_PER_GB) for i in layers if i < n]
    forward = [f for f, _ in layer_seconds]
    backward = [b for _, b in layer_seconds]
    return OffloadTime(2.0 * sum(copies), forward_stall_s(forward, copies), backward_stall_s(backward, copies))


def stage_offload(cfg: EstimatorConfig, ctx: Ctx, layout: StageLayout) -> OffloadTime | None:
    """:func:`offload_time` of the stage over the roofline's per-layer seconds
    (:func:`estimator.perf.roofline.layer_pass_seconds`), or None: no offload, or compute not priced operator
    by operator (:func:`unpriced_reason`)."""
    if not cfg.train.cpu_offloading_num_layers or unpriced_reason(cfg) is not None:
        return None
    return offload_time(cfg, layout, roofline.layer_pass_seconds(cfg, ctx, layout))


def unpriced_reason(cfg: EstimatorConfig) -> str | None:
    """Why a config with ``train.cpu_offloading_num_layers`` has no offload copies priced, or None when they are:
    the one gate of :func:`stage_offload` and of the estimate's warning."""
    if not cfg.options.offload_copies:
        return "options.offload_copies is off"
    if cfg.hardware.host_link_gb_s is None:
        return f"hardware {cfg.hardware.name} has no host_link_gb_s (GB/s per direction to host memory)"
    if not roofline.roofline_active(cfg):
        return "compute is not priced operator by operator (options.operator_roofline, hardware.efficiency)"
    return None
