"""The one exception type of ingestion: bad input, named by file, field and rule."""

from __future__ import annotations

from pathlib import Path


class IngestError(ValueError):
    """Input that cannot be read as a profile.

    ``str(err)`` reads ``<file>: <field>: <rule>`` so a CLI can print it as is, without a traceback.
    """

    def __init__(self, path: Path | str | None, field: str, rule: str) -> None:
        self.path = None if path is None else Path(path)
        self.field = field
        self.rule = rule
        where = str(self.path) if self.path is not None else "<input>"
        super().__init__(f"{where}: {field}: {rule}")

    def __reduce__(self) -> tuple[type[IngestError], tuple[Path | None, str, str]]:
        """Pickle by the three parts (errors of ranks read in worker processes come back whole)."""
        return (IngestError, (self.path, self.field, self.rule))
