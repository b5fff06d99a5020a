"""``compare --markdown`` with HTML in a profile's ``deviceProperties.name`` (issue: "serve" — raw HTML from
``deviceProperties.name`` was written into the Markdown). End to end through the CLI; traces are SYNTHETIC."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ndval.harness import cli

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def _trace(path: Path, device_name: str) -> Path:
    kernels = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "ts": 10 + 40 * i, "dur": 30, "pid": 0, "tid": 7,
                "args": {"stream": 7, "device": 0}} for i in range(40)]
    steps: list[dict[str, Any]] = [{"ph": "X", "name": f"ProfilerStep#{n}", "ts": 800 * (n - 1), "dur": 800, "pid": 1,
                                    "tid": 1, "cat": "user_annotation"} for n in (1, 2)]
    path.write_text(json.dumps({"traceEvents": steps + kernels, "deviceProperties": [{"name": device_name}]}))
    return path


def test_compare_markdown_escapes_html_in_device_name(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    before, after = _trace(tmp_path / "a.json", "NVIDIA H100"), _trace(tmp_path / "b.json", HOSTILE)
    out = tmp_path / "cmp.md"
    cli.main(["compare", str(before), str(after), "--markdown", str(out)])
    capfd.readouterr()
    text = out.read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in text, text
    assert "<script" not in text and "<img" not in text
