"""H1 end to end: no command of the project writes over a non-regular file (issue: "the atomic writer replaces
whatever the output path names" — ``search --csv /dev/full`` turned the device into a 14 KB JSON file; ``analyze``,
``compare``, ``search`` and ``calibrate`` share the writer, so ``--json /dev/null`` run as root destroyed the node).

Every output option of every command that writes a file is pointed at a FIFO (read by a thread) and at a character
device equal to /dev/null made under a temporary folder (root only, else skipped with the reason): the node stays
what it was, the command ends normally, no traceback. The profile is a SYNTHETIC Kineto trace."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from ndval.harness.cli import main
from tests.faults.conftest import FifoReader

ROOT = Path(__file__).parents[2]
CONFIG = ROOT / "estimator" / "examples" / "llama3-8b-h100.yaml"
HF_CONFIG = ROOT / "tests" / "data" / "hf_configs" / "llama3-8b.json"


def _trace(folder: Path) -> Path:
    """SYNTHETIC: one step of 20 GEMM kernels on an H100."""
    events = [{"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 1000, "pid": 1, "tid": 1, "cat": "user_annotation"}]
    events += [{"ph": "X", "cat": "kernel", "name": f"ampere_sgemm_128x64_nn{i}", "ts": 10 + 40 * i, "dur": 30,
                "pid": 0, "tid": 7, "args": {"stream": 7, "device": 0}} for i in range(20)]
    path = folder / "trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events,
                                "deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}]}))
    return path


#: (id, argv given the trace and the output path)
COMMANDS: list[tuple[str, Callable[[Path, Path], list[str]]]] = [
    ("analyze-json", lambda t, o: ["analyze", str(t), "--json", str(o)]),
    ("analyze-markdown", lambda t, o: ["analyze", str(t), "--markdown", str(o)]),
    ("analyze-html", lambda t, o: ["analyze", str(t), "--html", str(o)]),
    ("compare-json", lambda t, o: ["compare", str(t), str(t), "--json", str(o)]),
    ("compare-markdown", lambda t, o: ["compare", str(t), str(t), "--markdown", str(o)]),
    ("compare-html", lambda t, o: ["compare", str(t), str(t), "--html", str(o)]),
    ("search-json", lambda t, o: ["search", str(CONFIG), "--devices", "8", "--space", "tp=1,2", "--space", "pp=1",
                                  "--no-progress", "--top", "1", "--json", str(o)]),
    ("search-csv", lambda t, o: ["search", str(CONFIG), "--devices", "8", "--space", "tp=1,2", "--space", "pp=1",
                                 "--no-progress", "--top", "1", "--csv", str(o)]),
    ("calibrate", lambda t, o: ["calibrate", "--from-profile", str(t), "--hardware", "h100-80g", "-o", str(o)]),
    ("import", lambda t, o: ["import", "--hf-config", str(HF_CONFIG), "-o", str(o)]),
]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize(("name", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_h1_every_command_streams_into_a_fifo(name: str, argv: Callable[[Path, Path], list[str]], fifo: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    reader = FifoReader(fifo)
    code, text = _run(argv(_trace(fifo.parent), fifo), capsys)
    data = reader.join(120)
    assert stat.S_ISFIFO(fifo.stat().st_mode), f"{name}: the FIFO was replaced"
    assert code in (0, 1) and "Traceback" not in text, text[-2000:]
    assert data.strip(), f"{name}: nothing was written into the FIFO"
    assert [p.name for p in fifo.parent.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".")] == []


@pytest.mark.parametrize(("name", "argv"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_h1_every_command_writes_a_device_in_place(name: str, argv: Callable[[Path, Path], list[str]],
                                                  null_device: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = null_device.stat()
    code, text = _run(argv(_trace(null_device.parent), null_device), capsys)
    after = null_device.stat()
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino, name
    assert code in (0, 1) and "Traceback" not in text, text[-2000:]
