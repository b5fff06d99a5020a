"""Duration events (``"ph": "B"`` / ``"E"``) paired into complete events.

The Trace Event Format (Chrome's "Trace Event Format" document, *Duration Events*): a ``B`` opens a slice on
its thread and the next ``E`` on the same ``(pid, tid)`` closes the most recent open one (slices nest as a
stack); the slice is ``[B.ts, E.ts)`` with ``B``'s name and category, and "the args of the E event are merged
with those of the B event" (a key both give takes ``E``'s value, as Chrome's trace viewer does:
:func:`merge_args`). Each pair becomes one complete (``X``) event with ``dur = E.ts - B.ts``. What cannot be paired is counted by cause, never dropped silently:
an ``E`` with no open ``B`` (``unmatched end``), a ``B`` never closed (``unclosed begin``), a pair whose
``ts`` is not a number or whose end is before its begin (``bad ts``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import msgspec


def _number(value: Any) -> float | None:
    """A finite ``ts`` (a number, or a numeric string as Ascend writes it) as a float, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        out = float(value)
    except (ValueError, OverflowError):
        return None
    return out if math.isfinite(out) else None


def merge_args(b: Any, e: Any) -> Any:
    """``B``'s args with the keys ``E``'s args give merged over them (module docstring). Both are the reader's
    args structs (the keys it reads); a field ``E`` leaves at its default ("absent") keeps ``B``'s value."""
    if b is None:
        return e
    if e is None or type(b) is not type(e):
        return b
    given = {f.name: getattr(e, f.name) for f in msgspec.structs.fields(e)
             if not _absent(getattr(e, f.name), f.default)}
    if not given:
        return b
    return type(b)(**{f.name: given.get(f.name, getattr(b, f.name)) for f in msgspec.structs.fields(b)})


def _absent(value: Any, default: Any) -> bool:
    """Whether an args field holds its default (NaN defaults compared as NaN)."""
    if value is default or (type(value) is type(default) and value == default):
        return True
    return isinstance(value, float) and isinstance(default, float) and math.isnan(value) and math.isnan(default)


@dataclass
class DurationPairs:
    """Open ``B`` events per ``(pid, tid)``, the pairs closed and the counts by cause."""

    open: dict[tuple[Any, Any], list[Any]] = field(default_factory=dict)
    n_paired: int = 0
    dropped: dict[str, int] = field(default_factory=dict)

    def add(self, e: Any, complete: type) -> Any | None:
        """Feed one ``B`` or ``E`` (in file order); returns the complete event (``complete(ph="X", ...)``)
        when ``e`` closes a slice, else None."""
        key = (str(e.pid), str(e.tid))
        if e.ph == "B":
            self.open.setdefault(key, []).append(e)
            return None
        stack = self.open.get(key)
        if not stack:
            self._drop("unmatched end")
            return None
        b = stack.pop()
        t0, t1 = _number(b.ts), _number(e.ts)
        if t0 is None or t1 is None or t1 < t0:
            self._drop("bad ts", 2)
            return None
        self.n_paired += 1
        return complete("X", b.name, b.cat, b.pid, b.tid, b.ts, t1 - t0, merge_args(b.args, e.args))

    def _drop(self, cause: str, n: int = 1) -> None:
        self.dropped[cause] = self.dropped.get(cause, 0) + n

    def finish(self) -> dict[str, int]:
        """Counts of the events left unpaired, by cause (the open ``B`` events are ``unclosed begin``)."""
        unclosed = sum(len(s) for s in self.open.values())
        if unclosed:
            self._drop("unclosed begin", unclosed)
            self.open.clear()
        return dict(sorted(self.dropped.items()))


def note(path: Any, pairs: DurationPairs) -> str | None:
    """The warning for a trace with duration events (None when it has none)."""
    dropped = pairs.finish()
    if not pairs.n_paired and not dropped:
        return None
    lost = sum(dropped.values())
    causes = ", ".join(f"{c} {n:,}" for c, n in dropped.items())
    text = f"{path}: {pairs.n_paired:,} begin/end ('B'/'E') pairs read as complete events"
    return text + (f"; dropped {lost:,} duration events that could not be paired ({causes})" if lost else "")
