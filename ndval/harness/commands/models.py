"""``ndval models``: the shipped models (``validation_cases/models/*.yaml``) with their source and size.

A model file written by ``ndval import --source URL`` has ``# source url:`` / ``# source file:`` comment
lines (where the public file is published, and the copy it was imported from); a hand-written one
names its source in its first comment line.
Sizes are ``estimator.inputs.params.param_counts`` of the loaded model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tabulate import tabulate

from estimator.config.errors import ConfigError
from estimator.config.loading import BUNDLED_CASES_DIR, read_yaml
from estimator.config.sections import ModelConfig
from estimator.inputs.params import param_counts

EXIT_BROKEN_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", default=str(BUNDLED_CASES_DIR / "models"), help="folder of model YAML files")


def source_of(path: Path) -> dict[str, str]:
    """The ``# source <key>: value`` comment lines of a model file written by ``ndval import``."""
    items = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# source ") and ":" in line:
            key, _, value = line.removeprefix("# source ").partition(":")
            items[key.strip()] = value.strip()
    return items


def _source(path: Path) -> str:
    src = source_of(path)
    if src:
        return f"imported: {src.get('url', '')} (file {src.get('file', '')})"
    first = next((line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")), "# -")
    return "hand-written: " + first.lstrip("# ").strip()


def catalog(folder: Path) -> list[list[str]]:
    """One row per model file: file, name, total and active parameters, source."""
    rows = []
    for path in sorted(folder.glob("*.yaml")):
        data, _ = read_yaml(path)
        try:
            model = ModelConfig.model_validate(data.get("model", data))
        except ValueError as exc:
            raise ConfigError("model", f"invalid model file: {exc}", file=str(path)) from None
        counts = param_counts(model)
        rows.append([f"models/{path.name}", model.name, f"{counts.total / 1e9:.2f}B", f"{counts.active / 1e9:.2f}B",
                     _source(path)])
    return rows


def run(args: argparse.Namespace) -> int:
    try:
        rows = catalog(Path(args.dir))
    except ConfigError as exc:
        print(f"ndval models: {exc}", file=sys.stderr)
        return EXIT_BROKEN_INPUT
    print(tabulate(rows, headers=["ref", "name", "params_total", "params_active", "source"], tablefmt="simple"))
    print("use one in a run as `model: {ref: models/<file>}`; write a new one with `ndval import --hf-config "
          "config.json -o validation_cases/models/<name>.yaml` (docs/model-files.md)")
    return 0
