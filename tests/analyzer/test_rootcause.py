"""Seed §4 hypotheses: only for triggered candidates, data conditions, phase conditions, generic fallback."""

from __future__ import annotations

from analyzer.bottleneck import locate
from analyzer.rootcause import LIBRARY, infer
from analyzer.thresholds import default_thresholds
from tests.analyzer.synthetic import make_indicators

TH = default_thresholds()
HOST_DECODE = dict(device_idle_pct=30, host_exclusive_pct=50, dispatch_ops_per_step=1500, host_exclusive_per_step_us=3000,
                   host_busy_pct=90, device_busy_pct=60, sync_op_count=0)


def ids(ind, phase):  # type: ignore[no-untyped-def]
    return [h.id for h in infer(locate(ind, TH), ind, TH, phase)]


def test_seed_library_ids_present() -> None:
    want = {"host.eager-python-per-token", "host.sampler-sync", "host.prefill-metadata", "host.launch-gaps",
            "compute.prefill-attention-quadratic", "compute.decode-memory-bound", "compute.fragmented-small-ops",
            "comm.decode-tp-small-message", "comm.prefill-bandwidth", "comm.overlap-disabled", "copy.d2h-sync-sampling",
            "copy.h2d-kv-or-weight"}
    wait_bound = {"comm.wait-for-late-rank", "comm.load-imbalance", "comm.host-stall-before-collective"}  # issue 28
    assert want | wait_bound == {s.id for s in LIBRARY}


def test_phase_condition() -> None:
    ind = make_indicators(**HOST_DECODE)
    assert "host.eager-python-per-token" in ids(ind, "decode")
    assert "host.eager-python-per-token" not in ids(ind, "prefill")
    assert "host.prefill-metadata" in ids(ind, "prefill")  # host exclusive 50 % ≥ 15, dispatch ≥ 300


def test_generic_when_no_mechanism_matches() -> None:
    ind = make_indicators(**{**HOST_DECODE, "dispatch_ops_per_step": 100})
    got = ids(ind, None)
    assert got == ["host.generic"]


def test_untriggered_candidates_get_no_hypothesis() -> None:
    ind = make_indicators(device_busy_pct=50, compute_pct=30, comm_pct_of_device=5, comm_exposed_pct=1, sync_op_count=3,
                          sync_ops_per_step=3, copy_pct=0)
    assert ids(ind, "decode") == []


def test_sampler_sync_triggers_quote_values() -> None:
    ind = make_indicators(**{**HOST_DECODE, "sync_op_count": 10, "sync_ops_per_step": 2.0})
    hyp = next(h for h in infer(locate(ind, TH), ind, TH, "decode") if h.id == "host.sampler-sync")
    assert any("sync_ops_per_step = 2.00" in t for t in hyp.triggers) and hyp.checks
