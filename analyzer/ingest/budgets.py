"""Ingest budgets: what one trace may cost, and what happens when it asks for more.

Each budget, when exceeded, is a **warning that names it** and the analysis continues on what was
kept; none lets a hostile or broken file take unbounded time or memory:

- ``max_depth`` (nesting depth of one event): an event nested deeper is dropped (counted). The fast
  decoder's own recursion limit (~1000 levels) also sends a chunk to the exact scanner, which
  measures every event's depth; memory and time stay linear in the event's size either way.
- ``max_event_bytes`` (size of one event, so of its longest string): a bigger event is skipped by the
  streaming scanner without being decoded or kept (a 100 MB name costs one linear scan).
- ``max_read_events`` (events read): reading stops after this many events; with ``--max-events N`` it
  defaults to ``READ_FACTOR × N`` so the budget bounds time, not only what is kept.
- ``max_decompressed_bytes``: reading stops when the decompressed size passes it (gzip bombs).

Without an explicit event budget, :func:`auto_max_events` gives one from the memory this process may
use (cgroup limit, ``RLIMIT_AS``, available RAM), so a trace with more events than fit is thinned
(``thinning.Thinning``, with its warning) instead of running out of memory.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from pathlib import Path

import psutil

from ndval.core.units import GIB_BYTES, MIB_BYTES

#: default deepest nesting of one event (Kineto args nest 3-4 levels).
MAX_DEPTH = 512
#: default largest event (bytes of its JSON text).
MAX_EVENT_BYTES = 16 * MIB_BYTES
#: default largest decompressed trace.
MAX_DECOMPRESSED_BYTES = 64 * GIB_BYTES
#: with an event budget N, reading stops after READ_FACTOR × N events (min READ_MIN events).
READ_FACTOR = 10
READ_MIN = 1_000_000
#: memory per kept event assumed by :func:`auto_max_events` (bytes; ``dataset.PEAK_BYTES_PER_EVENT``
#: measures the parse + analysis peak; twice that leaves room for the rest of the process).
AUTO_BYTES_PER_EVENT = 800


@dataclass(frozen=True)
class Budgets:
    """Limits of one trace read (see module docstring); ``None`` = unlimited."""

    max_depth: int = MAX_DEPTH
    max_event_bytes: int = MAX_EVENT_BYTES
    max_read_events: int | None = None
    max_decompressed_bytes: int | None = MAX_DECOMPRESSED_BYTES

    @classmethod
    def for_event_budget(cls, max_events: int | None, **kw: int | None) -> Budgets:
        """Budgets for a read keeping at most ``max_events`` events (reading stops after
        ``max(READ_FACTOR × max_events, READ_MIN)``)."""
        if max_events is not None and "max_read_events" not in kw:
            kw["max_read_events"] = max(READ_FACTOR * max_events, READ_MIN)
        return cls(**kw)  # type: ignore[arg-type]


def memory_limit_bytes() -> int:
    """Bytes this process may still use: the smallest of available RAM, ``RLIMIT_AS`` and the
    cgroup v2 ``memory.max`` (minus current use)."""
    limits = [int(psutil.virtual_memory().available)]
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1):
        limits.append(max(0, soft - int(psutil.Process().memory_info().vms)))
    cg = Path("/sys/fs/cgroup/memory.max")
    try:
        text = cg.read_text().strip()
        if text.isdigit():
            current = Path("/sys/fs/cgroup/memory.current").read_text().strip()
            limits.append(max(0, int(text) - int(current or 0)))
    except OSError:
        pass
    return min(limits)


def auto_max_events(bytes_per_event: int = AUTO_BYTES_PER_EVENT) -> int:
    """An event budget that fits the memory this process may use (see :func:`memory_limit_bytes`)."""
    return max(100_000, memory_limit_bytes() // bytes_per_event)
