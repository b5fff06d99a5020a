"""``benchmarks/torchtitan_tables.py``: torchtitan's Table 2 (CP) and Table 4 (70B TP 8, AsyncTP) rows are built
as the page states them from the shared Table 1 Float8 row, and AsyncTP hides what torch's micro-pipeline pass
fuses, no more (``estimator.perf.overlap.async_tp_exposed``). A check of the wiring, not of accuracy."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

import estimator
from tests.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def configs(measured_dir: Path) -> list[tuple[str, estimator.EstimatorConfig]]:
    mod = load_benchmark("torchtitan_tables")
    with (measured_dir / "step_time_cases.csv").open(newline="", encoding="utf-8") as f:
        template = next(r for r in csv.DictReader(f) if r["case_id"] == mod.TEMPLATE)
    return [(label, estimator.load_config(mod.row_config(template, over, asynctp, gpus)))
            for _table, label, over, asynctp, gpus, _tps, _mem in mod.ROWS]


def test_rows_run_the_published_layouts(configs: list[tuple[str, estimator.EstimatorConfig]]) -> None:
    layouts = [(c.parallel.dp, c.parallel.cp, c.parallel.tp, c.train.seq_length, c.recompute.mode,
                bool(c.parallel.enable_async_tensor_parallel)) for _, c in configs]
    assert layouts == [(8, 1, 1, 32768, "full", False), (4, 2, 1, 65536, "full", False),
                       (2, 4, 1, 131072, "full", False), (1, 8, 1, 262144, "full", False),
                       (32, 1, 8, 8192, "full", False), (32, 1, 8, 8192, "full", True)]
    # the template's software: compiled (no eager ops priced), torchao Float8 linears, sequence-parallel TP
    assert all(c.options.torch_compile and c.precision.fp8_linear for _, c in configs)
    assert configs[4][1].parallel.sequence_parallel and configs[4][1].model.num_layers == 80


def test_async_tp_leaves_the_unfused_backward_reduce_scatters(
        configs: list[tuple[str, estimator.EstimatorConfig]]) -> None:
    plain, asynctp = (estimator.estimate_perf(c) for _, c in configs[4:])
    tp_s = plain.stages[0].mp_comm  # all TP comm, exposed, per micro-batch (full recompute: 1 : 1 : 1 by pass)
    exposed = asynctp.stages[0].mp_comm
    assert tp_s / 6 <= exposed < tp_s  # at least the backward third's reduce-scatter half
    assert asynctp.stages[0].tp_hidden == pytest.approx(tp_s - exposed, rel=1e-9)
    assert asynctp.total < plain.total
