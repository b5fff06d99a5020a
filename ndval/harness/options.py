"""The plugin's options as one frozen, typed record, and the pytest stash keys that carry them.

``ndval.harness.plugin`` fills both at ``pytest_configure``; collection, the per-item run, Allure and the
session read them. Keeping the keys here (not in ``ndval.harness.collect``) lets every module reach them
without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

GoldenMode = Literal["check", "update", "regen_all"]


@dataclass(frozen=True)
class PluginOptions:
    """What ``ndval validate`` / ``pytest`` was asked for (command line, environment, defaults)."""

    golden_mode: GoldenMode
    strict_waivers: bool
    reports_dir: Path
    golden_root: Callable[[Path], Path]
    cases_globs: list[str] = field(default_factory=list)
    signoff: str | None = None
    baseline: str | None = None
    allure: str | None = None
    #: items skipped for missing real data fail the gate ("real data present" rule)
    require_real_data: bool = False
    #: delete the golden files no case of the tree uses (syrupy's --snapshot-update deletes them too)
    prune_golden: bool = False


#: the plugin options of this run
OPTIONS_KEY = pytest.StashKey[PluginOptions]()
#: ``find_cases_root(path) -> Path``: the cases folder a case file belongs to
CASES_ROOT_KEY = pytest.StashKey[Callable[[Path], Path]]()
