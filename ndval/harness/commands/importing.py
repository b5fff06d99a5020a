"""``ndval import``: a model or run YAML from a file users already have.

``--hf-config config.json`` writes the ``model`` YAML; ``--from-megatron ARGS`` (a Megatron-LM CI
``model_config.yaml``, an argument list or a launch script; MindSpeed-LLM scripts too, with
``--profile sapp-nd``), ``--from-torchtitan train.toml`` and ``--from-mindformers run.yaml`` write a
run configuration. Every field
carries a comment naming its source key; the parameter counts, the flags not modelled and the keys
unknown to the importer are printed. A bad file prints one error (file, key, rule) and exits 2.
``ndval estimate`` uses :func:`imported_run` for ``--model config.json`` and ``--from-*``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from estimator.config.errors import ConfigError
from estimator.config.sections import ModelConfig
from estimator.importers import (
    Imported,
    import_hf_config,
    import_megatron,
    import_mindformers,
    import_torchtitan,
    render,
)
from estimator.inputs.params import param_counts
from ndval.core.atomic import write_text

EXIT_BROKEN_INPUT = 2


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--from-megatron`` / ``--from-torchtitan`` options and what a run needs beyond them."""
    parser.add_argument("--from-megatron", metavar="ARGS", default=None,
                        help="Megatron-LM arguments: CI model_config.yaml, an argument list or a launch script")
    parser.add_argument("--from-torchtitan", metavar="TOML", default=None, help="torchtitan job TOML")
    parser.add_argument("--from-mindformers", metavar="YAML", default=None,
                        help="MindFormers training YAML (profile sapp-nd); MindSpeed-LLM scripts: --from-megatron "
                             "with --profile sapp-nd")
    parser.add_argument("--world-size", type=int, default=None, help="GPUs of the run, when the file does not say")
    parser.add_argument("--vocab-size", type=int, default=None,
                        help="vocabulary size, when the arguments name a tokenizer instead (Megatron)")
    parser.add_argument("--hardware", default=None, help="hardware preset of the run (e.g. h100-80g)")
    parser.add_argument("--profile", default=None, choices=("sapp-nd", "megatron", "fsdp2"),
                        help="framework profile (default: megatron / fsdp2; sapp-nd for MindSpeed-LLM)")


#: the options of :func:`add_source_arguments` that describe a run, not a model
RUN_OPTIONS = ("world_size", "vocab_size", "hardware", "profile")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hf-config", metavar="JSON", default=None, help="Hugging Face config.json (local file)")
    add_source_arguments(parser)
    parser.add_argument("--name", default=None, help="model name (default: the file name)")
    parser.add_argument("--source", default=None, metavar="URL",
                        help="where the file is published (URL and revision), written to the YAML's source: block")
    parser.add_argument("-o", "--output", default="-", help="YAML to write (default: stdout)")


def imported_run(args: argparse.Namespace) -> Imported | None:
    """The run imported by ``--from-megatron`` / ``--from-torchtitan`` (None when neither is given)."""
    hardware = getattr(args, "hardware", None)
    if getattr(args, "from_megatron", None):
        return import_megatron(args.from_megatron, world_size=args.world_size, hardware=hardware,
                               profile=args.profile or "megatron", vocab_size=args.vocab_size)
    if getattr(args, "from_torchtitan", None):
        return import_torchtitan(args.from_torchtitan, world_size=args.world_size, hardware=hardware)
    if getattr(args, "from_mindformers", None):
        return import_mindformers(args.from_mindformers, hardware=hardware)
    return None


def _import(args: argparse.Namespace) -> Imported:
    chosen = [f for f in ("hf_config", "from_megatron", "from_torchtitan", "from_mindformers") if getattr(args, f)]
    if len(chosen) != 1:
        raise ConfigError("<arguments>", "give exactly one of --hf-config, --from-megatron, --from-torchtitan, "
                          "--from-mindformers")
    if args.hf_config:
        run_only = [f"--{f.replace('_', '-')}" for f in RUN_OPTIONS if getattr(args, f, None) is not None]
        if run_only:
            raise ConfigError("<arguments>", f"{', '.join(run_only)} describe a run; --hf-config imports a model only "
                              "(give them to ndval estimate with the run, or import a launch file)")
        return import_hf_config(args.hf_config, name=args.name)
    run = imported_run(args)
    assert run is not None
    if args.name:
        run.put("model.name", args.name, "given name")
    return run


def counts_line(model: dict[str, Any], file: str) -> str:
    """``params_total ... params_active ...`` of an imported model section (validated here)."""
    try:
        counts = param_counts(ModelConfig.model_validate(model))
    except ValueError as exc:
        raise ConfigError("model", f"the imported model is invalid: {exc}", file=file) from None
    return f"params_total {counts.total:,}; params_active {counts.active:,} (per token)"


def _header(imported: Imported, counts: str) -> list[str]:
    return [f"Imported from {imported.file} by `ndval import` (estimator.importers); each field's comment",
            "names its source key, or the default or rule that set it.", counts]


def run(args: argparse.Namespace) -> int:
    try:
        imported = _import(args)
        counts = counts_line(imported.data["model"], imported.file)
    except ConfigError as exc:
        print(f"ndval import: {exc}", file=sys.stderr)
        return EXIT_BROKEN_INPUT
    source = {"file": imported.file, "url": args.source} if getattr(args, "source", None) else None
    text = render(imported, _header(imported, counts), source)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        write_text(Path(args.output), text)
    report = sys.stderr if args.output == "-" else sys.stdout
    print(f"{imported.data['model']['name']}: {counts}", file=report)
    for flag, why in imported.not_modelled.items():
        print(f"not modelled: {flag}: {why}", file=report)
    for warning in imported.warnings:
        print(f"warning: {warning}", file=report)
    if args.output != "-":
        print(f"wrote {args.output} ({len(imported.sources)} fields, {len(imported.ignored)} keys ignored, "
              f"{len(imported.not_modelled)} not modelled, {len(imported.warnings)} unknown)", file=report)
    return 0
