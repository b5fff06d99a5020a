"""Pluggable subjects: a team's estimator as an external command runs the measured-memory cases;
a failing command is a BROKEN case with its stderr tail, never a traceback."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from ndval.harness import paths, subjects
from ndval.harness.gate import EXIT_BROKEN_INPUT

#: a ten-line estimator (synthetic formula): weights from the model dims, Adam states, no activations
SCRIPT_ESTIMATOR = """\
import json, sys
cfg = json.load(sys.stdin)
par, model = cfg["parallel"], cfg["model"]
weights_mb = 12 * model["num_layers"] * model["hidden_size"] ** 2 * 2 / 2**20 / (par["tp"] * par["pp"])
parts = {"params": weights_mb, "optimizer_states": 6 * weights_mb, "grads": weights_mb, "activations": 0.0}
total = sum(parts.values())
print("estimating", par, file=sys.stderr)
print(json.dumps({"peak_mb": total, "stages": [{"stage": 0, "total_mb": total, "components": parts}]}))
"""

FAILING = {
    "crashes": ("import sys\nsys.stderr.write('estimator crashed: no model named x\\n')\nsys.exit(3)\n",
                "command exited 3", "estimator crashed: no model named x"),
    "garbles": ("import sys\nprint('peak is about 10 GiB')\nsys.stderr.write('warning: guessed\\n')\n",
                "stdout is not JSON", "warning: guessed"),
    "hangs": ("import sys, time\nsys.stderr.write('loading model...\\n'); sys.stderr.flush()\ntime.sleep(30)\n",
              "timed out after 1 s", "loading model..."),
    "off-schema": ("import json\nprint(json.dumps({'peak': 1.0}))\n", "do not follow the schema: field peak_mb", "(empty)"),
}

CASE = """\
id: team-measured-memory
title: published peaks (Megatron-LM CI, max allocated) vs the subject's estimate
kind: estimator.memory
owner: team
severity: major
source: ../shared/data/measured/memory_cases.csv (Megatron-LM CI golden values)
data: {measured: memory_cases.csv, where: {source_id: megatron_ci, measured_kind: max_allocated}}
params: {from_measured: true, profile: megatron, preset: fixed, label: case_id}
expect:
  - {type: ratio_within, id: band, estimate: estimate_mb, measured: measured_mb, lo: 0.90, hi: 1.10}
"""


#: a ten-line step-time estimator (synthetic formula): 6 x params x tokens at 150 TFLOP/s, a 1F1B bubble
SCRIPT_STEP_TIME = """\
import json, sys
cfg = json.load(sys.stdin)
m, t, p = cfg["model"], cfg["train"], cfg["parallel"]
tokens = t["seq_length"] * t["micro_batch_size"] * t["num_micro_batches"] * p["dp"]
flops = 6 * 12 * m["num_layers"] * m["hidden_size"] ** 2 * tokens
comp = flops / (p["tp"] * p["pp"] * p["dp"]) / 150e12
bubble = comp * (p["pp"] - 1) / t["num_micro_batches"]
print("estimating", p["tp"], p["pp"], p["dp"], file=sys.stderr)
print(json.dumps({"real_parts": {"COMP": comp, "PP_WAIT": bubble, "TOTAL": comp + bubble}}))
"""

STEP_CASE = """\
id: team-step-time
title: published iteration times (Korthikanti 2022 Table 5) vs the subject's step time
kind: estimator.perf
owner: team
severity: major
source: ../shared/data/measured/step_time_cases.csv (arXiv 2205.05198 Table 5)
data: {measured: step_time_cases.csv, where: {source_id: korthikanti2022_tab5}}
params: {from_measured: true, profile: megatron, preset: fixed, label: case_id}
expect:
  - {type: spearman_rho_gt, id: ranking, x: total_ms, y: measured_step_ms, min: 0.7}
"""


def _write_project(root: Path, case_path: str, case_text: str) -> Path:
    """A team project: its subjects in [tool.ndval] (each providing memory and step_time), one case."""
    tables = [f'[tool.ndval.subjects.script-est]\ncommand = ["{sys.executable}", "tools/estimate.py"]\n',
              f'[tool.ndval.subjects.script-step]\ncommand = ["{sys.executable}", "tools/step_time.py"]\n'
              'tasks = ["step_time"]\n']
    (root / "tools").mkdir(exist_ok=True)
    for name, (body, _, _) in FAILING.items():
        (root / "tools" / f"{name}.py").write_text(body, encoding="utf-8")
        # only the hanging subject gets the 1 s limit: the others must fail for their own reason, also
        # when a loaded machine takes over a second to start a Python process (a flaky timeout seen at load 9)
        timeout_s = 1 if name == "hangs" else 60
        tables.append(f'[tool.ndval.subjects.{name}]\ncommand = ["{sys.executable}", "tools/{name}.py"]\n'
                      f'timeout_s = {timeout_s}\ntasks = ["memory", "step_time"]\n')
    (root / "tools" / "estimate.py").write_text(SCRIPT_ESTIMATOR, encoding="utf-8")
    (root / "tools" / "step_time.py").write_text(SCRIPT_STEP_TIME, encoding="utf-8")
    (root / "pyproject.toml").write_text('[tool.ndval]\nsubject = "script-est"\n\n' + "\n".join(tables), encoding="utf-8")
    (root / "validation_cases" / case_path).parent.mkdir(parents=True)
    (root / "validation_cases" / case_path).write_text(case_text, encoding="utf-8")
    return root


@pytest.fixture
def project(pytester: pytest.Pytester, measured_dir: Path, monkeypatch) -> Path:
    """A team project with one measured-memory case over the real CSV."""
    monkeypatch.setenv("NDVAL_MEASURED_DIR", str(measured_dir))
    monkeypatch.delenv("NDVAL_SUBJECT", raising=False)
    return _write_project(pytester.path, "memory/peaks.case.yaml", CASE)


@pytest.fixture
def step_project(pytester: pytest.Pytester, measured_dir: Path, monkeypatch) -> Path:
    """A team project with one measured step-time case over the real CSV."""
    monkeypatch.setenv("NDVAL_MEASURED_DIR", str(measured_dir))
    monkeypatch.delenv("NDVAL_SUBJECT", raising=False)
    return _write_project(pytester.path, "perf/steps.case.yaml", STEP_CASE)


def _summary(root: Path) -> dict:
    return json.loads((root / "reports" / "summary.json").read_text(encoding="utf-8"))


def _script_peak_mb(cfg: dict) -> float:
    par, model = cfg["parallel"], cfg["model"]
    return 8 * 12 * model["num_layers"] * model["hidden_size"] ** 2 * 2 / 2**20 / (par["tp"] * par["pp"])


def test_script_estimator_runs_the_measured_memory_case(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("validation_cases")
    assert "Traceback" not in result.stdout.str()
    s = _summary(project)
    (case,) = s["cases"]
    assert case["status"] in ("passed", "failed", "waived"), case["message"]
    assert s["run"]["subject"] == "script-est"
    band = case["assertions"][0]
    assert band["producer"] == "script-est" and band["provenance"] == "evaluated"
    assert len(case["table"]) == 6 and all(r["estimate_of"] == "stage 0 total" for r in case["table"])
    # the numbers are the script's: recompute them from the config ndval handed it
    import csv

    from estimator.experiments.measured import config_from_measured_row

    rows = {r["case_id"]: r for r in csv.DictReader((Path(paths.measured_dir()) / "memory_cases.csv").open())}
    for r in case["table"]:
        cfg = config_from_measured_row(rows[r["config"]], profile="megatron")
        assert r["estimate_mb"] == pytest.approx(_script_peak_mb(cfg))


def _script_total_s(cfg: dict) -> float:
    m, t, p = cfg["model"], cfg["train"], cfg["parallel"]
    tokens = t["seq_length"] * t["micro_batch_size"] * t["num_micro_batches"] * p["dp"]
    comp = 6 * 12 * m["num_layers"] * m["hidden_size"] ** 2 * tokens / (p["tp"] * p["pp"] * p["dp"]) / 150e12
    return comp + comp * (p["pp"] - 1) / t["num_micro_batches"]


def test_script_estimator_runs_a_step_time_case(pytester: pytest.Pytester, step_project: Path) -> None:
    result = pytester.runpytest("validation_cases", "--subject", "script-step")
    assert "Traceback" not in result.stdout.str()
    s = _summary(step_project)
    (case,) = s["cases"]
    assert case["status"] in ("passed", "failed", "waived"), case["message"]
    assert s["run"]["subject"] == "script-step"
    ranking = case["assertions"][0]
    assert ranking["producer"] == "script-step" and ranking["provenance"] == "evaluated"
    assert len(case["table"]) == 8
    import csv

    from estimator.experiments.measured import config_from_measured_row

    rows = {r["case_id"]: r for r in csv.DictReader((Path(paths.measured_dir()) / "step_time_cases.csv").open())}
    for r in case["table"]:  # the script's numbers, from the config ndval handed it; parts it did not give are absent
        expected_s = _script_total_s(config_from_measured_row(rows[r["config"]], profile="megatron"))
        assert r["TOTAL_s"] == pytest.approx(expected_s) and r["total_ms"] == pytest.approx(expected_s * 1000)
        assert "COMP_s" in r and "DP_WAIT_s" not in r
        assert r["measured_step_ms"] == float(rows[r["config"]]["measured_step_ms"])


@pytest.mark.parametrize("name", sorted(FAILING))
def test_a_failing_step_time_subject_is_broken_with_its_stderr_tail(pytester: pytest.Pytester, step_project: Path,
                                                                     name: str) -> None:
    _, reason, tail = FAILING[name]
    result = pytester.runpytest("validation_cases", "--subject", name)
    out = result.stdout.str()
    assert result.ret == EXIT_BROKEN_INPUT and "Traceback" not in out and reason.split(": field")[0] in out
    (case,) = _summary(step_project)["cases"]
    assert case["status"] == "error" and tail in case["message"]


def test_step_time_results_schema() -> None:
    ok = subjects.StepTimeResult.model_validate({"real_parts": {"TOTAL": 1.5}})
    assert ok.real_parts == {"TOTAL": 1.5} and ok.stage_times_s == [] and ok.straggler_stage is None
    for bad, words in (({"real_parts": {"COMP": 1.0}}, "needs TOTAL"), ({"real_parts": {"TOTAL": -1.0}}, ">= 0"),
                       ({"real_parts": {"TOTAL": float("inf")}}, "finite"), ({"real_parts": {"TOTAL": 1, "GPU": 1}}, "GPU"),
                       ({"real_parts": {"TOTAL": 1.0}, "peak_mb": 3}, "peak_mb")):
        with pytest.raises(subjects.SubjectError, match=words):
            subjects._validated("t", "step_time", bad)
    assert subjects.resolve("ndval").provides("step_time")
    assert subjects.skip_reason("estimator.perf", subjects.Subject("x", "test", ("memory",), lambda t, c: None)) == (
        "subject 'x' does not provide the step_time task (tasks: memory)")


@pytest.mark.parametrize("name", sorted(FAILING))
def test_a_failing_subject_command_is_broken_with_its_stderr_tail(pytester: pytest.Pytester, project: Path,
                                                                   name: str) -> None:
    _, reason, tail = FAILING[name]
    result = pytester.runpytest("validation_cases", "--subject", name)
    out = result.stdout.str()
    assert result.ret == EXIT_BROKEN_INPUT
    result.assert_outcomes(errors=1)
    assert "Traceback" not in out and "BROKEN" in out and reason in out
    (case,) = _summary(project)["cases"]
    assert case["status"] == "error" and reason in case["message"] and tail in case["message"]


def test_unknown_subject_and_kinds_it_does_not_provide(pytester: pytest.Pytester, project: Path) -> None:
    result = pytester.runpytest("validation_cases", "--subject", "nobody")
    assert result.ret == EXIT_BROKEN_INPUT and "unknown subject 'nobody'; known: ndval, crashes" in result.stdout.str()
    script = subjects.resolve("script-est")
    assert subjects.skip_reason("estimator.experiments.ablation", script).startswith("subject 'script-est': kind estimator.experiments.ablation")
    assert subjects.skip_reason("estimator.perf", script) == (
        "subject 'script-est' does not provide the step_time task (tasks: memory)")
    assert subjects.skip_reason("recorded.results", script) is None
    assert subjects.skip_reason("estimator.perf", subjects.resolve("ndval")) is None


def test_entry_point_subject_is_a_python_callable(monkeypatch) -> None:
    import importlib.metadata

    def team(task: str, config: dict) -> dict:
        return {"peak_mb": 42.0 * config["parallel"]["tp"]}

    team.tasks = ("memory",)
    module = type(sys)("team_subject_mod")
    module.team = team
    monkeypatch.setitem(sys.modules, "team_subject_mod", module)
    ep = importlib.metadata.EntryPoint(name="team", value="team_subject_mod:team", group="ndval.subjects")
    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda **kw: [ep] if kw.get("group") == "ndval.subjects" else real(**kw))
    subject = subjects.resolve("team")
    res = subject.memory({"parallel": {"tp": 2}})
    assert (res.peak_mb, res.peak_stage, res.stages[0].total_mb) == (84.0, 0, 84.0)
    assert textwrap.dedent(subject.how) == "entry point team_subject_mod:team"


def test_a_command_subjects_python_is_the_interpreter_running_the_harness() -> None:
    import sys

    from ndval.harness.subjects import command_argv

    assert command_argv(["python", "tools/est.py", "{config}"]) == [sys.executable, "tools/est.py", "{config}"]
    assert command_argv("python3 -m team.est") == [sys.executable, "-m", "team.est"]
    assert command_argv(["/usr/bin/python", "x.py"])[0] == "/usr/bin/python"  # an explicit path is kept
    assert command_argv("tools/est --x")[0] == "tools/est"
