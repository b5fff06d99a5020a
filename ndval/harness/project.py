"""The project an ndval run belongs to, found like pytest's rootdir.

The project root is the nearest directory, from the working directory upward, holding
``ndval.toml`` or a ``pyproject.toml`` with a ``[tool.ndval]`` table; without one, the working
directory itself. Cases, goldens, reports and data folders resolve from the root and its settings
(relative paths are relative to the root):

```toml
[tool.ndval]              # or the top level of ndval.toml
cases = "validation_cases"
golden = "golden"
reports = "reports"
shared = "../shared"      # measured = "<shared>/data/measured", profiles = "<shared>/data/profiles"
measured = "data/measured"
profiles = "data/profiles"
```

Environment variables win over the file (``NDVAL_PROJECT_ROOT``, ``NDVAL_REPORTS_DIR``,
``NDVAL_SHARED_DIR``, ``NDVAL_MEASURED_DIR``, ``NDVAL_PROFILES_DIR``). ndval's own repository is a
project like any other: its ``pyproject.toml`` carries the ``[tool.ndval]`` table.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_NAMES = ("ndval.toml", "pyproject.toml")
#: settings keys and their defaults (paths relative to the project root)
DEFAULTS: dict[str, str] = {"cases": "validation_cases", "golden": "golden", "reports": "reports", "shared": "../shared"}
KNOWN_KEYS = {*DEFAULTS, "measured", "profiles", "subject", "subjects"}


class ProjectConfigError(ValueError):
    """The project's ndval settings cannot be read (names the file and the key)."""


@dataclass(frozen=True)
class Project:
    """A project root, the file its settings came from (None: defaults) and the settings."""

    root: Path
    config_file: Path | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def _path(self, key: str, env: str | None = None, default: Path | None = None) -> Path:
        if env and os.environ.get(env):
            return Path(os.environ[env]).resolve()
        value: str | None = self.settings.get(key)
        if value is None:
            return default if default is not None else (self.root / DEFAULTS[key]).resolve()
        return (self.root / value).resolve()

    @property
    def cases(self) -> Path:
        return self._path("cases")

    @property
    def golden(self) -> Path:
        return self._path("golden")

    @property
    def reports(self) -> Path:
        return self._path("reports", "NDVAL_REPORTS_DIR")

    @property
    def shared(self) -> Path:
        return self._path("shared", "NDVAL_SHARED_DIR")

    @property
    def measured(self) -> Path:
        return self._path("measured", "NDVAL_MEASURED_DIR", self.shared / "data" / "measured")

    @property
    def profiles(self) -> Path:
        return self._path("profiles", "NDVAL_PROFILES_DIR", self.shared / "data" / "profiles")

    def describe(self) -> str:
        """One line for the console: the root and where its settings came from."""
        return f"project {self.root} ({self.config_file.name if self.config_file else 'no ndval config: defaults'})"


def _settings_of(path: Path) -> dict[str, Any] | None:
    """The ndval table of ``path`` (``ndval.toml``: the whole file or its ``[tool.ndval]``), None if absent."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ProjectConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("ndval")
    if path.name == "ndval.toml" and table is None:
        table = {k: v for k, v in data.items() if k != "tool"}
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ProjectConfigError(f"{path}: [tool.ndval] must be a table")
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ProjectConfigError(f"{path}: [tool.ndval] unknown key(s) {unknown}; known: {sorted(KNOWN_KEYS)}")
    for key in (*DEFAULTS, "measured", "profiles"):
        if key in table and not isinstance(table[key], str):
            raise ProjectConfigError(f"{path}: [tool.ndval] {key} must be a path string, got {table[key]!r}")
    return table


def find_project(start: Path | None = None) -> Project:
    """The project of ``start`` (default: ``$NDVAL_PROJECT_ROOT``, else the working directory)."""
    if start is None:
        env = os.environ.get("NDVAL_PROJECT_ROOT")
        start = Path(env) if env else Path.cwd()
    start = start.resolve()
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file():
                settings = _settings_of(candidate)
                if settings is not None:
                    return Project(directory, candidate, settings)
    return Project(start)
