"""Compute rules on ``kernel_details.csv``: AI-Core / AI-Vector pipeline bound per operator type, operators bound
by no pipeline, block dim vs core count, AICPU operators and their dtypes, dynamic shape, shape affinity.

Sources (msprof-analyze 26.2.0, ``msprof_analyze/advisor/``): ``analyzer/computation/ai_core_performance/
ai_core_performance_checker.py`` + ``rules/en/aicore_performance.yaml`` (cube / FA / vector ratio limits, the
1 % vector-type filter, the 100 MiB cube filter, the 256 / 128 affinity axes); ``analyzer/computation/bound/
operator_bound_checker.py`` + ``config/config.ini`` ``operator_bound_ratio``; ``analyzer/computation/bound/
block_dim_checker.py``; ``analyzer/computation/aicpu/aicpu_checker.py`` (``_MIN_TASK_DURATION``);
``analyzer/computation/op_compile/dynamic_shape_checker.py`` and ``operator_checker.py`` ``is_dynamic_shape``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzer.advisor import kernels as K
from analyzer.advisor.finding import Finding, Rule
from analyzer.advisor.inputs import AdvisorInput
from analyzer.thresholds import Thresholds, passes

_SRC = "msprof-analyze 26.2.0 advisor/"
_KD = "kernel_details.csv: Name, Type, Accelerator Core, Duration(us), Input/Output Shapes, Input Data Types"
PIPELINE = Rule(
    "advisor.aicore-pipeline", "AI-Core / AI-Vector pipeline bound and optimisation space", "computation",
    (_KD + ", aic_mac/mte2/fixpipe_ratio, aiv_vec/mte2/mte3_ratio",),
    ("advisorCubeMacRatio", "advisorCubeMte2Ratio", "advisorFaMte2Ratio", "advisorFaFixpipeRatio", "advisorFaVecRatio",
     "advisorVecTotalRatio", "advisorVecRatio", "advisorVecMte2Ratio", "advisorVecMte3Ratio", "advisorVectorTypeSharePct",
     "advisorCubeMemoryMb", "advisorTopGroups"),
    _SRC + "analyzer/computation/ai_core_performance/ai_core_performance_checker.py, rules/en/aicore_performance.yaml",
    "Bound groups: reduce the bound pipeline's work (larger tiles / fused loads for mte2, fewer format casts for "
    "vec); groups with optimisation space: tune the operator (AOE) or change its shape",
    "Re-capture with aic_metrics=PipeUtilization: the group's ratios and total duration",
    "Operator tuning results are shape-specific; a re-shaped model can lose them", subject="op")
NO_BOUND = Rule(
    "advisor.aicore-no-bound", "Operators bound by no pipeline", "computation",
    (_KD + ", all *_ratio columns",), ("advisorNoBoundRatio", "advisorNoBoundMinUs", "advisorTopGroups"),
    _SRC + "analyzer/computation/bound/operator_bound_checker.py, config/config.ini operator_bound_ratio",
    "Tune the listed operator types (AOE operator tuning) — no pipeline is saturated, so the time goes to latency",
    "Re-capture: the operators' duration falls and one pipeline ratio rises above the limit",
    "AOE tuning takes hours per shape set and must be redone after CANN upgrades", subject="type")
BLOCK_DIM = Rule(
    "advisor.block-dim", "Block dim not a multiple of the core count", "computation",
    (_KD + ", Block Dim, Mix Block Dim", "info.json / profiler_info: ai_core_num, aiv_num"),
    ("advisorBlockDimMinUs", "advisorTopGroups"),
    _SRC + "analyzer/computation/bound/block_dim_checker.py",
    "Tune the listed operators (AOE) or pick shapes whose tiling fills every core",
    "Re-capture: block dim is a multiple of the core count, or the operator's duration falls",
    "Changing shapes to fit the tiling changes the model; tuning is shape-specific", subject="op")
AICPU = Rule(
    "advisor.aicpu", "Operators running on AICPU", "computation",
    (_KD + " (Accelerator Core = AI_CPU), Output Data Types",), ("advisorAicpuMinUs", "advisorTopGroups"),
    _SRC + "analyzer/computation/aicpu/aicpu_checker.py, rules/en/aicpu_rules.yaml",
    "Replace the AICPU operators with AI-Core equivalents; convert float64 (DOUBLE) tensors to float32",
    "Re-capture: no AI_CPU rows (or only short ones) in kernel_details.csv",
    "float32 instead of float64 changes numerics; check the loss curve", subject="type")
DYNAMIC = Rule(
    "advisor.dynamic-shape", "Every operator compiled as dynamic shape", "computation",
    ("kernel_details.csv: OP State",), ("advisorStaticOpsMax",),
    _SRC + "analyzer/computation/op_compile/dynamic_shape_checker.py, analyzer/computation/operator_checker.py",
    "torch_npu.npu.set_compile_mode(jit_compile=False); torch_npu.npu.config.allow_internal_format = False at the "
    "script entry (binary operators, no online compilation)",
    "Re-capture: OP State shows static operators and aclopCompile* calls vanish from the host timeline",
    "Binary operators may be missing for rare shapes (fallback to compilation); internal formats off may slow convolutions")
AFFINITY = Rule(
    "advisor.shape-affinity", "MatMul / FlashAttention shapes off the hardware's preferred multiples", "computation",
    (_KD,), ("advisorCubeAxisMultiple", "advisorFaAxisMultiple", "advisorCubeMemoryMb"),
    _SRC + "analyzer/computation/ai_core_performance/ai_core_performance_checker.py (_check_cube_inner_axis, "
    "_check_fa_inner_axis)",
    "Pad the inner axis of the listed MatMuls to a multiple of 256 and FlashAttention head dim / sequence length to "
    "a multiple of 128",
    "Re-capture: the groups' duration per call falls",
    "Padding costs memory and wasted FLOPs; sequence padding needs attention masks", subject="op")


def _ratio_bound(g: pd.Series, rules: tuple[tuple[str, str, str], ...], th: Thresholds) -> tuple[str, float]:
    """``(bound, optimisation space)``: the pipelines at or over their limit (joined by ``_and_``) or, when none,
    the largest ``limit − ratio`` (msprof-analyze ``del_*_operator_bound``)."""
    hit = [bound for col, bound, key in rules if passes(float(g[col]), th[key])]
    if hit:
        return "_and_".join(hit), 0.0
    return "", max(th.v(key) - float(g[col]) for col, _, key in rules)


_CUBE = (("aic_mac_ratio", "mac", "advisorCubeMacRatio"), ("aic_mte2_ratio", "mte2", "advisorCubeMte2Ratio"))
_FA = (("aic_mte2_ratio", "mte2", "advisorFaMte2Ratio"), ("aic_fixpipe_ratio", "fixpipe", "advisorFaFixpipeRatio"),
       ("aiv_vec_ratio", "vec", "advisorFaVecRatio"))
_VEC = (("aiv_mte2_ratio", "mte2", "advisorVecMte2Ratio"), ("aiv_mte3_ratio", "mte3", "advisorVecMte3Ratio"),
        ("aiv_vec_ratio", "vec", "advisorVecRatio"))


def _vector_bound(g: pd.Series, th: Thresholds) -> tuple[str, float]:
    total = round(float(g["aiv_vec_ratio"] + g["aiv_mte2_ratio"] + g["aiv_mte3_ratio"]), 9)  # ratios have 3 decimals
    if passes(total, th["advisorVecTotalRatio"]):
        return "vec_mte2_mte3", 0.0
    return _ratio_bound(g, _VEC, th)


def _families(gr: pd.DataFrame, th: Thresholds, total: float) -> dict[str, pd.DataFrame]:
    """The groups msprof-analyze inspects: cube (AI_CORE MatMul with ≥ advisorCubeMemoryMb of fp16 tensors),
    FA (FlashAttentionScore[Grad]), vector (AI_VECTOR_CORE / MIX_AIV types with ≥ advisorVectorTypeSharePct of
    the kernel time ``total``, every kernel counted, communication included, as msprof-analyze does)."""
    mem_mb = np.array([2.0 * (K.tensor_elements(a) + K.tensor_elements(b)) / 2**20
                       for a, b in zip(gr["in_shape"], gr["out_shape"], strict=True)]) * gr["count"].to_numpy()
    is_cube = (gr["core"] == "AI_CORE") & gr["type"].str.lower().str.contains("matmul")
    cube = gr[is_cube & passes_series(mem_mb, th, "advisorCubeMemoryMb")]
    fa = gr[gr["type"].isin(["FlashAttentionScore", "FlashAttentionScoreGrad"])]
    vec = gr[gr["core"].isin(["AI_VECTOR_CORE", "MIX_AIV"]) & ~is_cube]
    share = vec.groupby("type")["dur_us"].transform("sum") * 100.0 / total if total > 0 else vec["dur_us"] * 0
    vec = vec[passes_series(share.to_numpy(), th, "advisorVectorTypeSharePct")]
    return {"cube": cube, "fa": fa, "vector": vec}


def _total_us(inp: AdvisorInput) -> float:
    return 0.0 if inp.kernels is None else float(np.nansum(K.numeric(inp.kernels, "Duration(us)")))


def passes_series(values: np.ndarray, th: Thresholds, key: str) -> np.ndarray:
    """Element-wise ``passes`` (NaN never passes)."""
    return np.array([passes(float(v), th[key]) if np.isfinite(v) else False for v in values], dtype=bool)


def _pipeline_rows(fam: str, frame: pd.DataFrame, th: Thresholds) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for _, g in frame.iterrows():
        if fam == "vector":
            bound, space = _vector_bound(g, th)
        else:
            bound, space = _ratio_bound(g, _CUBE if fam == "cube" else _FA, th)
        if any(not np.isfinite(float(g[c])) for c, _, _ in (_CUBE if fam == "cube" else _FA if fam == "fa" else _VEC)):
            continue
        rows.append((fam, g["name"], g["in_shape"], g["dtype"], bound or "—", round(100.0 * space, 2), float(g["dur_us"])))
    top = int(th.v("advisorTopGroups"))
    bound_rows = sorted((r for r in rows if r[4] != "—"), key=lambda r: -float(r[6]))[:top]  # type: ignore[arg-type]
    space_rows = sorted((r for r in rows if r[4] == "—"), key=lambda r: -float(r[5]))[:top]  # type: ignore[arg-type]
    return bound_rows + space_rows


def aicore_pipeline(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Per family (cube / FA / vector): the groups over a pipeline limit (top by duration) and those under every
    limit with their optimisation space (top by space)."""
    if inp.kernels is None or "aiv_vec_ratio" not in inp.kernels.columns:
        return None
    gr = K.groups(inp.kernels)
    rows = [r for fam, frame in _families(gr, th, _total_us(inp)).items() for r in _pipeline_rows(fam, frame, th)]
    if not rows:
        return None
    n_bound = sum(1 for r in rows if r[4] != "—")
    return Finding(PIPELINE, f"{n_bound} bound group(s), {len(rows) - n_bound} with optimisation space",
                   ("family", "op", "input_shapes", "dtype", "bound", "optimisation_space_pct", "dur_us"),
                   tuple(rows), sum(float(str(r[6])) for r in rows))


def all_dynamic(kd: pd.DataFrame | None, th: Thresholds) -> bool | None:
    """True when ``OP State`` is recorded and the static operators are at most ``advisorStaticOpsMax``; None
    when the column is absent (msprof-analyze then skips the check)."""
    if kd is None or "OP State" not in kd.columns:
        return None
    state = K.text(kd, "OP State").str.lower()
    if not (state != "").any():
        return None
    return passes(float((state == "static").sum()), th["advisorStaticOpsMax"])


def dynamic_shape(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Every recorded operator is dynamic shape (compiled at run time)."""
    if not all_dynamic(inp.kernels, th):
        return None
    kd = inp.kernels
    assert kd is not None
    by_type = K.text(kd, "Type").value_counts()
    rows = tuple((t, int(n)) for t, n in by_type.head(int(th.v("advisorTopGroups"))).items())
    return Finding(DYNAMIC, f"all {len(kd)} operators are dynamic shape (OP State)", ("type", "operators"), rows)


def no_bound(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Kernels with ratio data and no ratio over ``advisorNoBoundRatio``, when one lasts over
    ``advisorNoBoundMinUs``; skipped (like msprof-analyze's ``pre_check``) when every operator is dynamic shape."""
    kd = inp.kernels
    if kd is None or "aiv_vec_ratio" not in kd.columns or all_dynamic(kd, th):
        return None
    ratios = np.column_stack([K.numeric(kd, c) for c in ("aiv_vec_ratio", "aic_mac_ratio", "aic_scalar_ratio",
                                                            "aiv_scalar_ratio", "aic_mte1_ratio", "aic_mte2_ratio",
                                                            "aiv_mte2_ratio", "aiv_mte3_ratio")])
    ratios = np.nan_to_num(ratios)
    has = ratios.any(axis=1)
    none_over = ~np.array([any(passes(float(v), th["advisorNoBoundRatio"]) for v in row) for row in ratios])
    dur = np.nan_to_num(K.numeric(kd, "Duration(us)"))
    sel = has & none_over
    if not sel.any() or not passes(float(dur[sel].max()), th["advisorNoBoundMinUs"]):
        return None
    frame = pd.DataFrame({"type": K.text(kd, "Type")[sel].to_numpy(), "dur": dur[sel]})
    agg = frame.groupby("type").agg(dur=("dur", "sum"), n=("dur", "size"), longest=("dur", "max"))
    agg = agg.sort_values("longest", ascending=False)  # msprof-analyze lists types by their longest kernel
    rows = tuple((t, int(r.n), float(r.dur), float(r.longest)) for t, r in agg.head(int(th.v("advisorTopGroups"))).iterrows())
    return Finding(NO_BOUND, f"{int(sel.sum())} kernels of {len(agg)} types have no pipeline over the limit",
                   ("type", "kernels", "dur_us", "longest_us"), rows, float(dur[sel].sum()))


def block_dim(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """AI_CORE / AI_VECTOR_CORE / MIX_AIC kernels whose block dim is not a multiple of the cores of their kind;
    not evaluated without the core counts or for an all-dynamic capture (msprof-analyze's pre-check)."""
    kd = inp.kernels
    if kd is None or inp.ai_core_num is None or "Block Dim" not in kd.columns or all_dynamic(kd, th):
        return None
    core = K.text(kd, "Accelerator Core")
    cores = np.where((core == "AI_CORE") | (inp.aiv_num is None), inp.ai_core_num, inp.aiv_num or 0)
    bd = np.nan_to_num(K.numeric(kd, "Block Dim")).astype(np.int64)
    mix = np.nan_to_num(K.numeric(kd, "Mix Block Dim")).astype(np.int64)
    kind = core.isin(["AI_CORE", "AI_VECTOR_CORE", "MIX_AIC"]).to_numpy() & (cores > 0)
    off = kind & (bd % np.maximum(cores, 1) != 0)
    if inp.aiv_num:
        off &= ~((core == "MIX_AIC").to_numpy() & (mix % inp.aiv_num == 0))
    dur = np.nan_to_num(K.numeric(kd, "Duration(us)"))
    off &= dur > th.v("advisorBlockDimMinUs")
    if not off.any():
        return None
    frame = pd.DataFrame({"name": K.text(kd, "Name")[off].to_numpy(), "core": core[off].to_numpy(),
                          "block_dim": bd[off], "dur": dur[off]})
    agg = frame.groupby(["name", "core", "block_dim"]).agg(dur=("dur", "sum"), n=("dur", "size"))
    agg = agg.sort_values("dur", ascending=False).head(int(th.v("advisorTopGroups")))
    rows = tuple((*tuple(k), int(r.n), float(r.dur)) for k, r in agg.iterrows())  # type: ignore[arg-type]
    return Finding(BLOCK_DIM, f"{int(off.sum())} kernels with block dim not a multiple of {inp.ai_core_num} AI cores"
                   + (f" / {inp.aiv_num} vector cores" if inp.aiv_num else ""),
                   ("op", "core", "block_dim", "kernels", "dur_us"), rows, float(dur[off].sum()))


def aicpu(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """AI_CPU kernels, when the longest reaches ``advisorAicpuMinUs``; the dtype column flags float64 ones."""
    kd = inp.kernels
    if kd is None or "Accelerator Core" not in kd.columns:
        return None
    sel = (K.text(kd, "Accelerator Core") == "AI_CPU").to_numpy()
    dur = np.nan_to_num(K.numeric(kd, "Duration(us)"))
    if not sel.any() or not passes(float(dur[sel].max()), th["advisorAicpuMinUs"]):
        return None
    dtypes = (K.text(kd, "Input Data Types") + ";" + K.text(kd, "Output Data Types"))[sel].str.upper()
    frame = pd.DataFrame({"type": K.text(kd, "Type")[sel].to_numpy(), "dtypes": dtypes.to_numpy(), "dur": dur[sel]})
    frame["double"] = frame["dtypes"].str.contains("DOUBLE|FLOAT64|DT_DOUBLE", regex=True)
    agg = frame.groupby("type").agg(dur=("dur", "sum"), n=("dur", "size"), double=("double", "any"),
                                    dtypes=("dtypes", "first")).sort_values("dur", ascending=False)
    rows = tuple((t, int(r.n), float(r.dur), r.dtypes, bool(r.double)) for t, r in agg.iterrows())
    return Finding(AICPU, f"{int(sel.sum())} AICPU kernels of {len(agg)} types"
                   + (f"; float64 in {int(agg['double'].sum())} type(s)" if agg["double"].any() else ""),
                   ("type", "kernels", "dur_us", "dtypes", "float64"), rows, float(dur[sel].sum()))


def _fa_axes(in_shape: str, out_shape: str) -> tuple[int | None, int | None]:
    """(head dim D, sequence length S) of a FlashAttention query: BNSD -> (d[3], d[2]); BSH/SBH with the
    softmax output ``B,N,S,8`` -> (H / N, S)."""
    q, out = K.dims(in_shape), K.dims(out_shape)
    if len(q) == 4:
        return q[3], q[2]
    if len(q) == 3 and len(out) == 4 and out[1]:
        return q[2] // out[1] if q[2] % out[1] == 0 else None, out[2]
    return None, None


def shape_affinity(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """Cube groups whose two inputs' inner axes are not multiples of ``advisorCubeAxisMultiple``; FA groups whose
    D or S is not a multiple of ``advisorFaAxisMultiple``."""
    if inp.kernels is None:
        return None
    fams = _families(K.groups(inp.kernels), th, _total_us(inp))
    cube_m, fa_m = int(th.v("advisorCubeAxisMultiple")), int(th.v("advisorFaAxisMultiple"))
    rows: list[tuple[object, ...]] = []
    for _, g in fams["cube"].iterrows():
        a, b = K.dims(g["in_shape"], 0), K.dims(g["in_shape"], 1)
        if len(a) == 2 and len(b) == 2 and (a[-1] % cube_m or b[-1] % cube_m):
            rows.append(("cube", g["name"], g["in_shape"], f"inner axes {a[-1]}, {b[-1]} not multiples of {cube_m}",
                         float(g["dur_us"])))
    for _, g in fams["fa"].iterrows():
        d, s = _fa_axes(g["in_shape"], g["out_shape"])
        bad = [f"{n}={v}" for n, v in (("D", d), ("S", s)) if v is not None and v % fa_m]
        if bad:
            rows.append(("fa", g["name"], g["in_shape"], f"{', '.join(bad)} not multiples of {fa_m}", float(g["dur_us"])))
    if not rows:
        return None
    return Finding(AFFINITY, f"{len(rows)} group(s) with shapes off the preferred multiples",
                   ("family", "op", "input_shapes", "why", "dur_us"), tuple(rows), sum(float(str(r[4])) for r in rows))


RULES = ((PIPELINE, aicore_pipeline), (NO_BOUND, no_bound), (BLOCK_DIM, block_dim), (AICPU, aicpu),
         (DYNAMIC, dynamic_shape), (AFFINITY, shape_affinity))
