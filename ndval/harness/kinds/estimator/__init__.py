"""Estimator kinds, one per module: ``estimator.memory`` (:mod:`.memory`), ``estimator.perf``
(:mod:`.perf`), ``estimator.invariance`` (:mod:`.invariance`), ``estimator.moe_layer``
(:mod:`.moe_layer`), ``estimator.experiments.ablation`` (:mod:`.ablation`); :mod:`.common` turns a row
into an estimator config and :mod:`.host_cost` is the analyzer bridge (host time per launch measured on a
profile).

Each drives the public estimator API (spec §2 of estimator.md): ``load_config``,
``estimate_memory``, ``estimate_perf``, ``presets``. Importing this package registers the kinds.
"""

from ndval.harness.kinds.estimator import ablation, invariance, memory, moe_layer, perf

__all__ = ["ablation", "invariance", "memory", "moe_layer", "perf"]
