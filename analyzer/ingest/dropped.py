"""Events left out of a rank's event table, counted (``dataset.RankData.dropped_events``)."""

from __future__ import annotations

from typing import Any


class DroppedEvents(tuple[int, str]):
    """``(count, reason)`` of the complete events left out of the event table (a 2-tuple, so
    ``n, why = rank.dropped_events`` works), plus ``by_category``: count per event-table category
    (``unparsed`` for events with a bad ts/dur, which never got one). ``to_dict()`` for JSON."""

    by_category: dict[str, int]

    def __new__(cls, count: int = 0, reason: str = "", by_category: dict[str, int] | None = None) -> DroppedEvents:
        self = super().__new__(cls, (int(count), str(reason)))
        self.by_category = dict(by_category or {})
        return self

    def __getnewargs__(self) -> tuple[int, str]:  # copy
        return (self[0], self[1])

    def __reduce__(self) -> tuple[type[DroppedEvents], tuple[int, str, dict[str, int]]]:
        """Pickle with ``by_category`` (ranks read in worker processes)."""
        return (DroppedEvents, (self[0], self[1], dict(self.by_category)))

    @property  # a count of events, not tuple.count(value)
    def count(self) -> int:  # type: ignore[override]
        """Events dropped."""
        return int(self[0])

    @property
    def reason(self) -> str:
        """Why (bad ts/dur, event budget ...)."""
        return str(self[1])

    def to_dict(self) -> dict[str, Any]:
        """``{"count", "reason", "by_category"}`` (stable keys)."""
        return {"count": self.count, "reason": self.reason, "by_category": dict(sorted(self.by_category.items()))}
