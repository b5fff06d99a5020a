"""The ndval plugin's own hooks (registered by ``ndval.harness.plugin.pytest_addhooks``).

They let report writers (``ndval.harness.allure``) follow a run without the collection or session modules
importing them: ``ndval.harness.collect`` calls :func:`pytest_ndval_item_evaluated` on the process that ran the
item (an xdist worker or the controller), ``ndval.harness.session`` calls :func:`pytest_ndval_summary` on the
controller once the summary is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_ndval_item_evaluated(item: pytest.Item, results: list[Any], status: str) -> None:
    """A case item evaluated its assertions (``results``: ``AssertionResult``s; ``status``: the outcome's status:
    passed, failed, waived, error, not_evaluable). Called inside ``runtest``, before it raises or returns."""


def pytest_ndval_summary(config: pytest.Config, summary: dict[str, Any], out_dir: Path) -> None:
    """The run's summary was written to ``out_dir/summary.json`` (controller only). An ``OSError`` raised here is
    reported as a report that could not be written (exit 2)."""
