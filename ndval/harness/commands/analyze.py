"""``ndval analyze PATH [--json OUT] [--markdown OUT] [--html OUT] [--thresholds FILE] [--phase prefill|decode]
[--max-events N] [--layout tp=…,pp=…,dp=…,ep=…,cp=… | --run RUN.yaml]``.

Prints the verdict per rank and scope (with the top evidence), the cluster summary and the warnings; writes
the reports on request. Exit codes: 0 analysis produced (also when no bottleneck is found — that is a
result), 2 bad input (the message names the file, field and rule; no traceback).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ndval.harness.commands.documents import console_for, write_documents

EXIT_OK = 0
EXIT_BAD_INPUT = 2
#: the readable ranks of a folder analysed, some unreadable (named with their reason)
EXIT_PARTIAL = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the options of ``ndval analyze``."""
    parser.add_argument("path", type=Path, help="Ascend *_ascend_pt dir / ASCEND_PROFILER_OUTPUT / parent of rank dirs / "
                        "trace_view.json, or a Kineto .json / .json.gz")
    parser.add_argument("--json", type=Path, metavar="OUT",
                        help="write the analysis as JSON ('-': to stdout; the summary then goes to stderr)")
    parser.add_argument("--markdown", type=Path, metavar="OUT", help="write the analysis as Markdown ('-': to stdout)")
    parser.add_argument("--html", type=Path, metavar="OUT", help="write a self-contained HTML page ('-': to stdout)")
    parser.add_argument("--thresholds", type=Path, metavar="FILE", help="YAML threshold overrides")
    parser.add_argument("--phase", choices=("prefill", "decode"), default=None,
                        help="read the whole window as this phase (separately captured prefill/decode)")
    parser.add_argument("--max-events", type=int, default=None, metavar="N",
                        help="event budget per rank: keep at most N trace events (step markers and device events "
                        "first, host detail thinned evenly); what was dropped and the totals source are reported")
    parser.add_argument("--workers", type=int, default=None, metavar="N",
                        help="ranks read in parallel (default: one per CPU, at most one per rank)")
    parser.add_argument("--backend", choices=("process", "dask", "serial"), default="process",
                        help="how ranks are read in parallel: a process pool (default), Dask (a distributed "
                        "client when one is active; needs dask installed) or one after the other")
    layout = parser.add_mutually_exclusive_group()
    layout.add_argument("--layout", default=None, metavar="tp=N,pp=N,dp=N,ep=N,cp=N",
                        help="the run's parallel layout: attributes each communication group to its dimension by "
                        "rank arithmetic (Megatron order tp, cp, dp, pp)")
    layout.add_argument("--run", type=Path, default=None, metavar="RUN.yaml",
                        help="take the layout from an estimator run file (its parallel section)")


def layout_of(text: str | None, run_file: Path | None) -> Any:
    """The ``analyzer.comm_groups.Layout`` of ``--layout`` text or of a run file's ``parallel`` section (None
    when neither); ``LayoutError`` / the estimator's ``ConfigError`` name the source and the rule."""
    from analyzer.comm_groups import Layout, parse_layout, validated

    if text is not None:
        return parse_layout(text)
    if run_file is None:
        return None
    from estimator.config.schema import load_config

    p = load_config(run_file).parallel
    return validated(Layout(tp=p.tp, pp=p.pp, dp=p.dp, ep=p.ep, cp=p.cp, source=str(run_file)))


def _summary(analysis: object) -> str:
    d = analysis.to_dict()  # type: ignore[attr-defined]
    lines = [f"ndval analyze {d['path']} ({d['source_format']})"]
    for r in d["ranks"]:
        p = r["phases"]
        lines.append(f"rank {r['rank']}: {len(p['steps'])} step(s) ({p['step_source']}); phases {p['method']} "
                     f"(confidence {p['confidence']})")
        for name, sc in r["scopes"].items():
            v = sc["verdict"]
            if not v.get("evaluable", True):
                lines.append(f"  [{name}] {v['label']} — " + "; ".join(v["not_evaluable_reasons"]))
                continue
            lines.append(f"  [{name}] {v['label']} — score {v['score']:.1f}" + (f" ({v['subtype']})" if v["subtype"] else ""))
            if v["secondary"]:
                lines.append(f"      also triggered: {', '.join(v['secondary'])} — {v['selection']}")
            top = next((c for c in v["candidates"] if c["kind"] == v["kind"]), None)
            for e in (top or {"evidence": []})["evidence"]:
                if e["passed"]:
                    lines.append(f"      {e['metric']} = {e['value']} {e['unit']} ({e['threshold_id']} {e['relation']} "
                                 f"{e['threshold']:g}){' — ' + e['basis'] if e['basis'] else ''}")
            for rec in sc["recommendations"][:3]:
                gain = rec["expected_gain_pct"]
                lines.append(f"      → {rec['id']}: " + (f"expected gain {gain} %" if gain is not None
                                                         else "expected gain not derivable from this dataset"))
        cg = r.get("comm_by_group")
        if cg:
            lines.append("  communication by group (exposed s/step, mean): " + ", ".join(
                f"{k} {v:.6g}" for k, v in cg["mean_exposed_s_per_step"].items()) + "; groups: " + ", ".join(
                f"{g['name'] or g['group']} -> {g['dimension'] or 'unattributed'}" for g in cg["groups"]))
    if d["cluster"]:
        c = d["cluster"]
        lines.append(f"cluster: slowest rank by step time {c['slowest_rank_by_step_time']}; "
                     + ", ".join(f"{s['metric']} slowest {s['slowest_rank']} (+{s['spread_pct']:.2f} % vs mean)" for s in c["spreads"]))
        lines.append("cluster: slowest ranks " + ", ".join(f"{r['rank']} ({r['step_us']:.1f} us/step)" for r in c["slowest_ranks"]))
        if c["slowest_links"]:
            lines.append("cluster: slowest links " + ", ".join(
                f"{x['link']} {x['transport']} {x['bandwidth_gbps']:.2f} GB/s" for x in c["slowest_links"]))
        if c.get("arrival_skew"):
            a = c["arrival_skew"]
            lines.append(f"cluster: arrival skew of {a['matched_collectives']} collectives: median {a['skew_median_us']:.1f} us, "
                         f"max {a['skew_max_us']:.1f} us; last to arrive most often: rank {a['late_rank']}")
        for sp in c["comm_split"]:
            lines.append(f"cluster: rank {sp['rank']} communication {sp['elapse_us']:.1f} us = transfer "
                         f"{sp['transfer_us']:.1f} + wait {sp['wait_us']:.1f} + idle {sp['idle_us']:.1f} ({sp['source']})")
    return "\n".join(lines)


def _warnings(analysis: object) -> list[str]:
    return [f"warning: {w}" for w in analysis.to_dict()["warnings"]]  # type: ignore[attr-defined]


def run(args: argparse.Namespace) -> int:
    """Analyse ``args.path`` and write the requested reports."""
    from analyzer import report
    from analyzer.analysis import analyze
    from analyzer.comm_groups import LayoutError
    from analyzer.dataset import load_dataset
    from analyzer.ingest.errors import IngestError
    from analyzer.thresholds import ThresholdError, resolve
    from estimator.config.errors import ConfigError

    try:
        thresholds = resolve(args.thresholds)
        layout = layout_of(getattr(args, "layout", None), getattr(args, "run", None))
        if not args.path.exists():
            raise IngestError(args.path, "<path>", "does not exist")
        dataset = load_dataset(args.path, max_events=getattr(args, "max_events", None),
                               workers=getattr(args, "workers", None), backend=getattr(args, "backend", "process"))
        analysis = analyze(dataset, thresholds=thresholds, phase_override=args.phase, layout=layout)
    except (IngestError, ThresholdError, LayoutError, ConfigError) as exc:
        print(f"ndval analyze: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"ndval analyze: error: {args.path}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    outputs = ((args.json, report.to_json), (args.markdown, report.to_markdown), (args.html, report.to_html))
    console = console_for(outputs)  # stdout: the document only
    print(_summary(analysis), file=console)
    for line in _warnings(analysis):  # warnings are diagnostics: stderr, never mixed into the output
        print(line, file=sys.stderr)
    if not write_documents("analyze", outputs, analysis, console):
        return EXIT_BAD_INPUT
    if dataset.unreadable:  # the readable ranks were judged; say how many of all
        total = len(dataset.ranks) + len(dataset.unreadable)
        print(f"ndval analyze: judged {len(dataset.ranks)} of {total} ranks; {len(dataset.unreadable)} unreadable "
              f"(named above); exit {EXIT_PARTIAL}", file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK
