"""Step-time assembly: per-stage costs -> pipeline -> PerfParts -> RealParts (spec §7, seed P3/P4).

The schedule (:mod:`estimator.perf.pipeline`) gives the step time; the straggler stage's parts
times ``m`` are the useful work and ``BUBBLE`` is the rest (reference §3.4-§3.5).

Options (spec §5): ``ep_bubble_overlap_ratio`` (P3: EP comm hides in the bubble on stages with
ep > 1), ``ep_comm_overlap`` and ``convert_ep_comm_to_time`` (P4: EP in seconds, or left in bytes
like the reference), ``dp_comm_zero_hack`` / ``tp_comm_half_hack`` (the reference's test hacks),
``perf_mode`` (``score``: compute in FLOP·B_p and comm in bytes·comm_w, the reference's relative
units), ``compute_efficiency``, per-dimension overlaps, ``part_coefficients``,
``host_launch_overhead`` (each pass takes ``max(device, host launch time)``,
:class:`estimator.perf.stage.StageCost`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from estimator.inputs.profiles import moe_tp_without_sp
from estimator.perf import comm, network, offload, overlap, pipeline
from estimator.perf.context import Ctx, config_context, context
from estimator.perf.report import MB_PARTS, PERF_PARTS, PerfReport
from estimator.perf.stage import StageCost, origin, stage_costs
from estimator.shared.arrays import ARRAY, any_true, divide_or_nan, pick, where
from ndval.core import cache
from ndval.core.units import FLOPS_PER_TFLOPS

if TYPE_CHECKING:
    from estimator.config.schema import EstimatorConfig


def apply_coefficients(stages: list[StageCost], coefficients: dict[str, float] | None) -> list[StageCost]:
    """Per-part regression coefficients (calibration): each stage part × its coefficient."""
    if not coefficients:
        return stages
    k = {name: coefficients.get(name, 1.0) for name in PERF_PARTS}
    return [
        replace(
            s, fw_compute=s.fw_compute * k["FW_COMPUTE"], bw_compute=s.bw_compute * k["BW_COMPUTE"],
            recompute=s.recompute * k["RECOMPUTE"], mp_comm=s.mp_comm * k["MP_COMM"], ep_comm=s.ep_comm * k["EP_COMM"],
            cp_comm=s.cp_comm * k["CP_COMM"], dp_comm=s.dp_comm * k["DP_COMM"],
        )
        for s in stages
    ]


def schedule_time(schedule: str, stages: list[StageCost], m: int, vpp: int, hidden: Sequence[float],
                  per_micro_batch: Sequence[float] | None = None) -> float:
    """Pipeline time of per-stage costs under ``schedule`` when stage ``i`` hides ``hidden[i]`` of its
    EP comm in the bubble (seed P3). ZB-V: F = forward compute + half the exposed comm, B = half the
    backward compute + recompute + half the comm, W = half the backward compute (Qi et al. 2024
    split the backward into equal input- and weight-gradient halves). ``per_micro_batch``: the
    stages' ``per_micro_batch`` when the caller has them."""
    if per_micro_batch is None:
        per_micro_batch = [s.per_micro_batch for s in stages]
    eff = [s - h for s, h in zip(per_micro_batch, hidden, strict=True)]
    if schedule == "interleaved":
        return pipeline.interleaved_time(eff, m, vpp)
    if schedule == "zero_bubble_v":
        comm_s = [s.mp_comm + s.ep_comm + s.cp_comm - h for s, h in zip(stages, hidden, strict=True)]
        fwd = [s.fw_time + c / 2 for s, c in zip(stages, comm_s, strict=True)]
        b_in = [s.bw_time / 2 + s.rec_time + c / 2 for s, c in zip(stages, comm_s, strict=True)]
        b_w = [s.bw_time / 2 for s in stages]
        return pipeline.zero_bubble_v_time(fwd, b_in, b_w, m)
    return pipeline.one_f_one_b_time(eff, m)


def _hidden_ep(s: StageCost, ratio: float) -> float:
    """EP time stage ``s`` hides in the bubble (seed P3): ``ratio·ep_comm`` on stages with ep > 1
    (:func:`pipeline.ep_overlapped_stage_time`); with a host launch bound only the part the pass
    time really loses, ``s_i − Σ_pass max(device_p − ratio·ep_p, host_p)`` (a host-bound pass keeps
    its length, so ``s_i − hidden`` never falls as EP comm grows). A pure function of the record and
    ``ratio``, kept per (record, ratio) in the cache registry (a sweep's stages share their records)."""
    if not ratio:
        return 0.0
    priced = origin(s)  # relabelled copies have the priced record's numbers
    key = (id(priced), ratio)
    hit = _HIDDEN_EP.get(key)  # the registry store read inline (every stage of every estimate)
    if hit is not None and hit[0] is priced:
        return hit[1]  # type: ignore[no-any-return]
    return cache.held_value(_HIDDEN_EP, key, priced, _hidden_ep_of, priced, ratio)


#: :func:`_hidden_ep` of a stage cost at a ratio
_HIDDEN_EP = cache.store("estimator.hidden_ep", bound=8192, key="(id(stage cost), ratio)",
                         holds="(the cost, EP seconds it hides in the bubble)")


def _hidden_ep_of(s: StageCost, ratio: float) -> float:
    plain = s.per_micro_batch - pipeline.ep_overlapped_stage_time(s.per_micro_batch, s.ep_comm, ratio, s.ep)
    if not s.has_host_term:
        return plain
    return s.per_micro_batch - s.per_micro_batch_ep_hidden(ratio)


def assemble(
    stages: list[StageCost], *, schedule: str, num_micro_batches: int, vpp: int, ratio: float,
    pp_comm: float, bubble_coefficient: float = 1.0,
) -> tuple[dict[str, float], dict[str, float], pipeline.StepTime]:
    """PerfParts and RealParts of one step from stage costs (reference §3.4-§3.5, spec §7).

    ``time_sum = m·(per-micro-batch parts of the straggler) + its DP`` and ``BUBBLE = total −
    time_sum`` (:func:`pipeline.step_time`, with the P3 overlap ``ratio``); ``PP_WAIT = BUBBLE +
    PP_COMM``; ``TOTAL`` = sum of RealParts.
    """
    m = num_micro_batches
    hidden = [_hidden_ep(s, ratio) for s in stages]
    per_mb = [s.per_micro_batch for s in stages]
    st = pipeline.step_time(
        lambda h: schedule_time(schedule, stages, m, vpp, h, per_mb), hidden, per_mb, m,
        [s.dp_comm + s.optimizer for s in stages],
    )
    k = st.straggler_stage
    if type(k) is ARRAY:  # one straggler per layout (estimator.shared.arrays.pick)
        perf = {name: m * pick(k, [s.part(name) for s in stages]) for name in MB_PARTS}
        optimizer, dp_comm = pick(k, [s.optimizer for s in stages]), pick(k, [s.dp_comm for s in stages])
    else:
        strag = stages[k]
        parts = strag.parts()
        perf = {name: m * parts[name] for name in MB_PARTS}
        optimizer, dp_comm = strag.optimizer, strag.dp_comm
    perf["BW_COMPUTE"] += optimizer  # the per-step optimizer step (operator roofline; 0 otherwise)
    perf["DP_COMM"] = dp_comm
    perf["PP_COMM"] = pp_comm
    perf["BUBBLE"] = st.bubble * bubble_coefficient
    real = {
        "COMP": perf["FW_COMPUTE"] + perf["BW_COMPUTE"] + perf["RECOMPUTE"],
        "DP_WAIT": perf["DP_COMM"],
        "MP_WAIT": perf["MP_COMM"],
        "EP_WAIT": perf["EP_COMM"],
        "CP_WAIT": perf["CP_COMM"],
        "PP_WAIT": perf["BUBBLE"] + perf["PP_COMM"],
    }
    real["TOTAL"] = sum(real.values())
    return perf, real, st


def pp_comm_value(cfg: EstimatorConfig, ctx: Ctx | None = None) -> float:
    """PP_COMM: the p2p transfers on the critical path (:func:`comm.p2p_transfers_on_critical_path`),
    each ``b·(s/cp)·h·B_c`` (``/tp`` with SP) between stages ``tp·cp·dp`` ranks apart."""
    ctx = ctx or context(cfg)
    p = cfg.parallel
    n = comm.p2p_transfers_on_critical_path(p.pp, cfg.num_micro_batches, p.vpp)
    size = ctx.tokens / ctx.cp * cfg.model.hidden_size * ctx.b_compute / where(ctx.sp, ctx.tp, 1)
    cs = comm.pp_p2p_collectives(size, n)
    if ctx.score:
        value = sum(map(comm.wire_bytes, cs)) * ctx.comm_weight
    else:
        value = network.collectives_time_s(cs, ctx.tp * ctx.cp * ctx.dp, ctx.levels)
    coefficient = (cfg.options.part_coefficients or {}).get("PP_COMM", 1.0)
    return value * coefficient


def estimate_perf(cfg: EstimatorConfig) -> PerfReport:
    """Step-time estimate of ``cfg`` (spec §2, §7)."""
    o, p = cfg.options, cfg.parallel
    m = cfg.num_micro_batches
    ctx = config_context(cfg)
    stages = apply_coefficients(stage_costs(cfg, ctx), o.part_coefficients)
    bubble_k = (o.part_coefficients or {}).get("BUBBLE", 1.0)
    pp_total = pp_comm_value(cfg, ctx)
    pp_exposed = overlap.exposed_pp(cfg, pp_total, stages)
    perf, real, st = assemble(
        stages, schedule=p.schedule, num_micro_batches=m, vpp=p.vpp, ratio=o.ep_bubble_overlap_ratio,
        pp_comm=pp_exposed, bubble_coefficient=bubble_k,
    )
    total = real["TOTAL"]
    time_mode = o.perf_mode == "time"
    warnings = []
    if time_mode and not o.convert_ep_comm_to_time and any(any_true(s.ep_comm) for s in stages):
        warnings.append("EP_COMM left in bytes (convert_ep_comm_to_time: false): TOTAL mixes bytes and seconds")
    if cfg.train.cpu_offloading_num_layers and (reason := offload.unpriced_reason(cfg)) is not None:
        warnings.append(f"train.cpu_offloading_num_layers {cfg.train.cpu_offloading_num_layers}: the activation copies "
                        f"to and from host memory are not priced (memory only): {reason}")
    if note := moe_tp_without_sp(cfg):
        warnings.append(note)
    tokens = m * cfg.train.micro_batch_size * cfg.train.seq_length * p.dp
    model_flops = sum(3.0 * s.fw_flops for s in stages) * m * p.tp * p.cp * p.dp
    peak = cfg.hardware.peak_tflops[cfg.precision.compute] * FLOPS_PER_TFLOPS
    return PerfReport(
        perf_parts=perf,
        real_parts=real,
        stage_times_s=[s.per_micro_batch for s in stages],
        straggler_stage=st.straggler_stage,
        tokens_per_s=divide_or_nan(tokens, total) if time_mode else float("nan"),
        mfu=divide_or_nan(model_flops, total * p.world_size * peak) if time_mode else float("nan"),
        stages=stages,
        mode=o.perf_mode,
        unit="s" if time_mode else "score",
        schedule=p.schedule,
        num_micro_batches=m,
        pipeline_s=st.pipeline,
        work_bound_s=st.work_bound,
        warnings=warnings,
        overlap=overlap.report_overlap(stages, st.straggler_stage, m, (pp_total, pp_exposed)),
    )
