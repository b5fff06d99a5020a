"""Every numeric config field finite and in range; bad files are ConfigErrors; JSON output is strict JSON.

All configs here are SYNTHETIC (``_factories``: toy models, not measurements).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from estimator.config.errors import ConfigError
from estimator.config.schema import load_config
from estimator.memory import estimate_memory
from estimator.perf.parts import estimate_perf
from ndval.harness.commands import estimate as cli_estimate
from tests.estimator._factories import SYNTHETIC_DENSE_MODEL, synthetic_run

SINGLE = {"tp": 1, "pp": 1, "dp": 1, "ep": 1}
H100 = {"preset": "h100-80g"}


def _estimate(run: dict[str, Any]) -> None:
    cfg = load_config(run)
    estimate_memory(cfg)
    estimate_perf(cfg)


@pytest.mark.parametrize(("section", "field", "value"), [
    ("options", {"part_coefficients": {"FW_COMPUTE": math.nan}}, "options.part_coefficients.FW_COMPUTE"),
    ("options", {"safety_buffer_mb": math.inf}, "options.safety_buffer_mb"),
    ("options", {"tp_shardable_overhead_mb": math.inf}, "options.tp_shardable_overhead_mb"),
    ("hardware", {**H100, "hbm_gib": math.inf}, "hardware.hbm_gib"),
    ("hardware", {**H100, "peak_tflops": {"bf16": -989.0}}, "hardware.peak_tflops.bf16"),
    ("hardware", {**H100, "peak_tflops": {"bf16": math.nan}}, "hardware.peak_tflops.bf16"),
    ("hardware", {**H100, "levels": [{"name": "nv", "max_devices": 8, "bandwidth_gb_s": 450.0, "latency_us": math.inf},
                                     {"name": "ib", "bandwidth_gb_s": 50.0}]}, "hardware.levels.0.latency_us"),
    ("train", {"seq_length": 128, "num_micro_batches": 10**60}, "train.num_micro_batches"),
], ids=["nan-coefficient", "inf-buffer", "inf-overhead", "inf-hbm", "negative-tflops", "nan-tflops", "inf-latency",
        "int-beyond-2**53"])
def test_non_finite_or_out_of_range_numbers_are_config_errors(section: str, field: dict, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        _estimate(synthetic_run(**{section: field}))
    assert info.value.field == value


def test_expert_tensor_parallel_on_a_dense_model_is_refused() -> None:
    """etp on a dense model divided by zero in the megatron memory model; now a ConfigError."""
    run = synthetic_run(SYNTHETIC_DENSE_MODEL, profile="megatron", parallel={**SINGLE, "etp": 2})
    with pytest.raises(ConfigError) as info:
        _estimate(run)
    assert info.value.field == "parallel.etp" and "dense" in info.value.rule
    _estimate(synthetic_run(SYNTHETIC_DENSE_MODEL, profile="megatron", parallel={**SINGLE, "etp": 1}))  # 1 = no-op


@pytest.mark.parametrize(("field", "value"), [("num_layers", 10**7), ("num_layers", 12 * 10**18), ("mtp_layers", 10**6)])
def test_layer_counts_are_capped_and_refused_quickly(field: str, value: int) -> None:
    t0 = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        _estimate(synthetic_run({**SYNTHETIC_DENSE_MODEL, field: value}, parallel=SINGLE))
    assert info.value.field == f"model.{field}"
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize(("text", "rule"), [
    (b"model: \xff\xfe\n", "not UTF-8"),
    (b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested deeper than"),
    # an 860-byte mapping alias bomb (2**30 values once expanded) ran for minutes in `ndval estimate`
    (("a0: &a0 {x: 1, y: 2}\n" + "".join(f"a{i}: &a{i} {{p: *a{i - 1}, q: *a{i - 1}}}\n" for i in range(1, 30))
      + "model: {ref: models/llama3-8b.yaml}\n").encode(), "aliases are expanded"),
    (b"base: &b {tp: 2}\nparallel:\n  <<: *b\n", "merge keys"),
    (b"model: !!python/name:os.system\n", "invalid value"),
])
def test_unreadable_config_files_are_config_errors(tmp_path: Path, text: bytes, rule: str) -> None:
    path = tmp_path / "run.yaml"
    path.write_bytes(text)
    t0 = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert rule in info.value.rule and info.value.file == str(path)
    assert time.perf_counter() - t0 < 1.0


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    cli_estimate.add_arguments(parser)
    return cli_estimate.run(parser.parse_args(argv))


def test_json_output_never_holds_infinity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``.inf`` for the safety buffer printed ``Infinity`` (not JSON); now it is refused, exit 2."""
    run = synthetic_run(options={"safety_buffer_mb": ".inf"})
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(run).replace("'.inf'", ".inf"), encoding="utf-8")
    assert _cli([str(path), "--json"]) == cli_estimate.EXIT_CONFIG_ERROR
    out, err = capsys.readouterr()
    assert "Infinity" not in out and "options.safety_buffer_mb" in err


def test_non_finite_fields_names_every_path() -> None:
    doc = {"a": [1.0, math.inf], "b": {"c": math.nan, "d": 2}}
    assert cli_estimate.non_finite_fields(doc) == ["a[1]", "b.c"]
    assert json.loads(json.dumps({"a": 1.0}, allow_nan=False)) == {"a": 1.0}
