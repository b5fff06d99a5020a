"""The analyzer bridge: the host time per launch measured on a real profile, for the estimator.

Estimator and analyzer do not import each other (ARCHITECTURE); the harness is where a number
the analyzer measures becomes an estimator option.
"""

from __future__ import annotations

from typing import Any

from ndval.core import cache
from ndval.harness.kinds import KindError


def measured_host_launch_cost(relative: str) -> dict[str, Any]:
    """The host µs per launch measured by the analyzer on a real profile, with its record.

    ``analyzer.indicators.launch_intervals`` over every rank of the profile (median start-to-start
    interval of consecutive launch calls of one host thread). This is the one place estimator and
    analyzer meet for it (ARCHITECTURE: they do not import each other). Skips the case when the
    profile is absent; a profile is read once per process.
    """
    from ndval.harness.kinds.analyzer import resolve_profile

    return dict(_host_launch_record(str(resolve_profile(relative)), relative))


@cache.memoize("harness.host_launch_records", bound=8, key="(file path, relative name)", holds="the measured record")
def _host_launch_record(path: str, relative: str) -> dict[str, Any]:
    import pandas as pd

    from analyzer.dataset import load_dataset
    from analyzer.indicators import launch_intervals
    from analyzer.ingest.errors import IngestError

    try:
        ds = load_dataset(path)
    except IngestError as exc:
        raise KindError(f"host_launch_cost_from: {relative}: {exc}") from None
    li = launch_intervals(pd.concat([r.events for r in ds.ranks], ignore_index=True))
    if li is None:
        raise KindError(f"host_launch_cost_from: {relative}: no host thread launches twice (no runtime-layer "
                        "launch events in the profile), nothing to measure")
    return {"value_us": li.median_us, "p25_us": li.p25_us, "p75_us": li.p75_us, "intervals": li.count,
            "threads": li.threads, "profile": relative,
            "method": "analyzer.indicators.launch_intervals: median start-to-start interval of consecutive launch "
                      "calls of one host thread, pooled over threads and ranks"}


#: what the records say when no measured host cost is given
HOST_DEFAULT = "profile default (estimator.inputs.profiles.HOST_LAUNCH_COST)"


def host_options(host: dict[str, Any] | None) -> dict[str, Any]:
    """Estimator options of a measured host cost record (empty: the profile default applies)."""
    return {"host_launch_cost_us": host["value_us"]} if host else {}
