"""CUDA graphs: the host launches one captured graph where it launched the graph's kernels.

Transformer Engine's ``make_graphed_callables`` and Megatron-Core's ``--cuda-graph-impl``
(``transformer_engine``: per-layer graphs of each transformer layer's forward and backward; ``local``
with ``--cuda-graph-scope full_iteration``: the whole forward-backward of a step as one graph) replace
the kernel launches of what they capture by one ``cudaGraphLaunch`` (NVIDIA CUDA Programming Guide,
"CUDA Graphs": "a graph's work is launched as a single unit"; Megatron-Core
``transformer/cuda_graphs.py``). The host launch bound of a pass (:mod:`estimator.perf.stage`) counts

* ``train.cuda_graph: layers``: one launch per layer and pass (forward, backward, and recompute when
  the layer recomputes) instead of the layer's kernels; embedding, output layer and loss stay eager;
* ``full_iteration``: no launch inside the step (one graph launch per step, below every other term);
* ``none``: every kernel (the model before CUDA graphs). ``options.cuda_graphs: false`` restores that
  count whatever ``train.cuda_graph`` says (bit-identical numbers).

Device time does not change: the same kernels run (graph replay removes host work, not device work).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from estimator.perf.kernels import PassKernels

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig


def graph_mode(cfg: EstimatorConfig) -> str:
    """``train.cuda_graph`` when ``options.cuda_graphs`` is on, else ``none``."""
    return cfg.train.cuda_graph if cfg.options.cuda_graphs else "none"


def layer_launches(mode: str, eager: PassKernels) -> PassKernels:
    """Host launches of one layer per pass: its kernels (``none``), one graph per pass that runs
    (``layers``), none (``full_iteration``)."""
    if mode == "layers":
        return PassKernels(1.0, 1.0, 1.0 if eager.recompute else 0.0)
    if mode == "full_iteration":
        return PassKernels(0.0, 0.0, 0.0)
    return eager


def extra_launches(mode: str, eager: PassKernels) -> PassKernels:
    """Host launches of the embedding / output layer per pass: eager except under ``full_iteration``."""
    return PassKernels(0.0, 0.0, 0.0) if mode == "full_iteration" else eager
