"""ndval analyzer: real profiler output in; bottleneck verdict, evidence, root causes, advice and gains out.

Public API (spec ``analyzer.md`` §5)::

    from analyzer import load_dataset, analyze
    analysis = analyze(load_dataset(path), thresholds=None, phase_override=None)
    analysis.to_dict()

``compare(before, after)`` is re-exported when ``analyzer.compare`` provides it. Imports are lazy so that
``import analyzer`` stays cheap (the CLI dispatcher imports subcommand modules eagerly).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from analyzer.analysis import Analysis
    from analyzer.dataset import Dataset

__all__ = ["analyze", "compare", "load_dataset"]


def load_dataset(path: Any, **opts: Any) -> Dataset:
    """Read a profile (Ascend text export dir / parent of ranks / Kineto trace); see ``analyzer.dataset``."""
    from analyzer.dataset import load_dataset as _load

    return _load(path, **opts)


def analyze(dataset: Dataset, thresholds: Any = None, phase_override: str | None = None, layout: Any = None) -> Analysis:
    """Analyse every rank and scope of ``dataset``; see ``analyzer.analysis.analyze`` (``layout``: a
    ``analyzer.comm_groups.Layout``)."""
    from analyzer.analysis import analyze as _analyze

    return _analyze(dataset, thresholds=thresholds, phase_override=phase_override, layout=layout)


def compare(before: Any, after: Any, *args: Any, **kwargs: Any) -> Any:
    """Before/after comparison (``analyzer.compare.compare``)."""
    from analyzer.compare import compare as _compare

    return _compare(before, after, *args, **kwargs)
