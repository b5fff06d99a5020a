"""The batched sweep: a grid of layouts (:mod:`estimator.search.grid`) priced group by group.

For each group (layouts that share their pipeline structure, :class:`~estimator.search.grid.Group`):

1. one representative config, validated section by section (``load_config(cross_fields=False)``);
   a section error rejects the whole group with the message the one-by-one path gives;
2. the cross-field rules (:mod:`estimator.config.rules`) as masks: every row keeps the field and
   message of the first rule it breaks;
3. memory per stage of the valid rows at once (:func:`estimator.search.batched.group_stage_memory`)
   and the OOM mask;
4. the step time of the rows that fit (:func:`estimator.search.batched_time.batch_step_time`, or
   one config at a time when its formulas branch on an array field);
5. a :class:`~estimator.search.evaluate.Candidate` only for the rows that can reach the top K or
   the Pareto front (:func:`~estimator.search.rank.chosen_rows`); counts by reason as arrays.

A group whose formulas branch on an array field is priced one config at a time, and its
candidates' ``path`` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from estimator.config.errors import ConfigError
from estimator.config.rules import SEARCH_TABLE, first_broken_index
from estimator.config.schema import EstimatorConfig, load_config
from estimator.memory import estimate_memory
from estimator.perf.parts import estimate_perf
from estimator.search.batched import array_config, group_stage_memory, stage_totals
from estimator.search.batched_time import batch_step_time
from estimator.search.evaluate import OVERRIDE_HINT, REASON_OOM, Candidate, reason_of, row_of
from estimator.search.grid import Grid, Group, Rows, Skipped
from estimator.search.rank import OBJECTIVE_COLUMNS, Partial, Position, chosen_rows

#: a layout's outcome as a flat row (``--csv``) and its place in the sweep
KeptRow = tuple[Position, dict[str, Any]]
#: rejected rows of a group: reason, row indices, message of row i
Rejections = tuple[str, np.ndarray, Callable[[int], str]]

#: the index :func:`first_broken_index` gives a row that keeps every rule of a search (:data:`SEARCH_TABLE`)
_VALID = len(SEARCH_TABLE)


@dataclass
class Pricing:
    """What one batched sweep needs besides the grid: the base data, the margin, where results go."""

    grid: Grid
    base_data: Mapping[str, Any]
    partial: Partial
    memory_margin_mb: float = 0.0
    rows: list[KeptRow] | None = None

    def price(self, piece: Rows) -> None:
        """Fold one piece of the grid into the partial (and the kept rows)."""
        if isinstance(piece, Skipped):
            self._skipped(piece)
        elif isinstance(piece, Group):
            self._group(piece)

    def _reject(self, piece: Rows, rows: np.ndarray, reason: str, message: Callable[[int], str]) -> None:
        """Count ``rows`` of ``piece`` as rejected for ``reason`` (message of row i: ``message(i)``)."""
        if not len(rows):
            return
        split_index = piece.split_index if isinstance(piece, Group) else 0
        first = int(rows[0])  # rows come in sweep order
        self.partial.reject(reason, len(rows), (int(piece.order[first]), split_index), lambda: message(first))
        if self.rows is not None:
            for i in rows.tolist():
                row = {**self.grid.overrides(piece, i), "feasible": False, "reason": reason, "message": message(i)}
                self.rows.append(((int(piece.order[i]), split_index), row))

    def _skipped(self, piece: Skipped) -> None:
        devices = self.grid.devices
        self._reject(piece, np.arange(len(piece)), "devices not divisible",
                     lambda i: f"{devices} devices are not divisible by tp·pp·cp = {int(piece.denominator[i])}")

    def _group(self, g: Group) -> None:
        rep, rejections, valid = self.screen(g)
        for reason, rows, message in rejections:
            self._reject(g, rows, reason, message)
        if rep is not None and len(valid):
            self._price_valid(g, rep, valid)

    def screen(self, g: Group) -> tuple[EstimatorConfig | None, list[Rejections], np.ndarray]:
        """The config rules over a group: its representative (None when a section error rejects
        every row), the rejected rows by reason with the message of each, and the valid rows."""
        overrides = self.grid.overrides(g, 0)
        try:
            rep = load_config(self.base_data, overrides, cross_fields=False)
        except ConfigError as exc:
            text = str(exc)
            return None, [(reason_of(exc), np.arange(len(g)), lambda i: text)], np.arange(0)
        first = first_broken_index(array_config(rep, g.columns), len(g), SEARCH_TABLE)
        by_reason: dict[str, list[int]] = {}
        for index in np.unique(first[first < _VALID]).tolist():
            by_reason.setdefault(f"invalid {SEARCH_TABLE[index].field_of(rep)}", []).append(index)
        rejections = [(reason, np.flatnonzero(np.isin(first, indices)),
                       _rule_message(g, rep, first, overrides.keys()))
                      for reason, indices in by_reason.items()]
        return rep, rejections, np.flatnonzero(first == _VALID)

    def _price_valid(self, g: Group, rep: EstimatorConfig, valid: np.ndarray) -> None:
        columns = {k: c[valid] for k, c in g.columns.items()}
        peak_mb, peak_stage, path = self._memory(g, rep, valid, columns)
        limit_mb = rep.hardware.hbm_mb - self.memory_margin_mb
        oom = peak_mb > limit_mb
        self._reject(g, valid[oom], REASON_OOM,
                     lambda i: f"peak {peak_mb[_at(valid, i)]:.0f} MiB (stage {peak_stage[_at(valid, i)]}) "
                     f"> {limit_mb:.0f} MiB")
        fit = ~oom
        if not fit.any():
            return
        rows = valid[fit]
        times = self._step_times(g, rep, rows, {k: c[fit] for k, c in columns.items()}, path)
        self._accept(g, rows, peak_mb[fit], peak_stage[fit], times, path)

    def _memory(self, g: Group, rep: EstimatorConfig, valid: np.ndarray, columns: dict[str, np.ndarray],
                ) -> tuple[np.ndarray, np.ndarray, str]:
        """Peak MiB and peak stage per valid row: batched, or one config at a time."""
        stages = group_stage_memory(rep, columns)
        if stages is not None:
            totals = stage_totals(stages, len(valid))
            peak_stage = np.argmax(totals, axis=1)  # the first stage at the peak, as MemoryReport.peak_stage
            return totals[np.arange(len(valid)), peak_stage], peak_stage, "batched"
        reports = [estimate_memory(self._config(g, i)) for i in valid.tolist()]
        return (np.array([r.peak_mb for r in reports], dtype=np.float64),
                np.array([r.peak_stage for r in reports], dtype=np.int64), "scalar")

    def _config(self, g: Group, row: int) -> EstimatorConfig:
        return load_config(self.base_data, self.grid.overrides(g, row))

    def _step_times(self, g: Group, rep: EstimatorConfig, rows: np.ndarray, columns: dict[str, np.ndarray],
                    path: str) -> dict[str, np.ndarray]:
        """total_s, tokens_per_s and mfu per row that fits: batched when the step-time formulas take
        the group (and the memory was batched), else one config at a time."""
        if path == "batched":
            perf = batch_step_time(array_config(rep, columns), len(rows))
            if perf is not None:
                return {k: np.broadcast_to(np.asarray(getattr(perf, k), dtype=np.float64), (len(rows),))
                        for k in ("total_s", "tokens_per_s", "mfu")}
        perfs = [estimate_perf(self._config(g, i)) for i in rows.tolist()]
        return {"total_s": np.array([p.total for p in perfs]), "tokens_per_s": np.array([p.tokens_per_s for p in perfs]),
                "mfu": np.array([p.mfu for p in perfs])}

    def _accept(self, g: Group, rows: np.ndarray, peak_mb: np.ndarray, peak_stage: np.ndarray,
                times: dict[str, np.ndarray], path: str) -> None:
        name, sign = OBJECTIVE_COLUMNS[self.partial.objective]
        value = sign * (peak_mb if name == "peak_mb" else times[name])
        keep = range(len(rows)) if self.rows is not None else chosen_rows(
            value, times["total_s"], peak_mb, self.partial.top_k).tolist()
        label = self.grid.label(g)
        chosen = [Candidate(self.grid.overrides(g, int(rows[j])), float(peak_mb[j]), float(times["total_s"][j]),
                            float(times["tokens_per_s"][j]), float(times["mfu"][j]), label, int(peak_stage[j]), path)
                  for j in keep]
        self.partial.accept(len(rows), chosen)
        if self.rows is not None:
            self.rows.extend(((int(g.order[rows[j]]), g.split_index), row_of(c)) for j, c in zip(keep, chosen, strict=True))


def _rule_message(g: Group, rep: EstimatorConfig, first: np.ndarray, keys: Any) -> Callable[[int], str]:
    """The message of row i of ``g``: its first broken rule on its own values, worded as
    ``load_config`` words it (the override hint on a field the layout sets)."""
    def message(i: int) -> str:
        rule = SEARCH_TABLE[int(first[i])]
        row = array_config(rep, {k: c[i].item() for k, c in g.columns.items()})
        field = rule.field_of(rep)
        return str(ConfigError(field, rule.message(row), hint=OVERRIDE_HINT if field in keys else None))

    return message


def _at(rows: np.ndarray, i: int) -> int:
    """Where row ``i`` of a group sits among ``rows`` (sorted)."""
    return int(np.searchsorted(rows, i))
