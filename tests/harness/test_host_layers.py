"""Host time per layer from a profile's repeated top-level host ops (issue 11, ``ndval calibrate``).

The sequence tests are SYNTHETIC (names and times written here, expected values by hand); the last
test reads the real A100 Kineto trace (skipped when ../shared/data is absent).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ndval.harness.commands.host_layers import Repeats, all_runs, find_repeats, thread_layers, top_level


def test_top_level_drops_nested_ops() -> None:
    ops = [("a", 0.0, 10.0), ("a.child", 2.0, 5.0), ("b", 10.0, 12.0), ("b.child", 10.0, 11.0)]
    assert top_level(ops) == [("a", 0.0, 10.0), ("b", 10.0, 12.0)]


def test_find_repeats_picks_the_run_covering_most_ops() -> None:
    names = ["x", "l", "n", "a", "l", "n", "a", "l", "n", "a", "l", "n", "a", "y", "p", "q", "p", "q", "p", "q"]
    # (l, n, a) x 4 from index 1 covers 12 names; (p, q) x 3 covers 6
    assert find_repeats(names) == Repeats(1, 3, 4)
    assert find_repeats(["c"] * 20) is None  # one distinct name is not a layer
    assert find_repeats(["l", "n", "l", "n"]) is None  # fewer than 3 repetitions


def test_all_runs_finds_every_run_of_the_pattern() -> None:
    names = ["l", "n"] * 3 + ["s"] + ["l", "n"] * 4 + ["l"]
    assert all_runs(names, ["l", "n"]) == [Repeats(0, 2, 3), Repeats(7, 2, 4)]


def test_thread_layers_by_hand() -> None:
    # SYNTHETIC: three layers of (linear, act) starting at 0, 100, 250 µs; the last ends at 330 µs;
    # launches at 10, 60 | 110, 160, 200 | 260 -> 2, 3, 1 launches; host 100, 150, 80 µs per layer
    ops = [("linear", 0.0, 50.0), ("act", 50.0, 90.0), ("linear", 100.0, 150.0), ("act", 150.0, 240.0),
           ("linear", 250.0, 300.0), ("act", 300.0, 330.0)]
    rec = thread_layers(ops, [10.0, 60.0, 110.0, 160.0, 200.0, 260.0])
    assert rec is not None
    assert rec["ops"] == ["linear", "act"] and rec["layers"] == 3 and rec["runs"] == 1
    assert rec["host_us_per_layer"]["median"] == 100.0
    assert rec["launches_per_layer"]["median"] == 2.0
    # per launch: 100/2 = 50, 150/3 = 50, 80/1 = 80 -> median 50
    assert rec["host_us_per_launch"]["median"] == 50.0
    assert thread_layers(ops, []) is None  # repetitions that launch nothing are not a layer


def test_calibrate_reports_the_host_layers_of_the_a100_trace(profile_path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Facts of kineto/hta-trace-diff/control.json.gz (rank 3, TorchRec-style model, 6 steps): the
    autograd thread repeats a 13-op backward block 114 times (19 launches each), the main thread a
    5-op forward block (linear, layer_norm, sigmoid, mul, linear) 108 times (6 launches each)."""
    from ndval.harness.cli import main

    trace = profile_path("kineto/hta-trace-diff/control.json.gz")
    out = tmp_path / "overlay.yaml"
    assert main(["calibrate", "--from-profile", str(trace), "--hardware", "a100", "-o", str(out)]) == 0
    layers = yaml.safe_load(out.read_text(encoding="utf-8"))["host_layers"]
    bw, fw = layers
    assert (len(bw["ops"]), bw["layers"], bw["runs"], bw["launches_per_layer"]["median"]) == (13, 114, 12, 19.0)
    assert bw["host_us_per_layer"]["median"] == pytest.approx(607.5)
    assert fw["ops"] == ["aten::linear", "aten::layer_norm", "aten::sigmoid", "aten::mul", "aten::linear"]
    assert (fw["layers"], fw["launches_per_layer"]["median"]) == (108, 6.0)
    assert fw["host_us_per_layer"]["median"] == pytest.approx(243.5)
    assert "x 108 (12 runs): host 243.5 us per layer" in capsys.readouterr().out
