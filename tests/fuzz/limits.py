"""Per-input bounds of the fuzz suite: wall time and peak Python allocation (``tracemalloc``)."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from tests.fuzz.conftest import MAX_BYTES, MAX_SECONDS


@contextmanager
def bounded(what: str, trace_memory: bool = True) -> Iterator[None]:
    """Fail when the body takes more than ``MAX_SECONDS`` or allocates more than ``MAX_BYTES`` at peak."""
    if trace_memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] if trace_memory else 0
        if trace_memory:
            tracemalloc.stop()
    assert elapsed < MAX_SECONDS, f"{what}: {elapsed:.1f} s (bound {MAX_SECONDS} s)"
    assert peak < MAX_BYTES, f"{what}: peak {peak / 2**20:.0f} MiB (bound {MAX_BYTES / 2**20:.0f} MiB)"


def only(allowed: tuple[type[BaseException], ...], fn: Callable[[], Any]) -> BaseException | None:
    """Run ``fn``; return the exception when it is one of ``allowed`` (documented), else let it propagate."""
    try:
        fn()
    except allowed as exc:
        return exc
    return None
