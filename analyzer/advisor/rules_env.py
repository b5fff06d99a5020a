"""Environment-variable rule: the variables torch_npu records in ``profiler_metadata.json``.

Source: msprof-analyze 26.2.0 ``advisor/analyzer/overall/environment_variable_checker.py``
(``ENV_SUGGEST_CONDITION``) and ``advisor/rules/en/environment_variable_info.yaml`` (descriptions and
suggestions). Each variable's condition is one entry of :data:`CONDITIONS`; the numbers are thresholds.
"""

from __future__ import annotations

from collections.abc import Callable

from analyzer.advisor.finding import Finding, Rule
from analyzer.advisor.inputs import AdvisorInput
from analyzer.thresholds import Thresholds, passes

ENV = Rule(
    "advisor.env-variables", "Environment variables worth changing", "environment",
    ("profiler_metadata.json: ENV_VARIABLES",),
    ("advisorAclnnCacheLimit", "advisorHostCacheCapacity", "advisorLogLevelError"),
    "msprof-analyze 26.2.0 advisor/analyzer/overall/environment_variable_checker.py (ENV_SUGGEST_CONDITION), "
    "advisor/rules/en/environment_variable_info.yaml",
    "Set the suggested value of each listed variable before the run (see the 'suggestion' column)",
    "Re-capture: profiler_metadata.json shows the new values and the variables no longer appear here; compare "
    "host dispatch time and step time",
    "ACLNN_CACHE_LIMIT / HOST_CACHE_CAPACITY cost host memory; expandable_segments changes fragmentation "
    "behaviour; unsetting HCCL_ALGO lets HCCL choose the algorithm", subject="variable")


def _int(v: str) -> float | None:
    try:
        return float(int(v.strip()))
    except ValueError:
        return None


def _below(th: Thresholds, key: str) -> Callable[[str], bool]:
    """Unset, or a number that reaches threshold ``key`` (e.g. ``< 10000``)."""
    return lambda v: v.strip() == "" or (_int(v) is not None and passes(_int(v), th[key]))


#: variable -> (condition on its value, suggestion); msprof-analyze's ENV_SUGGEST_CONDITION in the same order.
def conditions(th: Thresholds) -> dict[str, tuple[Callable[[str], bool], str]]:
    """The per-variable conditions (numbers from the thresholds file)."""
    log_level = th.v("advisorLogLevelError")
    return {
        "ASCEND_GLOBAL_LOG_LEVEL": (lambda v: v.strip() != "" and _int(v) != log_level,
                                    f"export ASCEND_GLOBAL_LOG_LEVEL={log_level:g} (debug/info logging slows training)"),
        "HCCL_RDMA_TC": (lambda v: v.strip() != "", "check the RoCE DSCP value (DSCP x 4) against the switch config"),
        "HCCL_RDMA_SL": (lambda v: v.strip() != "", "must equal the NIC's PFC priority, else performance drops"),
        "ACLNN_CACHE_LIMIT": (_below(th, "advisorAclnnCacheLimit"),
                              "export ACLNN_CACHE_LIMIT=100000 when aclnn operators and the host are the bottleneck"),
        "HOST_CACHE_CAPACITY": (_below(th, "advisorHostCacheCapacity"),
                                "export HOST_CACHE_CAPACITY=20 (caches dynamic-shape execution data)"),
        "PYTORCH_NPU_ALLOC_CONF": (lambda v: "expandable_segments:True" not in v,
                                   "export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True"),
        "ASCEND_LAUNCH_BLOCKING": (lambda v: v.strip() != "" and _int(v) == 1.0,
                                   "export ASCEND_LAUNCH_BLOCKING=0 (1 runs every operator synchronously)"),
        "HCCL_ALGO": (lambda v: v.strip() != "", "unset HCCL_ALGO unless the algorithm was chosen by measurement"),
    }


def env_variables(inp: AdvisorInput, th: Thresholds) -> Finding | None:
    """One row per recorded variable whose condition holds (only variables present in the file are judged)."""
    if inp.env is None:
        return None
    rows = tuple((name, inp.env[name], hint) for name, (cond, hint) in conditions(th).items()
                 if name in inp.env and cond(inp.env[name]))
    if not rows:
        return None
    return Finding(ENV, f"{len(rows)} environment variable(s) differ from the suggested setting: "
                   + ", ".join(r[0] for r in rows), ("variable", "value", "suggestion"), rows)


RULES = ((ENV, env_variables),)
