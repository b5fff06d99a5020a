"""The advisor against msprof-analyze 26.2.0 ``advisor all`` on the shared Ascend exports (real data).

Reference run (facts below are transcribed from its ``log/mstt_advisor_*.xlsx`` sheets; nothing else is stored)::

    python3 -m venv /tmp/msprof-venv && /tmp/msprof-venv/bin/pip install msprof-analyze==26.2.0
    msprof-analyze advisor all -d <export> -l en -o <out> --force        # msprof-analyze 26.2.0, 2026-12-01

on ``ascend/msinsight-level0/rank0_ascend_pt``, ``msinsight-level1/rank{0,1}_ascend_pt``, ``msinsight-level1``
(cluster), ``msinsight-db-level0/rank0_ascend_pt``, ``msinsight-db-level2/rank0_ascend_pt``,
``msprof-analyze-single-card`` and ``msinsight-heatmap-tiny`` (``kernel-details-pipeutil-2025`` is not read by
msprof-analyze: no ``*_ascend_pt`` folder); ``msprof-analyze-single-card`` and ``msinsight-heatmap-tiny`` re-run
2026-12-02 (same command, same version) for the affinity-API and AI-Core frequency facts.

msprof-analyze's findings and ndval's match, export by export:

- Environment Variable Issues (text exports): ACLNN_CACHE_LIMIT, HOST_CACHE_CAPACITY, PYTORCH_NPU_ALLOC_CONF
  -> ``advisor.env-variables`` with the same three variables.
- Byte Alignment Analysis (Level1 rank 0 / 1): hcom_allReduce__586_0_1 (28,647,232 B, 1816.8363 µs, unaligned
  237.9447 µs, 15.7676 GB/s) and hcom_allReduce__586_3_1 (17,267,200 B, 1204.6041 µs, 159.0632 µs, 14.3343
  GB/s) on rank 0; 1825.8965 / 263.9253 and 1189.4439 / 171.8235 µs on rank 1 -> ``advisor.comm-byte-alignment``.
- Vector Operator Perf Analysis, "performance optimization operators": rank 0 trans_TransData_23 68.2 %,
  trans_TransData_17 67.4 %, ... ; "bound operators" led by aclnnForeachAddListV2 -> ``advisor.aicore-pipeline``.
- Operator Dynamic Shape Issues ("all operators are dynamic shape", Level0 / Level1) -> ``advisor.dynamic-shape``
  on Level1; on Level0 the 8-column kernel_details.csv has no ``OP State`` column, which msprof-analyze reads from
  its ``op_summary`` instead — documented difference (ndval says "evaluated: no finding" there).

- Affinity API Issues ("found 1 apis to be replaced, but with no stack"): torch_npu.optim.NpuFusedSGD on the
  Level0 / Level1 / DB exports, torch_npu.optim.NpuFusedAdam on ``msprof-analyze-single-card``; nothing on
  ``msinsight-heatmap-tiny`` ("no optimization suggestions") -> ``advisor.affinity-api`` with the same API (one
  ``Optimizer.step#*.step`` call). msprof-analyze lists the code stacks of the calls ("no stack" here: the
  captures ran without ``with_stack``); ndval lists the call sequence, its count and host time instead.
  Priority: msprof-analyze always colours the affinity finding low (``fusion_ops_analyzer.py`` ``get_priority``);
  ndval ranks it like every finding, by the share of the window its matched calls' host time takes (6.7-7.7 % of
  the window for the SGD step here: high), the time the fused API would replace at most.
- AI-Core frequency: msprof-analyze "Can not find ai core frequency in info.json*" (the exports have
  ``AI Core Freq`` samples, all 1800 MHz, but no ``info.json`` with ``aic_frequency``) -> ``advisor.aicore-freq``
  "not evaluated: rated AI-Core frequency unknown" on the exports with a kernel table.

Documented differences (msprof-analyze finds, ndval does not):

- DB exports, db-level2 (kernel table built from ``COMPUTE_TASK_INFO`` + ``TASK`` + ``TASK_PMU_INFO``, HCCL tasks
  from ``COMMUNICATION_TASK_INFO``): byte alignment hcom_allReduce__865_0_1 (28,647,232 B, 1809.295 µs, unaligned
  237.025 µs, 15.8334 GB/s) and _3_1 (17,267,200 B, 2089.362 µs, 280.186 µs, 8.2643 GB/s); vector optimisation
  space trans_TransData_23 67.08 %, trans_TransData_17 67.03 % (x2), MaxPool2dWithMaskBackward TransData 66.96 %,
  MaxPool2dWithMask TransData 66.78 %; Operator No Bound types "ForeachAddList, Conv2DBackpropFilter,
  ForeachMulScalar, TensorMove, MaxPoolWithArgmaxV1, Mul, Conv2D, MaxPoolGradWithArgmaxV1, MatMulV3". Difference:
  msprof-analyze's no-bound check reads six ratios (its op_summary's vec, mac, scalar, mte1, mte2 = aic_mte2,
  mte3), so ForeachAddList / ForeachMulScalar / Mul, whose aiv_mte2_ratio is 0.91-0.98 (mte2 bound), are in its
  list; ndval reads every aic_* / aiv_* ratio and leaves them out; the other types come in the same order.
  db-level0: neither tool finds anything but the affinity API.
- Overall Summary / slow rank / slow link (cluster) are not advisor rules in ndval: the verdict and the cluster
  summary cover them.

ndval's extra findings: none on these exports.
"""

from __future__ import annotations

import pytest

from analyzer import analyze
from analyzer.dataset import load_dataset

L1 = "ascend/msinsight-level1/rank{}_ascend_pt"
ALIGN = {0: [("hcom_allReduce__586_0_1", 28647232, 1816.8363, 237.9447, 15.7676),
             ("hcom_allReduce__586_3_1", 17267200, 1204.6041, 159.0632, 14.3343)],
         1: [("hcom_allReduce__586_0_1", 28647232, 1825.8965, 263.9253, 15.6894),
             ("hcom_allReduce__586_3_1", 17267200, 1189.4439, 171.8235, 14.517)]}
OPT_SPACE = {0: [("trans_TransData_23", 68.2), ("trans_TransData_17", 67.4),
                 ("aclnnMaxPool2dWithMask_TransDataSpecial_TransData", 66.9),
                 ("aclnnMaxPool2dWithMaskBackward_TransDataSpecial_TransData", 66.9), ("trans_TransData_17", 66.6)],
             1: [("aclnnMaxPool2dWithMaskBackward_TransDataSpecial_TransData", 67.3)]}


def _findings(profile_path, rel: str) -> dict[str, dict]:
    rank = analyze(load_dataset(profile_path(rel))).primary
    assert rank.advisor is not None
    return {f["id"]: f for f in rank.advisor["findings"]}


@pytest.mark.parametrize("rank", [0, 1])
def test_level1_matches_msprof_analyze(profile_path, rank: int) -> None:
    f = _findings(profile_path, L1.format(rank))
    assert [r[0] for r in f["advisor.env-variables"]["rows"]] == ["ACLNN_CACHE_LIMIT", "HOST_CACHE_CAPACITY",
                                                                 "PYTORCH_NPU_ALLOC_CONF"]
    rows = f["advisor.comm-byte-alignment"]["rows"]
    assert [r[:2] for r in rows] == [list(a[:2]) for a in ALIGN[rank]]
    for got, want in zip(rows, ALIGN[rank], strict=True):
        assert got[2:] == pytest.approx(list(want[2:]), abs=1e-3)
    space = [(r[1], r[5]) for r in f["advisor.aicore-pipeline"]["rows"] if r[4] == "—"]
    assert space[: len(OPT_SPACE[rank])] == OPT_SPACE[rank]
    bound = [r[1] for r in f["advisor.aicore-pipeline"]["rows"] if r[4] != "—"]
    assert bound[0] == "aclnnForeachAddListV2_ForeachAddListV2_ForeachAddList"
    assert "advisor.dynamic-shape" in f
    assert set(f) == {"advisor.env-variables", "advisor.comm-byte-alignment", "advisor.aicore-pipeline",
                      "advisor.dynamic-shape", "advisor.affinity-api"}  # no extra finding
    assert_affinity(f, "torch_npu.optim.NpuFusedSGD")


def assert_affinity(f: dict[str, dict], api: str) -> None:
    """msprof-analyze's one affinity API, found as one optimizer step call."""
    assert [r[:4] for r in f["advisor.affinity-api"]["rows"]] == [[api, api.rsplit("NpuFused", 1)[1] + ".step",
                                                                   "6.3.RC2", 1]]


def test_level0_environment_and_affinity_only(profile_path) -> None:
    f = _findings(profile_path, "ascend/msinsight-level0/rank0_ascend_pt")
    assert set(f) == {"advisor.env-variables", "advisor.affinity-api"}
    assert_affinity(f, "torch_npu.optim.NpuFusedSGD")
    rank = analyze(load_dataset(profile_path("ascend/msinsight-level0/rank0_ascend_pt"))).primary
    assert rank.advisor is not None
    assert rank.advisor["rules_without_finding"]["advisor.aicore-freq"].startswith(
        "not evaluated: rated AI-Core frequency unknown")


def test_db_level2_matches_msprof_analyze(profile_path) -> None:
    f = _findings(profile_path, "ascend/msinsight-db-level2")
    assert set(f) == {"advisor.comm-byte-alignment", "advisor.aicore-pipeline", "advisor.aicore-no-bound",
                      "advisor.affinity-api"}
    assert_affinity(f, "torch_npu.optim.NpuFusedSGD")
    assert [r[0] for r in f["advisor.aicore-no-bound"]["rows"]] == [
        "Conv2DBackpropFilter", "TensorMove", "MaxPoolWithArgmaxV1", "Conv2D", "MaxPoolGradWithArgmaxV1"]
    assert [(r[1], r[5]) for r in f["advisor.aicore-pipeline"]["rows"] if r[4] == "—"] == [
        ("trans_TransData_23", 67.08), ("trans_TransData_17", 67.03), ("trans_TransData_17", 67.03),
        ("aclnnMaxPool2dWithMaskBackward_TransDataSpecial_TransData", 66.96),
        ("aclnnMaxPool2dWithMask_TransDataSpecial_TransData", 66.78)]
    assert f["advisor.comm-byte-alignment"]["rows"] == [
        ["hcom_allReduce__865_0_1", 28647232, 1809.295, 237.025, 15.8334],
        ["hcom_allReduce__865_3_1", 17267200, 2089.362, 280.186, 8.2643]]


@pytest.mark.parametrize(("rel", "api"), [("ascend/msinsight-db-level0", "torch_npu.optim.NpuFusedSGD"),
                                         ("ascend/msprof-analyze-single-card/trace_view.json", "torch_npu.optim.NpuFusedAdam"),
                                         ("ascend/msinsight-heatmap-tiny/trace_view.json", None)])
def test_only_the_affinity_api_where_msprof_analyze_has_only_that(profile_path, rel: str, api: str | None) -> None:
    rank = analyze(load_dataset(profile_path(rel))).primary
    assert rank.advisor is not None
    f = {x["id"]: x for x in rank.advisor["findings"]}
    assert set(f) == ({"advisor.affinity-api"} if api else set())
    if api:
        assert_affinity(f, api)
    assert any(v.startswith("not evaluated") for v in rank.advisor["rules_without_finding"].values())
