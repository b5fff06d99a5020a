"""The type of one cross-field rule (:mod:`estimator.config.rules` holds the table)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: a configuration (``estimator.config.schema.EstimatorConfig``, which imports this module: not named here,
#: even for type checking), or a stand-in whose numeric fields may be numpy arrays
Cfg = Any


@dataclass(frozen=True)
class Rule:
    """One cross-field rule: where it is broken, the field it names and its message."""

    field: str | Callable[[Cfg], str]
    broken: Callable[[Cfg], Any]
    message: Callable[[Cfg], str]
    structural: bool = False
    #: the rule's name (quoted in its message where given)
    name: str = ""

    def field_of(self, cfg: Cfg) -> str:
        """The dotted field this rule names for ``cfg`` (fixed unless the rule is structural)."""
        return self.field if isinstance(self.field, str) else self.field(cfg)
