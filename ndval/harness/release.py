"""A project's release rules, declared by its cases tree: ``<cases>/gate.yaml``.

The sign-off carries the project's identity, not ndval's: its name, the acceptance criteria its cases point at
(``criterion: <id>``) and the command that reproduces the run. Without a ``gate.yaml`` a project's sign-off is
named after the project folder, has no acceptance criteria section rows and reproduces with ``ndval validate``.

```yaml
name: team-estimates                  # shown in the sign-off title
criteria_title: Team acceptance criteria
criteria:                             # the criteria this project's cases point at
  - {id: TEAM-1, title: peak memory within 10 %, threshold: 0.9 ≤ ratio ≤ 1.1, source: team plan §2}
reproduce: "git checkout {sha} && ndval validate"   # {sha}: the commit of the run
```

ndval's own tree names ``criteria_preset: sapp-nd-seed`` (``ndval.harness.criteria.SEED_CRITERIA``), the seed
issue's criteria that no other project inherits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ndval.core.yamlsrc import CaseError, read_located
from ndval.harness.criteria import SEED_CRITERIA, Criterion

GATE_FILE = "gate.yaml"
PRESETS: dict[str, tuple[Criterion, ...]] = {"sapp-nd-seed": SEED_CRITERIA}


class _CriterionSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1, max_length=64)
    title: str
    threshold: str = "-"
    source: str = "-"
    no_evidence: str = "no case carries evidence for this criterion"


class _GateSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=120)
    criteria_title: str = "Acceptance criteria"
    criteria_preset: Literal["sapp-nd-seed"] | None = None
    criteria: list[_CriterionSpec] = Field(default_factory=list)
    reproduce: str = "git checkout {sha} && ndval validate"


@dataclass(frozen=True)
class ReleaseRules:
    """Name, criteria and reproduce command of a project's sign-off."""

    name: str
    criteria_title: str
    criteria: tuple[Criterion, ...]
    reproduce: str
    source: str | None = None  # the gate.yaml they came from (None: defaults)

    def summary_block(self) -> dict[str, str | None]:
        """What the summary keeps of them (the sign-off renders from the summary alone)."""
        return {"name": self.name, "criteria_title": self.criteria_title, "reproduce": self.reproduce,
                "source": self.source}


class ReleaseRulesError(ValueError):
    """``gate.yaml`` is invalid: names the file, the line and the field."""


def load_release_rules(cases_roots: list[Path], project_root: Path) -> ReleaseRules:
    """The rules of the first cases root holding a ``gate.yaml``; defaults named after ``project_root``."""
    path = next((r / GATE_FILE for r in cases_roots if (r / GATE_FILE).is_file()), None)
    if path is None:
        return ReleaseRules(project_root.name, "Acceptance criteria", (), "git checkout {sha} && ndval validate")
    try:
        located = read_located(path)
        spec = _GateSpec.model_validate(located.data)
    except CaseError as exc:
        raise ReleaseRulesError(exc.render()) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(str(p) for p in err["loc"])
        line = located.key_lines.get(tuple(err["loc"]), located.key_lines.get(tuple(err["loc"][:1]), 1))
        raise ReleaseRulesError(f"{path}:{line}: field {'.'.join(loc) or '<root>'}: {err['msg']}") from None
    own = tuple(Criterion(c.id, c.title, c.threshold, c.source, c.no_evidence) for c in spec.criteria)
    criteria = (*(PRESETS[spec.criteria_preset] if spec.criteria_preset else ()), *own)
    return ReleaseRules(spec.name, spec.criteria_title, criteria, spec.reproduce, str(path))
