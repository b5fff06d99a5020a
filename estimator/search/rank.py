"""Ranking, the Pareto front and the bounded partial result a sweep (or one partition of it) reduces to.

A :class:`Partial` holds counts, the top K by the objective and the Pareto set of (step time, peak
memory); two partials merge into the partial of the union, so a sweep split into partitions
reduces to the same result as one pass (top K and front are exact, counts add).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from estimator.search.evaluate import Candidate, Rejection

#: where a layout sits in the sweep order (see :class:`Partial`); tuples compare lexicographically
Position = tuple[int, ...]

#: objective -> sort key (smaller is better); ties broken by the overrides' text
OBJECTIVES: dict[str, Callable[[Candidate], float]] = {
    "time": lambda c: c.total_s,
    "memory": lambda c: c.peak_mb,
    "tokens_per_s": lambda c: -c.tokens_per_s,
}


def sort_key(objective: str) -> Callable[[Candidate], tuple[float, tuple[str, ...]]]:
    """Objective value first, then the overrides' text: one total order for every run."""
    value = OBJECTIVES[objective]
    return lambda c: (value(c), c.key())


def dominates(a: Candidate, b: Candidate) -> bool:
    """a is no worse than b in step time and peak memory and better in one of them."""
    return a.total_s <= b.total_s and a.peak_mb <= b.peak_mb and (a.total_s < b.total_s or a.peak_mb < b.peak_mb)


def pareto_front(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Non-dominated candidates in (total_s, peak_mb), fastest first.

    Sweep by step time (then memory, then overrides): a candidate is on the front when its peak
    is below every faster candidate's — O(n log n). Equal (time, memory) pairs keep the first in
    that order only, so the front does not depend on the partitioning.
    """
    ordered = sorted(candidates, key=lambda c: (c.total_s, c.peak_mb, c.key()))
    front: list[Candidate] = []
    best_mb = float("inf")
    for c in ordered:
        if c.peak_mb < best_mb:
            front.append(c)
            best_mb = c.peak_mb
    return front


def chosen_rows(objective_value: np.ndarray, total_s: np.ndarray, peak_mb: np.ndarray, top_k: int) -> np.ndarray:
    """Indices of the rows of a batch that can reach the top ``top_k`` by ``objective_value`` or
    the Pareto front of (total_s, peak_mb): every row at or below the k-th smallest value, and every
    row not dominated by another (rows equal in both stay together: the tie is broken later by the
    overrides, :func:`pareto_front`). A superset, so the reduction stays exact."""
    n = len(objective_value)
    if n <= top_k:
        return np.arange(n)
    kth = np.partition(objective_value, top_k - 1)[top_k - 1]
    order = np.lexsort((peak_mb, total_s))
    t, m = total_s[order], peak_mb[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (t[1:] != t[:-1]) | (m[1:] != m[:-1])
    best_before = np.concatenate(([np.inf], np.minimum.accumulate(m)[:-1]))
    starts = np.flatnonzero(new)
    run_kept = m[starts] < best_before[starts]
    front = order[run_kept[np.cumsum(new) - 1]]
    return np.union1d(np.flatnonzero(objective_value <= kth), front)


#: objective -> (candidate column, sign) so that smaller is better, for :func:`chosen_rows`
OBJECTIVE_COLUMNS: dict[str, tuple[str, float]] = {
    "time": ("total_s", 1.0), "memory": ("peak_mb", 1.0), "tokens_per_s": ("tokens_per_s", -1.0),
}


@dataclass
class Partial:
    """The bounded summary of a set of evaluated layouts.

    Rejection examples keep the earliest layout in sweep order: its position is (``origin``, then
    the position inside this partial's sweep), and partitions of a sweep are contiguous blocks of
    it in ``origin`` order, so merging keeps the example a single pass gives, in any merge order.
    """

    objective: str = "time"
    top_k: int = 20
    evaluated: int = 0
    feasible: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    #: one full message per rejection reason (the first in sweep order) and where it was seen
    examples: dict[str, str] = field(default_factory=dict)
    example_at: dict[str, Position] = field(default_factory=dict)
    ranked: list[Candidate] = field(default_factory=list)
    pareto: list[Candidate] = field(default_factory=list)
    #: the index of the partition this partial sweeps (0 for a whole sweep)
    origin: int = 0

    def add(self, outcomes: Iterable[Candidate | Rejection], positions: Sequence[Position] | None = None) -> None:
        """Fold evaluated layouts in (keeps at most ``top_k`` ranked and the current front).
        ``positions``: each outcome's place in the sweep; default: the order they come in."""
        batch: list[Candidate] = []
        for i, out in enumerate(outcomes):
            pos = positions[i] if positions is not None else (self.evaluated,)
            if isinstance(out, Rejection):
                self.reject(out.reason, 1, pos, out.message)
            else:
                self.evaluated += 1
                self.feasible += 1
                batch.append(out)
        if batch:
            self._absorb(batch)

    def reject(self, reason: str, count: int, pos: Position, message: str | Callable[[], str]) -> None:
        """Count ``count`` layouts rejected for ``reason``; the earliest of them sits at ``pos`` and
        its message is ``message`` (a callable is called only when that example is kept)."""
        self.evaluated += count
        self.rejected[reason] += count
        self._offer(reason, (self.origin, *pos), message)

    def accept(self, count: int, candidates: list[Candidate]) -> None:
        """Count ``count`` feasible layouts, of which ``candidates`` include every one that can
        reach the top K or the front (:func:`chosen_rows`)."""
        self.evaluated += count
        self.feasible += count
        if candidates:
            self._absorb(candidates)

    def _offer(self, reason: str, at: Position, message: str | Callable[[], str]) -> None:
        if reason not in self.example_at or at < self.example_at[reason]:
            self.examples[reason] = message() if callable(message) else message
            self.example_at[reason] = at

    def _absorb(self, batch: list[Candidate]) -> None:
        unique = {c.key(): c for c in [*self.ranked, *batch]}
        self.ranked = sorted(unique.values(), key=sort_key(self.objective))[: self.top_k]
        self.pareto = pareto_front({c.key(): c for c in [*self.pareto, *batch]}.values())

    def merge(self, other: Partial) -> Partial:
        """This partial with ``other`` folded in (the partial of the union)."""
        self.evaluated += other.evaluated
        self.feasible += other.feasible
        self.rejected.update(other.rejected)
        for reason, message in other.examples.items():
            self._offer(reason, other.example_at[reason], message)
        self._absorb([*other.ranked, *other.pareto])
        return self
