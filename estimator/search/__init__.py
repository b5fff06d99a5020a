"""Strategy search: enumerate the parallel layouts of a cluster, drop the invalid and the ones that do
not fit in device memory, rank the rest (step time, memory or tokens/s) and give the Pareto front.

``space`` says which layouts (dimensions and values, uneven pipeline splits, vpp × schedule);
``evaluate`` prices one layout on the scalar path; ``grid`` enumerates a space as numpy rows
grouped by pipeline structure and ``price`` prices them batched (config rules as masks,
``batched`` memory, ``batched_time`` step time); ``rank`` reduces priced layouts to a bounded
result; ``run`` sweeps in this process; ``distributed`` partitions a sweep over Dask workers.
"""

from estimator.search.evaluate import Candidate, Rejection, evaluate, search_base
from estimator.search.rank import OBJECTIVES, Partial, pareto_front
from estimator.search.run import SearchResult, search
from estimator.search.space import (
    DEFAULT_SPACE,
    SPLIT_DIM,
    Layout,
    SkippedLayout,
    SpaceError,
    layouts,
    parse_space,
)

__all__ = [
    "DEFAULT_SPACE", "OBJECTIVES", "SPLIT_DIM", "Candidate", "Layout", "Partial", "Rejection",
    "SearchResult", "SkippedLayout", "SpaceError", "evaluate", "layouts", "pareto_front", "parse_space",
    "search", "search_base",
]
