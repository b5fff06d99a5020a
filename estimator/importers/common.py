"""What every importer returns, and the error rules they share.

An importer reads a file a user already has (a Hugging Face ``config.json``, Megatron-LM launch
arguments, a torchtitan job TOML, a MindFormers YAML) and returns an :class:`Imported`: the
estimator mapping it built (a ``model`` section, or a whole run configuration), the source key of
every field it set, the keys it read and left because they do not change the estimate, the keys
it does not know (warnings), and the options it knows but the estimator does not model. Nothing is
dropped silently: every key of the source ends up in exactly one of those lists. Bad input raises
:class:`estimator.config.errors.ConfigError` naming the file, the source key and the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from estimator.config.errors import ConfigError


@dataclass
class Imported:
    """An importer's result.

    ``data``: the estimator mapping (``{"model": {...}}`` or a run configuration); ``sources``:
    dotted estimator field -> the source key(s) or rule it came from; ``ignored``: source key ->
    why it does not change the estimate; ``warnings``: source keys the importer does not know;
    ``not_modelled``: source key -> what the estimator does not model about it; ``file``: the
    source file.
    """

    file: str
    data: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    ignored: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    not_modelled: dict[str, str] = field(default_factory=dict)

    def put(self, dotted: str, value: Any, source: str) -> None:
        """Set ``data[dotted]`` (sections created) and record its source."""
        section, _, key = dotted.rpartition(".")
        node = self.data
        for part in section.split(".") if section else ():
            node = node.setdefault(part, {})
        node[key] = value
        self.sources[dotted] = source

    def unknown(self, keys: list[str], what: str) -> None:
        """Warn once per key the importer does not map (named, never dropped)."""
        self.warnings += [f"{what} {key!r} is not mapped by the importer (left out of the estimate)" for key in keys]


def bad(file: str, key: str, rule: str) -> ConfigError:
    """The one error of an importer: the file, the source key and the rule."""
    return ConfigError(key, rule, file=file)


def as_int(file: str, key: str, value: Any, *, minimum: int = 1) -> int:
    """``value`` as an integer ≥ ``minimum`` (ints, or strings / floats holding one), else a ConfigError."""
    if isinstance(value, bool):
        raise bad(file, key, f"expected an integer ≥ {minimum}, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise bad(file, key, f"expected an integer ≥ {minimum}, got {value!r}") from None
    if number != int(number) or number < minimum:
        raise bad(file, key, f"expected an integer ≥ {minimum}, got {value!r}")
    return int(number)


def as_bool(file: str, key: str, value: Any) -> bool:
    """``value`` as a boolean (true/false, yes/no, 1/0), else a ConfigError."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0"):
        return False
    raise bad(file, key, f"expected true or false, got {value!r}")
