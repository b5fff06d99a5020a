"""The step-time report: part names (spec §2, §7), :class:`PerfReport` and its text table."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from estimator.perf.stage import StageCost

PERF_PARTS = ("FW_COMPUTE", "BW_COMPUTE", "RECOMPUTE", "DP_COMM", "MP_COMM", "EP_COMM", "CP_COMM", "PP_COMM", "BUBBLE")
REAL_PARTS = ("COMP", "DP_WAIT", "MP_WAIT", "EP_WAIT", "CP_WAIT", "PP_WAIT", "TOTAL")
#: per-micro-batch parts of a stage (PP_COMM and DP_COMM are per step)
MB_PARTS = ("FW_COMPUTE", "BW_COMPUTE", "RECOMPUTE", "MP_COMM", "EP_COMM", "CP_COMM")


@dataclass(frozen=True)
class PerfReport:
    """Step-time estimate (spec §2). ``unit`` is ``s`` in ``time`` mode, ``score`` otherwise.

    ``perf_parts``/``real_parts``: name -> value per step; ``stage_times_s``: per-micro-batch stage
    times ``s_i`` (EP counted in full); ``straggler_stage``: the stage with the most work.
    """

    perf_parts: dict[str, float]
    real_parts: dict[str, float]
    stage_times_s: list[float]
    straggler_stage: int
    tokens_per_s: float
    mfu: float
    stages: list[StageCost]
    mode: str
    unit: str
    schedule: str
    num_micro_batches: int
    pipeline_s: float
    work_bound_s: float
    warnings: list[str] = field(default_factory=list)
    #: per comm part of the straggler stage: seconds per step the overlap mechanisms hide and leave
    #: exposed (``{"DP_COMM": {"hidden_s": .., "exposed_s": ..}, ...}``, :mod:`estimator.perf.overlap`);
    #: empty when nothing hides
    overlap: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return self.real_parts["TOTAL"]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict derived from the fields (stage records included)."""
        return asdict(self)


def format_perf_table(report: PerfReport) -> str:
    """Per-stage table and the PerfParts / RealParts of a report (tabulate)."""
    from tabulate import tabulate

    u = report.unit
    rows = [
        [s.stage, s.ep, s.fw_compute, s.bw_compute, s.recompute, s.mp_comm, s.ep_comm, s.cp_comm, s.dp_comm,
         s.per_micro_batch, "*" if s.stage == report.straggler_stage else ""]
        for s in report.stages
    ]
    head = ["stage", "ep", f"FW [{u}/mb]", "BW", "REC", "MP", "EP", "CP", f"DP [{u}/step]", "s_i", "straggler"]
    stage_table = tabulate(rows, headers=head, floatfmt=".4g")
    parts = [[k, v] for k, v in report.perf_parts.items()]
    real = [[k, v, 100.0 * v / report.total if report.total else float("nan")] for k, v in report.real_parts.items()]
    lines = [
        f"schedule {report.schedule}, m = {report.num_micro_batches}, mode {report.mode} (unit {u})",
        stage_table,
        "",
        tabulate(parts, headers=["PerfPart", f"[{u}/step]"], floatfmt=".4g"),
        "",
        tabulate(real, headers=["RealPart", f"[{u}/step]", "% of TOTAL"], floatfmt=".4g"),
    ]
    if report.overlap:
        hid = [[k, v["hidden_s"], v["exposed_s"]] for k, v in report.overlap.items()]
        lines += ["", tabulate(hid, headers=["overlap (straggler)", f"hidden [{u}/step]", f"exposed [{u}/step]"],
                               floatfmt=".4g")]
    if any(st.by_class for st in report.stages):
        lines += ["", format_class_table(report)]
    if report.mode == "time":
        lines.append(f"tokens/s {report.tokens_per_s:.4g}   MFU {100 * report.mfu:.2f} %")
    lines += [f"warning: {w}" for w in report.warnings]
    return "\n".join(lines)


def format_class_table(report: PerfReport) -> str:
    """Device time per operator class per stage (seconds per micro-batch, all passes; optimizer per
    step), beside the stage's comm and exposed host time — the class names ``ndval calibrate`` and
    the analyzer's kernel classes use (``analyzer.kernel_classes``)."""
    from tabulate import tabulate

    from estimator.perf.operators import OP_CLASSES

    rows = []
    for st in report.stages:
        by = {**st.by_class, "optimizer": st.optimizer}
        rows.append([st.stage, *(by.get(c, 0.0) for c in OP_CLASSES), st.mp_comm, st.ep_comm, st.cp_comm,
                     sum(st.exposed_host()), st.dp_comm])
    head = ["stage", *(f"{c}" + (" [s/step]" if c == "optimizer" else "") for c in OP_CLASSES),
            "collective tp", "collective ep", "collective cp", "exposed host", "collective dp [s/step]"]
    return "operator classes [s per micro-batch]\n" + tabulate(rows, headers=head, floatfmt=".4g")
