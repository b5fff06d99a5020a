"""The kind registry: a kind turns a validated case (+ its data rows) into a ``RunResult``.

A module registers a kind with ``@register_kind("name", params=ParamsModel)`` on a function
``run(ctx: RunContext[ParamsModel]) -> RunResult``; ``requires`` returns ``None`` when the kind can run here
or the reason it cannot (e.g. the estimator package is not importable), which makes the case an
error, never a crash of collection. Built-in modules are imported by ``load_kinds()``;
``ndval.harness.kinds.analyzer`` (the analyzer kinds) registers itself when it exists, and third
parties can add kinds through the ``ndval.kinds`` entry-point group.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from ndval.harness.results import RunResult

if TYPE_CHECKING:
    from ndval.harness.subjects import Subject

#: modules imported for their registrations; a missing one (not built yet) is skipped
BUILTIN_MODULES = ("ndval.harness.kinds.recorded", "ndval.harness.kinds.estimator", "ndval.harness.kinds.analyzer")


class KindParams(BaseModel):
    """Base of every kind's ``params`` model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


class KindError(Exception):
    """The kind could not produce a result (bad config for the estimator, missing input...)."""


#: a kind's params model (the type of ``RunContext.params``); bare ``RunContext`` means any ``KindParams``
P = TypeVar("P", bound=BaseModel, default=KindParams, covariant=True)
#: the params model a kind registers with (``register_kind``)
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class RunContext(Generic[P]):
    """Everything a kind may use: the case, its params (matrix point applied, typed by the kind's params
    model: ``RunContext[PerfParams]``) and its data rows."""

    case_id: str
    params: P
    rows: list[dict[str, Any]]
    #: the matrix point's overrides, dotted field -> value
    point: dict[str, Any] = field(default_factory=dict)
    case_file: Path | None = None
    cases_root: Path | None = None
    #: the subject under test; None: ndval's own code
    subject: Subject | None = None


KindRun = Callable[[RunContext[Any]], RunResult]


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


def register_kind(name: str, params: type[M], requires: Callable[[], str | None] | None = None,
                  ) -> Callable[[Callable[[RunContext[M]], RunResult]], Callable[[RunContext[M]], RunResult]]:
    """Decorator registering ``run(ctx: RunContext[M]) -> RunResult`` as kind ``name`` with its params model ``M``."""

    def deco(fn: Callable[[RunContext[M]], RunResult]) -> Callable[[RunContext[M]], RunResult]:
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
