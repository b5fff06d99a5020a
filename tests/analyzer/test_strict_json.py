"""Standard JSON everywhere (issue 28): no ``NaN`` / ``Infinity`` in any JSON the CLI, the library or the service
produces, read back with a strict parser (``ndval.core.strictjson.loads``). The autouse fixture of
``tests/conftest.py`` checks every ``.json`` file written through ``ndval.core.atomic`` in every test too."""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

from analyzer import analyze, report
from analyzer.dataset import load_dataset
from ndval.core import strictjson
from ndval.harness.cli import main
from tests.service.conftest import client_for

ROOT = Path(__file__).resolve().parents[2]
#: json.dumps calls that write no output (cache keys, a field of a signature): allowed without allow_nan=False
INTERNAL_DUMPS = {("ndval/harness/kinds/analyzer.py", "thresholds"), ("ndval/service/registry.py", "thresholds"),
                  ("analyzer/ingest/decode.py", "ranks")}


def _inputs(profiles: Path) -> list[Path]:
    hta = sorted(Path(p) for p in glob.glob(str(profiles / "kineto/hta-tests/**/*.json.gz"), recursive=True))
    return [*hta, profiles / "ascend/msinsight-heatmap-tiny/trace_view.json",
            profiles / "ascend/msinsight-cluster-analysis-output", profiles / "ascend/msinsight-level1"]


def test_every_analysis_json_is_standard(profiles_dir: Path) -> None:
    """The 18 HTA test traces (16 of them wrote a bare NaN before), the 4-event trace_view, the cluster output."""
    for path in _inputs(profiles_dir):
        text = report.to_json(analyze(load_dataset(path)))
        assert not re.search(r"\bNaN\b|-?Infinity\b", text), path
        doc = strictjson.loads(text)
        assert "null_reasons" not in doc, (path, doc.get("null_reasons"))  # nothing was patched at the last step


def test_null_has_a_reason(profile_path) -> None:
    """triton_example: one step without communication — its overlap ratio is null, with the reason."""
    doc = strictjson.loads(report.to_json(analyze(load_dataset(profile_path("kineto/hta-tests/triton_example/triton_example.json.gz")))))
    rank = doc["ranks"][0]
    assert rank["step_breakdown_us"][0]["overlap_pct"] is None
    assert "no communication" in rank["step_breakdown_null_reasons"]["overlap_pct"]


def test_cli_json_outputs_are_standard(profile_path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = profile_path("kineto/hta-tests/trace_compare/base/base.json.gz")
    other = profile_path("kineto/hta-tests/trace_compare/test/test.json.gz")
    assert main(["analyze", str(trace), "--json", str(tmp_path / "a.json")]) == 0
    strictjson.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    capsys.readouterr()
    assert main(["analyze", str(trace), "--json", "-"]) == 0
    strictjson.loads(capsys.readouterr().out)
    assert main(["compare", str(trace), str(other), "--json", str(tmp_path / "c.json")]) in (0, 1)
    strictjson.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    capsys.readouterr()
    assert main(["schema"]) == 0
    strictjson.loads(capsys.readouterr().out)


def test_service_responses_are_standard(profile_path) -> None:
    triton = profile_path("kineto/hta-tests/triton_example/triton_example.json.gz")
    client = client_for([triton])
    datasets = client.get("/api/datasets")
    strictjson.loads(datasets.text)
    ds = datasets.json()["datasets"][0]["id"]
    for url in ("/api/health", f"/api/datasets/{ds}/analysis", f"/api/datasets/{ds}/timeline",
                f"/api/datasets/{ds}/evidence?metric=device_busy_pct", f"/api/datasets/{ds}/compare?with={ds}"):
        r = client.get(url)
        assert r.headers["content-type"].startswith("application/json"), url
        strictjson.loads(r.text)


def test_strict_parser_refuses_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        strictjson.loads('{"overlap_pct": NaN}')
    with pytest.raises(ValueError, match="Infinity"):
        strictjson.loads("[-Infinity]")
    assert strictjson.loads(strictjson.dumps({"x": float("nan")})) == {"x": None, "null_reasons": {"x": "not a finite number"}}


def test_every_json_writer_in_the_sources_is_strict() -> None:
    """Each ``json.dumps`` of the project writes with ``allow_nan=False`` or goes through ``strictjson``."""
    loose = []
    for py in [*ROOT.glob("analyzer/**/*.py"), *ROOT.glob("ndval/**/*.py"), *ROOT.glob("estimator/**/*.py")]:
        text = py.read_text(encoding="utf-8")
        rel = py.relative_to(ROOT).as_posix()
        for m in re.finditer(r"(?<![\w.])json\.dumps\((\w*)", text):
            call = text[m.start():m.start() + 600].split("\n\n")[0]
            if "allow_nan=False" not in call and (rel, m.group(1)) not in INTERNAL_DUMPS:
                loose.append(f"{rel}:{text[:m.start()].count(chr(10)) + 1}")
    assert not loose, loose
