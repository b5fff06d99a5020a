"""Subjects: what a validation run measures against the cases' data.

A *subject* computes the estimates a case judges. Built in: ``ndval`` (ndval's estimator and
analyzer). A project can validate its own estimator instead, with the same cases and the same
sign-off:

- a Python callable registered in the ``ndval.subjects`` entry-point group: ``fn(task, config)``
  returns the results mapping below (an optional ``tasks`` attribute lists the tasks it provides);
- an external command, declared in the project's settings::

      [tool.ndval]
      subject = "team-est"                        # or: ndval validate --subject team-est
      [tool.ndval.subjects.team-est]
      command = ["python", "tools/estimate.py"]   # or one string, split like a shell; a leading
                                                  # python / python3 is the interpreter running ndval
      timeout_s = 60                              # default 120
      format = "json"                             # how the config is given: json (default) or yaml
      tasks = ["memory", "step_time"]             # default ["memory"]

  The command gets the estimator config (``EstimatorConfig`` as JSON/YAML: model, train,
  parallel, recompute, hardware, options) on stdin, or in a file when an argument contains
  ``{config}`` (replaced by the path); ``NDVAL_SUBJECT_TASK`` names the task. It prints the results
  as one JSON object on stdout and exits 0. Non-zero exit, a timeout, output that is not JSON or
  does not follow the schema make the case BROKEN with the command's stderr tail.

Results of the ``memory`` task (MiB)::

    {"peak_mb": 10240.0,                                    # required
     "stages": [{"stage": 0, "total_mb": 10240.0,            # optional; default one stage = peak
                 "components": {"params": 1.0, "optimizer_states": 2.0, "grads": 1.0,
                                "activations": 3.0}}],       # optional, needed for like-for-like
     "peak_stage": 0,                                        # optional; default the largest stage
     "warnings": ["..."]}                                    # optional

Results of the ``step_time`` task (kind ``estimator.perf``; seconds per training step)::

    {"real_parts": {"TOTAL": 1.25,                          # required
                    "COMP": 0.9, "DP_WAIT": 0.1, "MP_WAIT": 0.1, # optional, each needed only by the
                    "EP_WAIT": 0.0, "CP_WAIT": 0.0, "PP_WAIT": 0.15},  # assertions that read it
     "perf_parts": {"...": 0.0},                            # optional: any further breakdown (s)
     "stage_times_s": [1.1, 1.25],                          # optional: per pipeline stage
     "straggler_stage": 1,                                  # optional
     "warnings": ["..."]}                                   # optional

Every number finite and >= 0. The kind's ``calibrate`` and ``host_launch_cost_from`` steps fit or set
knobs of ndval's own model, so cases using them are skipped for another subject, with the reason.

Kinds a subject does not provide are skipped with the reason (``recorded.results`` needs no subject);
such skips begin with ``subject '<name>'`` and are not counted as missing real data by the gate.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ndval.core import strictjson
from ndval.harness import paths

BUILTIN = "ndval"
ENTRY_POINT_GROUP = "ndval.subjects"
#: kind -> the task a subject must provide to run it (kinds not listed run ndval's own code only)
KIND_TASKS = {"estimator.memory": "memory", "estimator.perf": "step_time"}
#: the step-time components of the ``step_time`` task (``estimator.perf``'s RealParts), seconds
STEP_TIME_PARTS = ("COMP", "DP_WAIT", "MP_WAIT", "EP_WAIT", "CP_WAIT", "PP_WAIT", "TOTAL")
#: kinds that evaluate recorded numbers and need no subject
SUBJECT_FREE_KINDS = {"recorded.results"}
STDERR_TAIL_CHARS = 1500
DEFAULT_TIMEOUT_S = 120.0


class SubjectError(Exception):
    """The subject could not give a usable result (the case is broken, the message says why)."""


class StageResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stage: int = Field(ge=0)
    total_mb: float = Field(ge=0)
    components: dict[str, float] = Field(default_factory=dict)

    @field_validator("total_mb")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("must be finite")
        return v

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


class MemoryResult(BaseModel):
    """The ``memory`` task's results; quacks like ``estimator.MemoryReport`` where the kind reads it."""

    model_config = ConfigDict(extra="forbid")
    peak_mb: float = Field(ge=0)
    stages: list[StageResult] = Field(default_factory=list)
    peak_stage: int | None = None
    warnings: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _defaults(self) -> MemoryResult:
        if not math.isfinite(self.peak_mb):
            raise ValueError("peak_mb must be finite")
        if not self.stages:
            self.stages = [StageResult(stage=0, total_mb=self.peak_mb)]
        if self.peak_stage is None:
            self.peak_stage = max(self.stages, key=lambda s: s.total_mb).stage
        return self

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


def _finite_nonnegative(values: dict[str, float] | list[float], what: str) -> None:
    items = values.items() if isinstance(values, dict) else enumerate(values)
    for key, v in items:
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"{what}[{key}] must be finite and >= 0, got {v}")


class StepTimeResult(BaseModel):
    """The ``step_time`` task's results (s); quacks like ``estimator.PerfReport`` where the kind reads it."""

    model_config = ConfigDict(extra="forbid")
    real_parts: dict[str, float]
    perf_parts: dict[str, float] = Field(default_factory=dict)
    stage_times_s: list[float] = Field(default_factory=list)
    straggler_stage: int | None = Field(None, ge=0)
    unit: str = "s"
    warnings: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> StepTimeResult:
        if "TOTAL" not in self.real_parts:
            raise ValueError("real_parts needs TOTAL (seconds per step)")
        unknown = sorted(set(self.real_parts) - set(STEP_TIME_PARTS))
        if unknown:
            raise ValueError(f"real_parts: unknown part(s) {unknown} (known: {', '.join(STEP_TIME_PARTS)})")
        if self.unit != "s":
            raise ValueError(f"unit must be 's', got {self.unit!r}")
        _finite_nonnegative(self.real_parts, "real_parts")
        _finite_nonnegative(self.perf_parts, "perf_parts")
        _finite_nonnegative(self.stage_times_s, "stage_times_s")
        return self

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


#: task -> the schema its results must follow
RESULT_MODELS: dict[str, type[MemoryResult] | type[StepTimeResult]] = {"memory": MemoryResult, "step_time": StepTimeResult}


@dataclass
class Subject:
    """A named subject: ``memory(cfg)`` returns an object with ``peak_mb``, ``peak_stage``, ``stages``
    (each ``stage``, ``total_mb``, ``components``), ``warnings`` and ``to_dict()``."""

    name: str
    how: str
    tasks: tuple[str, ...]
    call: Callable[[str, Any], Any] = field(repr=False)

    @property
    def builtin(self) -> bool:
        return self.name == BUILTIN

    def provides(self, task: str) -> bool:
        return task in self.tasks

    def memory(self, cfg: Any) -> Any:
        return self.call("memory", cfg)

    def step_time(self, cfg: Any) -> Any:
        """``real_parts`` (s; TOTAL at least), ``perf_parts``, ``stage_times_s``, ``straggler_stage``, ``unit``."""
        return self.call("step_time", cfg)


def _ndval(task: str, cfg: Any) -> Any:
    import estimator

    if task == "memory":
        return estimator.estimate_memory(cfg)
    if task == "step_time":
        return estimator.estimate_perf(cfg)
    raise SubjectError(f"ndval subject: unknown task {task!r}")  # pragma: no cover - guarded by provides()


def _config_dict(cfg: Any) -> dict[str, Any]:
    return cfg.model_dump(mode="json") if hasattr(cfg, "model_dump") else dict(cfg)


def _validated(name: str, task: str, raw: Any) -> MemoryResult | StepTimeResult:
    model = RESULT_MODELS.get(task)
    if model is None:
        raise SubjectError(f"subject {name!r}: unknown task {task!r} (known: {', '.join(RESULT_MODELS)})")
    if isinstance(raw, model):
        return raw
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise SubjectError(f"subject {name!r}: {task} results do not follow the schema: field {where}: "
                           f"{first['msg']} ({exc.error_count()} error(s); see docs/harness.md, Subjects)") from None


def _tail(text: str) -> str:
    text = (text or "").strip()
    return ("…" + text[-STDERR_TAIL_CHARS:]) if len(text) > STDERR_TAIL_CHARS else (text or "(empty)")


#: a command's first word that means "the interpreter running the harness" (its virtual environment, its
#: packages), not whichever ``python`` comes first on PATH
PYTHON_WORDS = ("python", "python3")


def command_argv(command: str | list[Any]) -> list[str]:
    """The subject command's argv: a string is split like a shell; a leading ``python``/``python3`` becomes
    ``sys.executable``."""
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if argv and argv[0] in PYTHON_WORDS:
        argv[0] = sys.executable
    return argv


def run_command(name: str, spec: dict[str, Any], task: str, cfg: Any, root: Path) -> MemoryResult | StepTimeResult:
    """Run the subject's command for ``task`` on ``cfg``; every failure is a ``SubjectError``."""
    command = spec["command"]
    argv = command_argv(command)
    fmt = spec.get("format", "json")
    config = _config_dict(cfg)
    text = strictjson.dumps(config) if fmt == "json" else yaml.safe_dump(config, sort_keys=False)
    timeout = float(spec.get("timeout_s", DEFAULT_TIMEOUT_S))
    env = {**os.environ, "NDVAL_SUBJECT_TASK": task}
    with tempfile.TemporaryDirectory(prefix="ndval-subject-") as tmp:
        stdin: str | None = text
        if any("{config}" in a for a in argv):
            path = Path(tmp) / f"config.{fmt}"
            path.write_text(text, encoding="utf-8")
            argv, stdin = [a.replace("{config}", str(path)) for a in argv], None
        try:
            proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout,
                                  cwd=root, env=env, check=False)
        except subprocess.TimeoutExpired as exc:
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
            raise SubjectError(f"subject {name!r}: command timed out after {timeout:g} s ({shlex.join(argv)}); "
                               f"stderr tail: {_tail(err)}") from None
        except OSError as exc:
            raise SubjectError(f"subject {name!r}: cannot start {shlex.join(argv)}: {exc}") from None
    if proc.returncode != 0:
        raise SubjectError(f"subject {name!r}: command exited {proc.returncode} ({shlex.join(argv)}); "
                           f"stderr tail: {_tail(proc.stderr)}")
    try:
        raw = json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        raise SubjectError(f"subject {name!r}: stdout is not JSON ({exc.msg} at line {exc.lineno}): "
                           f"{_tail(proc.stdout)[:300]!r}; stderr tail: {_tail(proc.stderr)}") from None
    try:
        return _validated(name, task, raw)
    except SubjectError as exc:
        raise SubjectError(f"{exc}; stderr tail: {_tail(proc.stderr)}") from None


def _command_subject(name: str, spec: Any, root: Path) -> Subject:
    if not isinstance(spec, dict) or "command" not in spec:
        raise SubjectError(f"[tool.ndval.subjects.{name}] needs command = [...] (see docs/harness.md, Subjects)")
    unknown = sorted(set(spec) - {"command", "timeout_s", "format", "tasks"})
    if unknown:
        raise SubjectError(f"[tool.ndval.subjects.{name}] unknown key(s) {unknown}")
    if spec.get("format", "json") not in ("json", "yaml"):
        raise SubjectError(f"[tool.ndval.subjects.{name}] format must be json or yaml")
    tasks = tuple(spec.get("tasks", ["memory"]))
    unknown_tasks = sorted(set(tasks) - set(RESULT_MODELS))
    if unknown_tasks:
        raise SubjectError(f"[tool.ndval.subjects.{name}] tasks: unknown {unknown_tasks} (known: {', '.join(RESULT_MODELS)})")
    return Subject(name, f"command {spec['command']!r}", tasks,
                   lambda task, cfg: run_command(name, spec, task, cfg, root))


def _entry_point_subject(name: str) -> Subject | None:
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            fn, where = ep.load(), ep.value

            def call(task: str, cfg: Any, fn: Any = fn, where: str = where) -> MemoryResult | StepTimeResult:
                try:
                    raw = fn(task, _config_dict(cfg))
                except SubjectError:
                    raise
                except Exception as exc:
                    raise SubjectError(f"subject {name!r} ({where}) raised {type(exc).__name__}: {exc}") from None
                return _validated(name, task, raw)

            return Subject(name, f"entry point {ep.value}", tuple(getattr(fn, "tasks", ("memory",))), call)
    return None


_selected: str | None = None


def select(name: str | None) -> None:
    """Choose the subject for this process (``--subject``); None: the project's ``subject`` or ndval."""
    global _selected
    _selected = name


def selected_name() -> str:
    project = paths.project()
    return _selected or os.environ.get("NDVAL_SUBJECT") or project.settings.get("subject") or BUILTIN


def resolve(name: str | None = None) -> Subject:
    """The subject called ``name`` (default: the selected one)."""
    name = name or selected_name()
    if name == BUILTIN:
        return Subject(BUILTIN, "ndval's estimator and analyzer", ("memory", "step_time"), _ndval)
    project = paths.project()
    table = (project.settings.get("subjects") or {}).get(name)
    if table is not None:
        return _command_subject(name, table, project.root)
    found = _entry_point_subject(name)
    if found is not None:
        return found
    known = [BUILTIN, *sorted(project.settings.get("subjects") or {}),
             *sorted(ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))]
    raise SubjectError(f"unknown subject {name!r}; known: {', '.join(known)}")


def skip_reason(kind: str, subject: Subject) -> str | None:
    """Why a case of ``kind`` cannot run against ``subject`` (None: it can)."""
    if subject.builtin or kind in SUBJECT_FREE_KINDS:
        return None
    task = KIND_TASKS.get(kind)
    if task is None:
        return f"subject {subject.name!r}: kind {kind} runs ndval's own code only (use --subject ndval)"
    if not subject.provides(task):
        return f"subject {subject.name!r} does not provide the {task} task (tasks: {', '.join(subject.tasks)})"
    return None
