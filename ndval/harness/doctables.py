"""The tables of assertion types and kinds in ``docs/harness.md``, generated from the registries.

Each table sits between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``;
``python -m ndval.harness.doctables --write`` rewrites them, ``python -m ndval.harness.doctables`` exits 1 and
names the tables that drifted (a test runs the same check).
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from ndval.core.atomic import write_text
from ndval.core.render import markdown_table
from ndval.harness.assertions import AssertionSpec, load_assertions
from ndval.harness.kinds import load_kinds

DOC = Path(__file__).resolve().parents[2] / "docs" / "harness.md"
_BASE_FIELDS = set(AssertionSpec.model_fields)


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of a docstring on one line (the table renderer escapes ``|``)."""
    text = inspect.cleandoc(doc or "").split("\n\n")[0]
    return " ".join(text.split())


def _fields(model: type[BaseModel], skip: set[str]) -> str:
    names = [n for n in model.model_fields if n not in skip]
    return ", ".join(f"`{n}`" for n in names) or "—"


def _family(module: str) -> str:
    return module.removeprefix("ndval.harness.assertions.")


def assertions_table() -> str:
    """type | family | checks | fields (beyond the common ``id``, ``criterion``, ``severity``, ``where``...)."""
    rows = [[f"`{name}`", _family(cls.__module__), first_paragraph(cls.__doc__), _fields(cls, _BASE_FIELDS)]
            for name, cls in sorted(load_assertions().items())]
    return markdown_table(["type", "family", "checks", "fields"], rows)


def kinds_table() -> str:
    """kind | module | runs | params."""
    rows = [[f"`{name}`", f"`{kind.run.__module__}`", first_paragraph(kind.run.__doc__),
             _fields(kind.params_model, set())] for name, kind in sorted(load_kinds().items())]
    return markdown_table(["kind", "module", "runs", "params"], rows)


def exit_codes_table() -> str:
    """command | exit codes (``ndval.harness.cli.EXIT_CODES``)."""
    from ndval.harness.cli import COMMON_EXIT, EXIT_CODES, SUBCOMMANDS

    table = markdown_table(["command", "exit codes"], [[f"`ndval {name}`", EXIT_CODES[name]] for name in SUBCOMMANDS])
    return table + f"\n\n{COMMON_EXIT[0].upper()}{COMMON_EXIT[1:]}."


TABLES: dict[str, Callable[[], str]] = {"assertions": assertions_table, "kinds": kinds_table,
                                        "exit-codes": exit_codes_table}


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {name} [^\n]*-->\n)(.*?)(<!-- end generated: {name} -->)", re.S)


def sync(text: str) -> tuple[str, list[str]]:
    """(text with every generated table current, names of the tables that differed or are missing)."""
    drifted = []
    for name, render in TABLES.items():
        pattern = _block(name)
        match = pattern.search(text)
        if match is None:
            drifted.append(f"{name} (markers missing)")
            continue
        table = render() + "\n"
        if match.group(2) != table:
            drifted.append(name)
            text = text[:match.start(2)] + table + text[match.end(2):]
    return text, drifted


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ndval.harness.doctables", description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the generated tables in place")
    ap.add_argument("--doc", type=Path, default=DOC)
    args = ap.parse_args(argv)
    new, drifted = sync(args.doc.read_text(encoding="utf-8"))
    if args.write and drifted:
        write_text(args.doc, new)
        print(f"{args.doc}: rewrote {', '.join(drifted)}")
        return 0
    if drifted:
        print(f"{args.doc}: generated table(s) out of date: {', '.join(drifted)} "
              "(run python -m ndval.harness.doctables --write)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
