"""Project root discovery (like pytest's rootdir) and the paths it gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from ndval.harness import cli, paths
from ndval.harness.project import ProjectConfigError, find_project


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for var in ("NDVAL_PROJECT_ROOT", "NDVAL_REPORTS_DIR", "NDVAL_SHARED_DIR", "NDVAL_MEASURED_DIR", "NDVAL_PROFILES_DIR"):
        monkeypatch.delenv(var, raising=False)


def test_nearest_pyproject_with_tool_ndval_upward(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ndval]\ncases = "c"\nreports = "out"\nmeasured = "m"\n')
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.ndval]: not a root
    p = find_project(inner)
    assert p.root == tmp_path and p.config_file == tmp_path / "pyproject.toml"
    assert (p.cases, p.reports, p.golden, p.measured) == (tmp_path / "c", tmp_path / "out", tmp_path / "golden",
                                                          tmp_path / "m")
    assert p.profiles == (tmp_path / "../shared/data/profiles").resolve()


def test_ndval_toml_top_level_and_no_config_falls_back_to_start(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "ndval.toml").write_text('golden = "gold"\n')
    assert find_project(tmp_path / "proj").golden == tmp_path / "proj" / "gold"
    (tmp_path / "bare").mkdir()
    bare = find_project(tmp_path / "bare")
    assert bare.root == tmp_path / "bare" and bare.config_file is None
    assert bare.cases == tmp_path / "bare" / "validation_cases"


def test_environment_wins_and_working_directory_is_the_start(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "ndval.toml").write_text('reports = "r"\n')
    monkeypatch.chdir(tmp_path)
    assert paths.reports_dir() == tmp_path / "r" and paths.project_root() == tmp_path
    monkeypatch.setenv("NDVAL_REPORTS_DIR", str(tmp_path / "elsewhere"))
    assert paths.reports_dir() == tmp_path / "elsewhere"


def test_ndvals_own_repository_is_found_through_its_pyproject() -> None:
    p = find_project(paths.REPO_ROOT / "ndval" / "harness")
    assert p.root == paths.REPO_ROOT and p.config_file == paths.REPO_ROOT / "pyproject.toml"
    assert p.cases == paths.REPO_ROOT / "validation_cases"


def test_a_bad_setting_names_file_and_key_and_exits_2(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ndval]\ncasses = "c"\n')
    with pytest.raises(ProjectConfigError, match=r"pyproject.toml: \[tool.ndval\] unknown key\(s\) \['casses'\]"):
        find_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["lint"]) == 2
    assert "unknown key(s) ['casses']" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text('[tool.ndval]\ncases = 3\n')
    with pytest.raises(ProjectConfigError, match="cases must be a path string"):
        find_project(tmp_path)
