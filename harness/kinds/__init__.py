"""The kind registry: a kind turns a validated case (+ its data rows) into a ``RunResult``.

A module registers a kind with ``@register_kind("name", params=ParamsModel)`` on a function
``run(ctx: RunContext) -> RunResult``; ``requires`` returns ``None`` when the kind can run here
or the reason it cannot (e.g. the estimator package is not importable), which makes the case an
error, never a crash of collection. Built-in modules are imported by ``load_kinds()``;
``harness.kinds.analyzer`` (the analyzer kinds) registers itself when it exists, and third
parties can add kinds through the ``ndval.kinds`` entry-point group.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from harness.results import RunResult

#: modules imported for their registrations; a missing one (not built yet) is skipped
BUILTIN_MODULES = ("harness.kinds.recorded", "harness.kinds.estimator", "harness.kinds.analyzer")


class KindParams(BaseModel):
    """Base of every kind's ``params`` model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


class KindError(Exception):
    """The kind could not produce a result (bad config for the estimator, missing input...)."""


@dataclass
class RunContext:
    """Everything a kind may use: the case, its params (matrix point applied) and its data rows."""

    case_id: str
    params: Any
    rows: list[dict[str, Any]]
    point: dict[str, Any] = field(default_factory=dict)
    case_file: Path | None = None
    cases_root: Path | None = None
    #: the subject under test (``harness.subjects.Subject``); None: ndval's own code
    subject: Any = None


KindRun = Callable[[RunContext], RunResult]


@dataclass(frozen=True)
class Kind:
    name: str
    params_model: type[BaseModel]
    run: KindRun
    requires: Callable[[], str | None]
    doc: str


KINDS: dict[str, Kind] = {}
_loaded = False


def _always() -> str | None:
    return None


def register_kind(name: str, params: type[BaseModel],
                  requires: Callable[[], str | None] | None = None) -> Callable[[KindRun], KindRun]:
    """Decorator registering ``run(ctx) -> RunResult`` as kind ``name`` with its params model."""

    def deco(fn: KindRun) -> KindRun:
        doc = (fn.__doc__ or name).strip().splitlines()
        KINDS[name] = Kind(name, params, fn, requires or _always, doc[0] if doc else name)
        return fn

    return deco


def load_kinds() -> dict[str, Kind]:
    """Import the built-in kind modules (and ``ndval.kinds`` entry points) once; return the registry."""
    global _loaded
    if not _loaded:
        _loaded = True
        for module in BUILTIN_MODULES:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name != module:
                    raise
        for ep in importlib.metadata.entry_points(group="ndval.kinds"):
            ep.load()
    return KINDS
