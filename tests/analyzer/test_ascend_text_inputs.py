"""Damaged Ascend text exports: a warning naming the file, the rest of the rank still analysed.

Every rank here is SYNTHETIC (``tests.analyzer.synthetic``), its side files written by the test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from analyzer.analysis import analyze
from analyzer.dataset import load_dataset
from tests.analyzer import synthetic as sy

OUT = "ASCEND_PROFILER_OUTPUT"


def _write(rel: str, text: str) -> Callable[[Path], Path]:
    def write(rank_dir: Path) -> Path:
        path = rank_dir / rel
        path.write_text(text, encoding="utf-8")
        return path
    return write


@pytest.mark.parametrize(("damage", "rule"), [
    (_write(f"{OUT}/kernel_details.csv", "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n"),
     "header only, no rows"),
    (_write("profiler_info_0.json", "[1, 2, 3]"), "top level is a JSON list, expected an object"),
    (_write("profiler_metadata.json", "[" * 50_000 + "]" * 50_000), "nested too deeply"),
    (_write("profiler_info_0.json", '{"a": ' * 50_000 + "1" + "}" * 50_000), "nested too deeply"),
], ids=["header-only-kernel_details", "profiler_info-list", "metadata-50k-deep", "profiler_info-50k-deep"])
def test_damaged_side_file_is_a_warning_naming_it(tmp_path: Path, damage: Callable[[Path], Path], rule: str) -> None:
    """Today: KeyError, AttributeError, RecursionError from deep inside."""
    rank_dir = sy.write_rank(tmp_path, sy.comm_bound_steps(4))
    path = damage(rank_dir)
    analysis = analyze(load_dataset(rank_dir))
    (warning,) = [w for w in analysis.warnings if str(path) in w]
    assert rule in warning and "ignored" in warning
    assert analysis.verdict.kind == "communication"
