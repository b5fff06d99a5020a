"""The ``ndval`` command line: one entry point, subcommands owned by their packages.

Each subcommand is registered here with a lazy import of the module that implements it, so
``ndval estimate`` never pays for pandas and ``ndval analyze`` never imports the estimator.
A module registers ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import sys

from ndval.harness.project import ProjectConfigError

#: subcommand -> (module implementing add_arguments/run, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("ndval.harness.commands.validate", "run every validation case, write reports and the sign-off"),
    "lint": ("ndval.harness.commands.lint", "schema-check every case without running it"),
    "schema": ("ndval.harness.commands.schema", "print the JSON Schema of a validation case"),
    "add-case": ("ndval.harness.commands.add_case", "scaffold a case from a spreadsheet of measured data"),
    "signoff": ("ndval.harness.commands.signoff", "render the release sign-off report from a summary"),
    "report": ("ndval.harness.commands.report", "render the Allure HTML report (needs Node.js)"),
    "estimate": ("ndval.harness.commands.estimate", "estimate per-stage memory and step-time parts"),
    "import": ("ndval.harness.commands.importing", "write a model or run YAML from a Hugging Face config.json, "
               "Megatron-LM arguments or a torchtitan TOML"),
    "models": ("ndval.harness.commands.models", "list the shipped models with their source and size"),
    "ablate": ("ndval.harness.commands.ablate", "run the seed's ablations EXP-1..EXP-4"),
    "calibrate": ("ndval.harness.commands.calibrate", "derive device efficiencies from a profile into a hardware overlay"),
    "explain": ("ndval.harness.commands.explain", "lay an estimate and a profile of the run side by side per operator class"),
    "search": ("ndval.harness.commands.search", "rank every parallel layout of a cluster (Pareto front, rejections)"),
    "reconstruct-seed": ("ndval.harness.commands.reconstruct_seed", "reconstruct the seed's run from the recorded estimates; INT-01"),
    "analyze": ("ndval.harness.commands.analyze", "analyze a profiler output (Ascend or Kineto)"),
    "compare": ("ndval.harness.commands.compare", "compare a before/after pair of profiles"),
    "serve": ("ndval.harness.commands.serve", "serve profiles: local HTTP API and page with the swimlane"),
}


#: subcommand -> its exit codes (shown by ``ndval COMMAND --help`` and in docs/cli.md; a test checks both)
EXIT_CODES: dict[str, str] = {
    "validate": "0 gate passed; 1 gate failed on valid input; 2 broken input (invalid case, missing data, nothing collected, "
                "a report not writable); 130/143 interrupted by SIGINT/SIGTERM (previous reports kept)",
    "lint": "0 every case valid; 2 a case file is invalid",
    "schema": "0 schema printed",
    "add-case": "0 case written and valid; 2 unreadable spreadsheet, missing column, model or hardware not found, file exists, "
                "invalid case",
    "signoff": "0 sign-off written; 2 no summary.json",
    "report": "0 Allure report written (one file; --multi-file for the folder form); 2 no results, Node.js missing or allure failed",
    "estimate": "0 estimate printed; 2 invalid configuration or file",
    "import": "0 YAML written; 2 unreadable or malformed file, unknown architecture, impossible value",
    "models": "0 catalog printed; 2 unreadable model file",
    "ablate": "0 ablations printed; 2 invalid configuration or file",
    "search": "0 feasible layouts found; 1 no layout fits; 2 invalid input",
    "calibrate": "0 overlay written; 2 unreadable profile, invalid hardware or output path",
    "reconstruct-seed": "0 reconstruction table printed",
    "explain": "0 side-by-side table printed; 2 invalid configuration or unreadable profile",
    "analyze": "0 analysis written; 1 analysis written for the readable ranks only (the others named with their "
               "reason); 2 unreadable or invalid profile, thresholds or output path",
    "compare": "0 comparison written; 2 unreadable or invalid profile, thresholds or output path",
    "serve": "0 server stopped cleanly; 2 invalid profile, address or port",
}
COMMON_EXIT = "every command: 2 also for a usage error or an unreadable [tool.ndval]"

DESCRIPTION = ("ndval: estimate distributed-training memory and step time, analyze profiler output, and "
               "validate both against measured data (release sign-off).")


def _version() -> str:
    try:
        return importlib.metadata.version("ndval")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source tree without metadata
        return "unknown (not installed)"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``ndval`` parser; only ``command``'s module is imported to add its arguments."""
    epilog = "exit codes:\n" + "\n".join(f"  {n:<9} {c}" for n, c in EXIT_CODES.items()) + f"\n  {COMMON_EXIT}"
    parser = argparse.ArgumentParser(prog="ndval", description=DESCRIPTION, epilog=epilog,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"ndval {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text,
                           epilog=f"exit codes: {EXIT_CODES.get(name, '0 success; 2 invalid input')}")
        p.set_defaults(_module=module_name)
        if name != command:
            continue
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:  # a subcommand whose package part is not built
            if exc.name != module_name:
                raise
            p.set_defaults(_missing=True)
            continue
        module.add_arguments(p)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (its first word that is not an option), if any."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    if getattr(args, "_missing", False):
        print(f"ndval {args.command}: not available in this build", file=sys.stderr)
        return 2
    module = importlib.import_module(args._module)
    try:
        return int(module.run(args) or 0)
    except ProjectConfigError as exc:  # the project's [tool.ndval] is unreadable: broken input
        print(f"ndval {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and friends: not an error of ours
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:  # Ctrl-C (SIGINT) in a long command: one line, the shell's code, no traceback
        print(f"ndval {args.command}: interrupted (SIGINT); nothing more written (exit 130)", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
