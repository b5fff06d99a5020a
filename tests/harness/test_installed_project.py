"""Acceptance: ndval installed from its wheel validates a team's own project.

Builds the wheel (no build isolation: setuptools comes from the dev extra, so it works offline),
installs it with ``--no-deps`` into a fresh virtual environment whose dependencies are borrowed
from the current one through a ``.pth`` line (its ndval is shadowed by the wheel's), creates a
project with its own ``[tool.ndval]``, a measured CSV (synthetic numbers), one case and one
golden, and runs ``ndval validate`` there: the reports land in the project and nothing is written
into the installed package.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import pytest

from ndval.harness import paths

REPO = paths.REPO_ROOT
_IGNORE = shutil.ignore_patterns(".git", ".venv", "reports", "node_modules", "build", "dist", "*.egg-info",
                                 "__pycache__", ".pytest_cache", ".hypothesis", "tests", "benchmarks", "docs")

#: synthetic measured peaks of the bundled scaled-down DeepSeek-V3 model (made-up numbers)
MEASURED_CSV = "config,ep,tp,dp,pp,measured_mb\nsyn-a,2,1,16,2,10000\nsyn-b,4,2,8,2,6000\n"

CASE = """\
id: team-peaks
title: team measurements vs ndval estimate (synthetic)
kind: estimator.memory
owner: team
severity: major
source: synthetic numbers for the installed-wheel test
data: {measured: peaks.csv}
params:
  label: config
  measured: measured_mb
  preset: fixed
  row_overrides: {parallel.ep: ep, parallel.tp: tp, parallel.dp: dp, parallel.pp: pp}
  config:
    profile: sapp-nd
    model: {ref: models/deepseek-v3-mini.yaml}
    train: {seq_length: 4096, micro_batch_size: 1, num_micro_batches: 8}
    parallel: {distributed_optimizer: true, schedule: 1f1b}
    recompute: {mode: none}
    hardware: ascend-910b
golden: true
expect:
  - {type: ratio_within, id: sane, estimate: estimate_mb, measured: measured_mb, lo: 0.01, hi: 100}
"""


#: the team's release rules: its name, its one criterion and its reproduce command
GATE = """\
name: team-validation
criteria_title: Team acceptance criteria
criteria:
  - {id: TEAM-1, title: estimate within two orders of magnitude, threshold: 0.01 ≤ ratio ≤ 100, source: team plan}
reproduce: "git checkout {sha} && ndval validate -n 0"
"""


def _assert_own_identity(reports: Path, console: str) -> None:
    """The sign-off and the console name the team's project and criteria, and nothing of ndval's."""
    md = (reports / "signoff.md").read_text(encoding="utf-8")
    html = (reports / "signoff.html").read_text(encoding="utf-8")
    assert md.startswith("# team-validation release sign-off")
    assert "## 5. Team acceptance criteria" in md and "| TEAM-1 | estimate within two orders of magnitude |" in md
    assert "ndval validate -n 0" in md.split("How to reproduce", 1)[1]
    for text in (md, html, console):
        low = text.lower()
        assert "sapp-nd" not in low and "seed" not in low, [ln for ln in text.splitlines() if "seed" in ln.lower()][:5]
        assert "make validate" not in low and "make report" not in low and "`make" not in low
    assert "Team acceptance criteria: TEAM-1=pass" in console


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with ndval's wheel installed; returns its ``bin`` folder."""
    pytest.importorskip("setuptools", minversion="77", reason="building the wheel offline needs setuptools>=77 "
                        "(dev extra)")
    base = tmp_path_factory.mktemp("wheel")
    src, dist, env_dir = base / "src", base / "dist", base / "venv"
    shutil.copytree(REPO, src, ignore=_IGNORE)
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                  "-w", str(dist), str(src)], base, dict(os.environ))
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    wheel = next(dist.glob("ndval-*.whl"))
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], base,
                     dict(os.environ)).stdout.strip())
    # the current environment's dependencies, after the fresh site-packages (the wheel's ndval wins)
    (site / "zz_borrowed_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    inst = _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q",
                 str(wheel)], base, dict(os.environ))
    assert inst.returncode == 0, inst.stdout[-2000:] + inst.stderr[-3000:]
    return env_dir / "bin"


def _snapshot(root: Path) -> dict[str, float]:
    return {str(p): p.stat().st_mtime for p in root.rglob("*") if "__pycache__" not in p.parts}


def test_validate_in_a_team_project_writes_there_and_not_into_the_package(installed: Path, tmp_path: Path) -> None:
    project = tmp_path / "team"
    (project / "cases" / "memory").mkdir(parents=True)
    (project / "cases" / "models").mkdir()
    (project / "data").mkdir()
    (project / "pyproject.toml").write_text(textwrap.dedent("""\
        [project]
        name = "team-validation"
        version = "0"

        [tool.ndval]
        cases = "cases"
        golden = "expected"
        reports = "out/reports"
        measured = "data"
        """), encoding="utf-8")
    (project / "data" / "peaks.csv").write_text(MEASURED_CSV, encoding="utf-8")
    shutil.copyfile(REPO / "validation_cases" / "models" / "deepseek-v3-mini.yaml",
                    project / "cases" / "models" / "deepseek-v3-mini.yaml")
    (project / "cases" / "memory" / "peaks.case.yaml").write_text(
        CASE.replace("lo: 0.01, hi: 100}", "lo: 0.01, hi: 100, criterion: TEAM-1}"), encoding="utf-8")
    (project / "cases" / "gate.yaml").write_text(GATE, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NDVAL_", "PYTEST_", "PYTHONPATH"))}
    env["PATH"] = f"{installed}{os.pathsep}{env.get('PATH', '')}"
    where = _run([str(installed / "python"), "-c", "import ndval.harness, sys; print(ndval.harness.__file__)"], project, env)
    package = Path(where.stdout.strip()).parent
    assert package.is_relative_to(installed.parent), f"ndval not imported from the wheel: {where.stdout}{where.stderr}"
    before = _snapshot(package.parents[1])
    work = project / "cases" / "memory"  # found upward from a sub-folder, like pytest's rootdir
    # one golden: written by the first run (--regen-all-golden), checked by the second
    regen = _run([str(installed / "ndval"), "validate", "-n", "0", "--regen-all-golden"], work, env)
    assert regen.returncode == 0, regen.stdout[-4000:] + regen.stderr[-3000:]
    golden = project / "expected" / "memory" / "peaks" / "team-peaks.yaml"
    assert golden.is_file()
    run = _run([str(installed / "ndval"), "validate", "-n", "0"], work, env)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    assert f"project {project}" in run.stdout
    reports = project / "out" / "reports"
    summary = json.loads((reports / "summary.json").read_text(encoding="utf-8"))
    (case,) = summary["cases"]
    assert case["status"] == "passed" and case["golden"]["status"] == "match"
    assert case["data"]["path"] == str(project / "data" / "peaks.csv")
    assert (reports / "signoff.html").is_file() and (reports / "junit.xml").is_file()
    _assert_own_identity(reports, run.stdout)
    assert _snapshot(package.parents[1]) == before, "ndval wrote into the installed package"
    for name in ("validation_cases", "golden", "reports"):
        assert not (package.parents[1] / name).exists()


def test_the_wheel_claims_only_its_own_top_level_names(installed: Path, tmp_path: Path) -> None:
    """The distribution installs ``ndval``, ``estimator`` and ``analyzer`` only: a team's own ``harness``,
    ``service`` or ``ndcore`` package is never shadowed (they are ``ndval.harness``, ``ndval.service``,
    ``ndval.core``); ``pytest -p no:ndval`` still runs a plain test suite."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NDVAL_", "PYTEST_", "PYTHONPATH"))}
    py = str(installed / "python")
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env).stdout.strip())
    (record,) = site.glob("ndval-*.dist-info/RECORD")
    tops = {line.split(",")[0].split("/")[0] for line in record.read_text(encoding="utf-8").splitlines() if line}
    assert {t for t in tops if not t.endswith(".dist-info") and t != ".."} == {"ndval", "estimator", "analyzer"}
    for name in ("harness", "service", "ndcore"):
        probe = _run([py, "-c", f"import {name}"], tmp_path, env)
        assert probe.returncode != 0 and f"ModuleNotFoundError: No module named '{name}'" in probe.stderr, probe.stderr
    ok = _run([py, "-c", "import ndval.harness, ndval.service, ndval.core, estimator, analyzer"], tmp_path, env)
    assert ok.returncode == 0, ok.stderr[-2000:]
    (tmp_path / "test_plain.py").write_text("def test_plain() -> None:\n    assert True\n", encoding="utf-8")
    plain = _run([py, "-m", "pytest", "-p", "no:ndval", "-p", "no:cacheprovider", "-q", "test_plain.py"], tmp_path, env)
    assert plain.returncode == 0 and "1 passed" in plain.stdout, plain.stdout[-2000:] + plain.stderr[-2000:]
