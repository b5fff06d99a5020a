"""The one error type of the estimator: a configuration that breaks a rule.

``ConfigError`` names the field (dotted path), the rule that was broken, and where the value came
from (file and line when it was read from YAML), plus a "did you mean" hint for unknown fields.
"""

from __future__ import annotations

from pydantic_core import PydanticCustomError

from ndval.core.yamlsrc import did_you_mean as did_you_mean  # re-exported: estimator.config.schema uses it


def config_rule(field: str, rule: str) -> PydanticCustomError:
    """A validation error that carries its dotted field name (read back by ``load_config``)."""
    return PydanticCustomError("config_rule", "{rule}", {"field": field, "rule": rule})


class ConfigError(ValueError):
    """A configuration value that breaks a rule.

    Attributes: ``field`` (dotted path such as ``parallel.tp``), ``rule`` (the rule in words),
    ``file`` (source file or None), ``line`` (1-based line in that file or None), ``hint``.
    """

    def __init__(
        self,
        field: str,
        rule: str,
        *,
        file: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.field = field
        self.rule = rule
        self.file = file
        self.line = line
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        where = ""
        if self.file:
            where = f"{self.file}:{self.line}: " if self.line else f"{self.file}: "
        text = f"{where}{self.field or '<config>'}: {self.rule}"
        if self.hint:
            text += f" ({self.hint})"
        return text

    def with_location(self, file: str | None, line: int | None) -> ConfigError:
        """A copy of this error that names the file and line (keeps what is already known)."""
        return ConfigError(
            self.field, self.rule, file=self.file or file, line=self.line or line, hint=self.hint
        )
