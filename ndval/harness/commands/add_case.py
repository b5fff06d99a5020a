"""``ndval add-case --from measured.xlsx|csv``: scaffold a case from a spreadsheet of measured peaks.

The spreadsheet needs one row per configuration with the columns config id, ep, tp, dp, pp and
the measured peak (MiB); headers are matched case- and punctuation-insensitively with a few
aliases (``Config ID``, ``measured peak MB``...). A missing or misspelt column is named in the
error with the closest header found. The spreadsheet is copied next to the new case (data paths
stay inside validation_cases/, its checksum is recorded), the case is linted and printed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path
from typing import Any, get_args

import yaml

from estimator.config.schema import EstimatorConfig
from estimator.inputs.hardware import preset_names
from ndval.core.hashing import sha256_file
from ndval.core.yamlsrc import closest
from ndval.harness import gate, paths
from ndval.harness.cases import read_table

#: canonical column -> accepted (normalised) header spellings
REQUIRED: dict[str, tuple[str, ...]] = {
    "config": ("config", "config_id", "configuration", "id", "name", "case"),
    "ep": ("ep", "expert_parallel"),
    "tp": ("tp", "tensor_parallel"),
    "dp": ("dp", "data_parallel"),
    "pp": ("pp", "pipeline_parallel"),
    "measured_mb": ("measured_peak_mb", "measured_mb", "measured_peak", "peak_mb", "measured_peak_hbm_mb",
                    "measured_hbm_mb", "measured_peak_mib"),
}
OPTIONAL: dict[str, tuple[str, ...]] = {
    "recorded_mb": ("estimate_mb", "estimated_mb", "recorded_estimate_mb", "reference_estimate_mb", "estimated_peak_mb"),
    "cp": ("cp",),
    "etp": ("etp",),
    "vpp": ("vpp",),
}
OVERRIDES = {"ep": "parallel.ep", "tp": "parallel.tp", "dp": "parallel.dp", "pp": "parallel.pp",
             "cp": "parallel.cp", "etp": "parallel.etp", "vpp": "parallel.vpp"}


#: printed after every scaffold: the case is judged row by row, and one row can be waived alone
PER_ROW_HINT = ("each row is its own item (`per_row: config` under `data:`, ids = the config column): to waive one "
                "row rather than the whole case, list its id in `waiver.points` (docs/harness.md, Waivers)")


class SpreadsheetError(Exception):
    """The spreadsheet lacks a required column or has unusable values."""


def normalise(header: Any) -> str:
    """``"Measured Peak (MB)"`` -> ``measured_peak_mb``."""
    return re.sub(r"[^a-z0-9]+", "_", str(header).strip().lower()).strip("_")


def map_columns(headers: list[str], source: str) -> dict[str, str]:
    """canonical name -> header in the file; raises naming every missing required column."""
    norm = {normalise(h): h for h in headers}
    found: dict[str, str] = {}
    missing = []
    for canon, aliases in {**REQUIRED, **OPTIONAL}.items():
        hit = next((norm[a] for a in aliases if a in norm), None)
        if hit is not None:
            found[canon] = hit
        elif canon in REQUIRED:
            near = closest(aliases[0], norm)
            hint = f" (did you mean {norm[near]!r}?)" if near else ""
            missing.append(f"missing column {canon!r} (accepted headers: {', '.join(aliases)}){hint}")
    if missing:
        raise SpreadsheetError(f"{source}: " + "; ".join(missing) + f". Columns found: {', '.join(map(str, headers))}")
    return found


def build_case(case_id: str, title: str, data_name: str, digest: str, mapping: dict[str, str], model: str,
               profile: str, hardware: str, owner: str, source: str, sheet: str | None) -> dict[str, Any]:
    """The case dict (estimator.memory over each row, band 0.90-1.10 against the measured peak)."""
    rename = {mapping[c]: c for c in mapping if mapping[c] != c}
    data: dict[str, Any] = {"file": data_name, "sha256": digest, "per_row": "config"}
    if sheet:
        data["sheet"] = sheet
    if rename:
        data["columns"] = rename
    expect = [{"type": "ratio_within", "id": "band", "estimate": "estimate_mb", "measured": "measured_mb", "lo": 0.90, "hi": 1.10}]
    if "recorded_mb" in mapping:
        expect.append({"type": "ratio_within", "id": "recorded-band", "estimate": "recorded_mb", "measured": "measured_mb",
                       "lo": 0.90, "hi": 1.10, "severity": "minor"})
    return {
        "id": case_id, "title": title, "kind": "estimator.memory", "owner": owner, "severity": "major",
        "tags": ["measured", "memory", "scaffolded"], "source": source, "data": data,
        "params": {
            "label": "config", "measured": "measured_mb", "preset": "fixed",
            "row_overrides": {OVERRIDES[c]: c for c in mapping if c in OVERRIDES},
            "config": {"profile": profile, "model": {"ref": model},
                       "train": {"seq_length": 4096, "micro_batch_size": 1, "num_micro_batches": 8},
                       "parallel": {"distributed_optimizer": True, "schedule": "1f1b"},
                       "recompute": {"mode": "none"}, "hardware": hardware},
        },
        "expect": expect,
    }


def valid_values(cases_root: Path) -> tuple[list[str], list[str], list[str]]:
    """(model refs under ``cases_root/models``, framework profiles, hardware presets) a case may name."""
    models = sorted(f"models/{p.name}" for p in (cases_root / "models").glob("*.yaml"))
    profiles = list(get_args(EstimatorConfig.model_fields["profile"].annotation))
    return models, profiles, preset_names()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    models, profiles, hardware = valid_values(paths.cases_dir())
    parser.add_argument("--from", dest="source_file", required=True, help="measured.xlsx or measured.csv")
    parser.add_argument("--id", default=None, help="case id (default: the file name)")
    parser.add_argument("--title", default=None)
    parser.add_argument("--sheet", default=None, help="XLSX sheet (default: first)")
    parser.add_argument("--model", required=True, metavar="MODEL",
                        help="model ref under validation_cases/ (`ndval models`; write one with `ndval import`): "
                             + ", ".join(models))
    parser.add_argument("--profile", required=True, choices=profiles, help="estimator framework profile: "
                        + ", ".join(profiles))
    parser.add_argument("--hardware", required=True, metavar="PRESET", help="estimator hardware preset: "
                        + ", ".join(hardware))
    parser.add_argument("--owner", default="unassigned")
    parser.add_argument("--source", default=None, help="where the measurements come from (default: the file name)")
    parser.add_argument("--dir", default="estimator", help="folder under validation_cases/ (default estimator)")
    parser.add_argument("--cases-dir", default=None, help="validation_cases/ root (default: the repository's)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing case/data file")


def run(args: argparse.Namespace) -> int:
    src = Path(args.source_file)
    if not src.is_file():
        why = "not found" if not src.exists() else "is not a regular file (a FIFO, device or folder): refused"
        print(f"ndval add-case: {src} {why}", file=sys.stderr)
        return gate.EXIT_BROKEN_INPUT
    try:
        rows = read_table(src, args.sheet)
        if not rows:
            raise SpreadsheetError(f"{src}: no data rows")
        mapping = map_columns(list(rows[0]), str(src))
    except SpreadsheetError as exc:
        print(f"ndval add-case: {exc}", file=sys.stderr)
        return gate.EXIT_BROKEN_INPUT
    except ValueError as exc:
        print(f"ndval add-case: {src}: {exc}", file=sys.stderr)
        return gate.EXIT_BROKEN_INPUT
    cases_root = Path(args.cases_dir).resolve() if args.cases_dir else paths.cases_dir()
    models, _, hardware = valid_values(cases_root)
    if not (cases_root / args.model).is_file():
        print(f"ndval add-case: model {args.model!r} not found under {cases_root}; valid: {', '.join(models)}",
              file=sys.stderr)
        return gate.EXIT_BROKEN_INPUT
    if args.hardware not in hardware:
        print(f"ndval add-case: unknown hardware preset {args.hardware!r}; valid: {', '.join(hardware)}", file=sys.stderr)
        return gate.EXIT_BROKEN_INPUT
    case_id = args.id or normalise(src.stem).replace("_", "-")
    folder = cases_root / args.dir
    folder.mkdir(parents=True, exist_ok=True)
    data_path, case_path = folder / src.name, folder / f"{normalise(src.stem)}.case.yaml"
    for p in (case_path, data_path):
        if p.exists() and not args.force and p.resolve() != src.resolve():
            print(f"ndval add-case: {p} exists (use --force to overwrite)", file=sys.stderr)
            return gate.EXIT_BROKEN_INPUT
    if data_path.resolve() != src.resolve():
        shutil.copyfile(src, data_path)
    case = build_case(case_id, args.title or f"measured peak HBM from {src.name} vs ndval estimate", data_path.name,
                      sha256_file(data_path), mapping, args.model, args.profile, args.hardware, args.owner,
                      args.source or f"{src.name} (scaffolded by ndval add-case; add the measurement's provenance)", args.sheet)
    header = ("# Scaffolded by `ndval add-case`. Review: source, owner, the train/recompute settings (assumed\n"
              "# defaults: seq 4096, micro-batch 1, 8 micro-batches, no recompute) and the model ref.\n")
    from ndval.core.atomic import write_text

    write_text(case_path, header + yaml.safe_dump(case, sort_keys=False, allow_unicode=True, width=110))
    from ndval.harness.commands.lint import lint_paths

    n_ok, errors = lint_paths([case_path])
    print(case_path.read_text(encoding="utf-8"))
    for e in errors:
        print(e, file=sys.stderr)
    print(f"wrote {case_path} and {data_path} ({len(rows)} rows); lint: {n_ok} item(s) valid, {len(errors)} error(s)")
    print(PER_ROW_HINT)
    return gate.EXIT_BROKEN_INPUT if errors else gate.EXIT_PASS
