"""Ranking, the Pareto front and the bounded partial result a sweep (or one partition of it) reduces to.

A :class:`Partial` holds counts, the top K by the objective and the Pareto set of (step time, peak
memory); two partials merge into the partial of the union, so a sweep split into partitions
reduces to the same result as one pass (top K and front are exact, counts add).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from estimator.search.evaluate import Candidate, Rejection

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


@dataclass
class Partial:
    """The bounded summary of a set of evaluated layouts."""

    objective: str = "time"
    top_k: int = 20
    evaluated: int = 0
    feasible: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    #: one full message per rejection reason (the first seen in sweep order)
    examples: dict[str, str] = field(default_factory=dict)
    ranked: list[Candidate] = field(default_factory=list)
    pareto: list[Candidate] = field(default_factory=list)

    def add(self, outcomes: Iterable[Candidate | Rejection]) -> None:
        """Fold evaluated layouts in (keeps at most ``top_k`` ranked and the current front)."""
        batch: list[Candidate] = []
        for out in outcomes:
            self.evaluated += 1
            if isinstance(out, Rejection):
                self.rejected[out.reason] += 1
                self.examples.setdefault(out.reason, out.message)
            else:
                self.feasible += 1
                batch.append(out)
        if batch:
            self._absorb(batch)

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
            self.examples.setdefault(reason, message)
        self._absorb([*other.ranked, *other.pareto])
        return self
