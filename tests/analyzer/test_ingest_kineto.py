"""Kineto reader on the real HTA TraceDiff pair and SYNTHETIC edge cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.dataset import load_dataset
from analyzer.ingest import events as ev

CONTROL = "kineto/hta-trace-diff/control.json.gz"
TEST = "kineto/hta-trace-diff/test.json.gz"


@pytest.fixture(scope="module")
def control(profile_path):
    return load_dataset(profile_path(CONTROL))


def test_profiler_steps_1009_to_1014(control) -> None:
    table = control.ranks[0].events
    steps = table[table["category"] == ev.STEP]
    assert sorted(steps["step"]) == [1009, 1010, 1011, 1012, 1013, 1014]
    assert set(steps["name"]) == {f"ProfilerStep#{n}" for n in range(1009, 1015)}


def test_nccl_kernels_are_communication(control) -> None:
    table = control.ranks[0].events
    nccl = table[table["name"].str.startswith("ncclKernel")]
    assert len(nccl) > 0
    assert (nccl["category"] == ev.COMMUNICATION).all()
    assert set(nccl["sub"]) <= set(ev.COMM_OP_TYPES)
    assert not table.loc[table["category"] == ev.COMPUTE, "name"].str.contains("nccl").any()


def test_copies_syncs_and_launch_steps(control) -> None:
    table = control.ranks[0].events
    copies = table[table["category"] == ev.MEMCPY]
    assert set(copies["sub"]) == {ev.SUB_H2D, ev.SUB_D2H, ev.SUB_D2D}
    assert copies["bytes"].notna().all()
    assert (table["name"] == "cudaStreamSynchronize").sum() == 60
    assert (table.loc[table["name"] == "cudaStreamSynchronize", "category"] == ev.SYNC).all()
    kernels = table[(table["side"] == ev.SIDE_DEVICE) & (table["category"] == ev.COMPUTE)]
    assert kernels["step"].isin(range(1009, 1015)).mean() > 0.95


def test_rank_and_device_meta(control) -> None:
    rank = control.ranks[0]
    assert rank.rank == 3
    assert rank.meta["distributedInfo"]["world_size"] == 8
    assert rank.meta["deviceProperties"][0]["name"].startswith("NVIDIA A100")


def test_test_trace_rank(profile_path) -> None:
    ds = load_dataset(profile_path(TEST))
    assert ds.ranks[0].rank == 1
    assert "V100" in ds.ranks[0].meta["deviceProperties"][0]["name"]


def test_float_timestamps_plain_json_and_string_pids(tmp_path: Path) -> None:
    """SYNTHETIC uncompressed trace: ns-decimal float ts stay exact; pid 'Spans' accepted; no rank."""
    # written as text: a Python float cannot hold 1661203463029566.125 (that is the point)
    text = (
        '{"traceEvents": ['
        '{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1661203463029566.125,'
        ' "dur": 2.5, "args": {"correlation": 5}},'
        '{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,'
        ' "ts": 1661203463029560.5, "dur": 3, "args": {"correlation": 5}},'
        '{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "x",'
        ' "ts": 1661203463029500, "dur": 100}]}'
    )
    path = tmp_path / "rank.json"
    path.write_text(text)
    ds = load_dataset(path)
    rank = ds.ranks[0]
    assert rank.base_ts_us == 1661203463029500
    kernel = rank.events[rank.events["name"] == "gemm"].iloc[0]
    assert kernel["ts_us"] == 66.125 and kernel["side"] == "device"
    assert rank.rank == -1 and any("distributedInfo.rank absent" in w for w in ds.warnings)


def test_explicit_null_args_read_as_absent_args() -> None:
    """SYNTHETIC chunk: an event with ``"args": null`` gets the same signature, correlation and bytes
    as one without ``args`` (the chunk takes the substitution path), while its neighbours keep theirs."""
    import math

    import msgspec

    from analyzer.ingest.decode import KinetoEvent, kineto_columns

    def chunk(middle: str) -> list[KinetoEvent]:
        text = ('[{"ph": "X", "name": "k", "pid": 1, "tid": 2, "ts": 1.0, "dur": 2.0, "cat": "kernel",'
                ' "args": {"correlation": 7, "bytes": 64}},'
                f' {{"ph": "X", "name": "m", "pid": 1, "tid": 2, "ts": 3.0, "dur": 1.0, "cat": "cpu_op"{middle}}},'
                ' {"ph": "X", "name": "nccl", "pid": 1, "tid": 3, "ts": 4.0, "dur": 1.0, "cat": "kernel",'
                ' "args": {"correlation": 9, "Collective name": "allreduce", "In msg nelems": 8, "dtype": "Float"}}]')
        return msgspec.json.decode(text, type=list[KinetoEvent])

    null_keys, null_corr, null_bytes = kineto_columns(chunk(', "args": null'))
    keys, corr, nbytes = kineto_columns(chunk(""))
    assert null_keys == keys == [(1, 2, "k", "kernel", "", ""), (1, 2, "m", "cpu_op", "", ""),
                                 (1, 3, "nccl", "kernel", "", "allreduce")]
    assert null_corr.tolist() == corr.tolist() == [7, -1, 9]
    assert null_bytes[0] == nbytes[0] == 64 and null_bytes[2] == nbytes[2] == 32
    assert math.isnan(null_bytes[1]) and math.isnan(nbytes[1])
