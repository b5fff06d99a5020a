"""The seed's assumed run settings live in ``estimator.experiments.seed`` (ASSUMED_RUN, with reasons) and are
written out in two declarative places users read: the example run YAML and the seed validation
case. Those copies must not drift from the one in code."""

from __future__ import annotations

import yaml

import estimator
from estimator.experiments.seed import seed_run
from ndval.harness import paths

EXAMPLE = paths.REPO_ROOT / "estimator" / "examples" / "deepseek-v3-mini-A.yaml"
CASE = paths.cases_dir() / "estimator" / "seed_configs.case.yaml"


def _normalised(source) -> dict:
    cfg = estimator.load_config(source, base_dir=paths.cases_dir())
    return cfg.model_dump(exclude={"options"})


def test_example_yaml_is_seed_config_a() -> None:
    assert _normalised(EXAMPLE) == _normalised(seed_run("A"))


def test_seed_case_config_is_seed_config_a() -> None:
    config = yaml.safe_load(CASE.read_text(encoding="utf-8"))["defaults"]["params"]["config"]
    assert _normalised(config) == _normalised(seed_run("A"))
