"""``ndval compare BEFORE AFTER``: analyse two profiles the same way and compare them (seed §7).

Prints the headline, the comparability verdict with every reason, the headline metrics and the
top changed operators; writes JSON / Markdown / HTML on request. Exit codes: 0 when the comparison
was produced (also when the sides are *not comparable* — that is a result, printed with its
reasons), 2 when an input cannot be read (the message names the file and the rule).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from ndval.harness.commands.documents import console_for, write_documents

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", type=Path, help="profile before the change (Ascend *_ascend_pt dir or Kineto json[.gz])")
    parser.add_argument("after", type=Path, help="profile after the change")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the comparison payload as JSON ('-': to stdout)")
    parser.add_argument("--markdown", type=Path, metavar="OUT", help="write the comparison as Markdown ('-': to stdout)")
    parser.add_argument("--html", type=Path, metavar="OUT", help="write a self-contained HTML page ('-': to stdout)")
    parser.add_argument("--thresholds", type=Path, metavar="FILE",
                        help="YAML threshold overrides, applied to BOTH sides")
    parser.add_argument("--phase", choices=("prefill", "decode"), default=None,
                        help="phase override, applied to BOTH sides")
    parser.add_argument("--top", type=int, default=None,
                        help="operators to print per list (default: every one the comparison lists, compareTopOperators)")


class UnreadableInput(ValueError):
    """A side that loaded but holds nothing to analyse (no events, no tables on any rank)."""


def analyse_path(path: Path, thresholds: Any = None, phase: str | None = None) -> tuple[Any, Any]:
    """``(dataset, analysis)``: ``load_dataset`` + ``analyze`` with the given thresholds and phase
    override (the same for both sides). A dataset with no event and no table is unreadable."""
    from analyzer.analysis import analyze
    from analyzer.dataset import load_dataset

    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    dataset = load_dataset(path)
    if all(r.events.empty and not r.tables for r in dataset.ranks):
        why = "; ".join(dataset.warnings[:2]) or "no events and no tables"
        raise UnreadableInput(f"{path}: nothing readable ({why})")
    return dataset, analyze(dataset, thresholds=thresholds, phase_override=phase)


def _bad_input_types() -> tuple[type[BaseException], ...]:
    types: list[type[BaseException]] = [FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError,
                                        UnreadableInput]
    try:
        from analyzer.ingest.errors import IngestError

        types.append(IngestError)
    except ImportError:  # pragma: no cover - ingest always present in a full build
        pass
    try:
        from analyzer.thresholds import ThresholdError

        types.append(ThresholdError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(types)


_KERNEL_SIGNATURE = re.compile(r"^(?:void\s+)?(?P<name>[^\s(][^(]*?)\(.*\)$", re.S)


def short_name(name: str, width: int = 60) -> str:
    """Console label of one operator name: a C++ kernel signature loses its return type and argument
    list (``void k<float>(at::Tensor…)`` -> ``k<float>``; ``Memcpy DtoD (Device -> Device)`` is kept), then
    a label longer than ``width`` keeps its head and tail around an ellipsis."""
    match = _KERNEL_SIGNATURE.match(name)
    label = match.group("name") if match and not match.group("name").endswith(" ") else name
    if len(label) <= width:
        return label
    tail = width // 3
    return label[: width - tail - 1] + "…" + label[-tail:]


def distinct_short_names(names: list[str], width: int = 60) -> list[str]:
    """:func:`short_name` of each name, widened 20 characters at a time until distinct names get
    distinct labels (kernels often differ only in a template argument or the middle of the name)."""
    longest = max((len(n) for n in names), default=0)
    while True:
        labels = [short_name(n, width) for n in names]
        if len(set(labels)) == len(set(names)) or width >= longest:
            return labels
        width += 20


def summary_text(comparison: Any, top: int | None = None) -> str:
    """Console summary: headline, comparability + reasons, headline metrics, top changed operators."""
    from tabulate import tabulate

    d = comparison.to_dict()
    comp = d["comparability"]
    lines = [d["headline"]["sentence"], "",
             f"comparable: {str(comp['comparable']).lower()} ({comp['level']})"]
    lines += [f"  - {r}" for r in comp["reasons"]]
    rows = [[m, v["before"], v["after"], v["improvement_pct"], v["status"]]
            for m, v in d["headline"]["values"].items()]
    lines += ["", tabulate(rows, headers=["headline metric", "before", "after", "improvement %", "status"])]
    for key, title in (("saved", "top operators saving time"), ("added", "top operators adding time")):
        ops = d["operators"][key][:top]
        lines += ["", f"{title}:"]
        if ops:
            labels = distinct_short_names([o["name"] for o in ops])
            lines.append(tabulate([[label, o["before_total_us"], o["after_total_us"], o["delta_us"],
                                    o["before_mean_us"], o["after_mean_us"]] for label, o in zip(labels, ops, strict=True)],
                                  headers=["operator", "before µs", "after µs", "delta µs", "before mean µs",
                                           "after mean µs"]))
        else:
            lines.append("  none")
    if d["recommendations"]:
        lines += ["", tabulate([[r["id"], r["verdict"], r["observed_improvement_pct"], r["threshold_pct"],
                                 r["still_listed_after"]] for r in d["recommendations"]],
                               headers=["recommendation", "verdict", "observed %", "threshold %", "still listed"])]
    other = [w for w in d["warnings"] if not w.startswith(("not comparable", "flag"))]
    if other:
        lines += ["", "warnings:"] + [f"  - {w}" for w in other]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from analyzer.compare import compare, render_html, render_markdown

    bad_input = _bad_input_types()
    thresholds = None
    if getattr(args, "thresholds", None) is not None:
        from analyzer.thresholds import resolve

        try:
            thresholds = resolve(args.thresholds)
        except bad_input as exc:
            print(f"ndval compare: bad thresholds file: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    analyses = []
    for side, path in (("before", args.before), ("after", args.after)):
        try:
            analyses.append(analyse_path(path, thresholds, args.phase))
        except bad_input as exc:
            print(f"ndval compare: cannot read the {side} input: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    comparison = compare(analyses[0], analyses[1])
    outputs = ((args.json, lambda c: c.to_json()), (args.markdown, render_markdown), (args.html, render_html))
    console = console_for(outputs)  # stdout: the document only
    print(summary_text(comparison, args.top), file=console)
    if not write_documents("compare", outputs, comparison, console):
        return EXIT_BAD_INPUT
    return EXIT_OK
