"""``ndval lint``: schema-check every case file (refs, data files, waivers) without running anything."""

from __future__ import annotations

import argparse
from pathlib import Path

from ndval.core.yamlsrc import CaseError
from ndval.harness import gate, golden, paths
from ndval.harness.cases import find_cases_root, golden_uses, iter_case_files, load_case_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", help="case files or folders (default: validation_cases/)")


def lint_paths(targets: list[Path]) -> tuple[int, list[str]]:
    """(number of valid cases, error lines ``file:line: field 'x': rule``)."""
    files: list[Path] = []
    for t in targets:
        files += iter_case_files(t) if t.is_dir() else [t]
    n_ok, errors, uses = 0, [], []
    for f in files:
        root = find_cases_root(f)
        try:
            loaded = load_case_file(f, root)
        except CaseError as exc:
            errors.append(exc.render())
            continue
        n_ok += sum(len(lc.points) for lc in loaded.cases)
        errors += [exc.render() for _, exc in loaded.errors]
        uses += golden_uses(loaded.cases, root, Path("golden"))
    clashes = golden.collisions(uses)
    errors += [f"{where}: field 'id': {message}" for where, message in sorted(clashes.items())]
    return n_ok - len(clashes), errors


def run(args: argparse.Namespace) -> int:
    targets = [Path(p) for p in args.paths] or [paths.cases_dir()]
    n_ok, errors = lint_paths(targets)
    for line in errors:
        print(line)
    print(f"ndval lint: {n_ok} case item(s) valid, {len(errors)} error(s)")
    return gate.EXIT_BROKEN_INPUT if errors else gate.EXIT_PASS
