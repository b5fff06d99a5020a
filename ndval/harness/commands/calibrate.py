"""``ndval calibrate --from-profile PROFILE [--hardware NAME] [--precision bf16] [--require CLASS] -o OVERLAY.yaml``.

Reads a real profile through the analyzer (Ascend ``kernel_details.csv`` with shapes, or a Kineto
trace's device kernels), classifies every kernel (:mod:`analyzer.kernel_classes`) and derives, per
class, what the profile supports:

* ``gemm``: achieved FLOP/s over the hardware's peak for the kernels whose shapes give their FLOPs
  (median = the overlay's ``matmul`` efficiency);
* ``elementwise``: achieved bytes/s over the hardware's HBM bandwidth for the kernels whose shapes and
  dtypes give their bytes (median = ``memory`` efficiency), and the kernel latency = the 10th
  percentile of their durations (``kernel_latency_us`` and ``cast_kernel_latency_us``: a near-empty kernel's
  time, which a cast kernel's fixed time is too);
* ``attention``, ``collective``, ``memcpy``: count and time (reported, not written);
* host time per layer: where a host thread's top-level ops repeat with the model's layers,
  :mod:`ndval.harness.commands.host_layers` counts the launches and the host time per repetition (reported
  and kept in the overlay's ``host_layers``; it is host time, not a device efficiency).

It prints the fit (per class: kernels, time and share of the profile's kernel time, median and
p25-p75 of the derived value) and writes an overlay (:mod:`estimator.inputs.overlay`) that ``ndval estimate
--hardware-overlay`` reads. The estimator and the analyzer never import each other: this command is
where they meet. Bad input (no kernels at all, no kernels of a ``--require``d class, an unknown class
or hardware) is one line naming the file and field, exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ndval.core.units import BYTES_PER_GB, FLOPS_PER_TFLOPS, S_PER_US

EXIT_BAD_INPUT = 2
#: the fraction of the shortest element-wise kernels whose duration is the kernel latency
LATENCY_QUANTILE = 0.10


@dataclass(frozen=True)
class Kernel:
    """One device kernel: class, duration (µs), FLOPs and bytes when its shapes give them."""

    name: str
    kernel_class: str
    dur_us: float
    flops: float | None = None
    bytes: float | None = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the ``calibrate`` options."""
    parser.add_argument("--from-profile", dest="profile", required=True, metavar="PROFILE",
                        help="profiler output: Ascend rank directory / kernel_details.csv folder, or a Kineto trace")
    parser.add_argument("--hardware", default=None, help="hardware preset the profile ran on (peaks and HBM "
                        "bandwidth); default: from the profile's device properties when they name one")
    parser.add_argument("--precision", default="bf16", help="dtype whose peak the GEMM efficiency is against")
    parser.add_argument("--require", action="append", default=[], metavar="CLASS",
                        help="fail unless the profile has kernels of CLASS (repeatable)")
    parser.add_argument("-o", "--output", required=True, metavar="OVERLAY.yaml",
                        help="overlay file to write ('-': to stdout, the tables then go to stderr)")


def profile_kernels(profile: Path, host_layers: bool = False) -> tuple[list[Kernel], dict[str, Any]]:
    """Every device kernel of the profile's first rank, classified, with the rank's metadata plus
    ``steps``: the steps the kernels span (distinct ``Step Id`` / ``ProfilerStep`` events, at least 1),
    and with ``host_layers`` the rank's repeated host layers (:func:`host_layers.host_layers`)."""
    from analyzer.dataset import load_dataset
    from analyzer.kernel_classes import bytes_moved, classify, gemm_flops, shapes

    dataset = load_dataset(profile)
    rank = dataset.ranks[0]
    extra: dict[str, Any] = {}
    if host_layers:
        from ndval.harness.commands.host_layers import host_layers as find_layers

        extra["host_layers"] = find_layers(rank.events)
    table = rank.tables.get("kernel_details")
    out: list[Kernel] = []
    if table is not None and len(table):
        for row in table.to_dict("records"):
            category = "communication" if str(row.get("Accelerator Core", "")).upper() == "HCCL" else ""
            cls = classify(str(row.get("Name", "")), str(row.get("Type", "")), category)
            ins, outs = shapes(row.get("Input Shapes")), shapes(row.get("Output Shapes"))
            flops = gemm_flops(ins, outs) if cls == "gemm" else None
            moved = bytes_moved(ins, row.get("Input Data Types"), outs, row.get("Output Data Types"))
            out.append(Kernel(str(row.get("Name", "")), cls, float(row["Duration(us)"]), flops, moved))
        steps = table["Step Id"].nunique() if "Step Id" in table else 1
        return out, {**rank.meta, "steps": max(1, int(steps)), **extra}
    ev = rank.events
    dev = ev[(ev["side"] == "device") & ev["category"].isin(["compute", "communication", "memcpy", "memset"])]
    for name, category, dur, moved in zip(dev["name"], dev["category"], dev["dur_us"], dev["bytes"], strict=True):
        b = float(moved) if moved == moved and moved and moved > 0 else None  # NaN-safe
        out.append(Kernel(str(name), classify(str(name), "", str(category)), float(dur), None, b))
    steps = int((ev["category"] == "step").sum())
    return out, {**rank.meta, "steps": max(1, steps), **extra}


def _stats(values: list[float]) -> dict[str, float]:
    a = np.asarray(values, float)
    return {"median": float(np.median(a)), "p25": float(np.percentile(a, 25)), "p75": float(np.percentile(a, 75))}


def fit_classes(kernels: list[Kernel], peak_flops: float, hbm_bytes_s: float | None) -> dict[str, dict[str, Any]]:
    """Per class: kernels, time (µs) and share of all kernel time, duration stats, and the derived
    efficiency (gemm: FLOP/s / peak; elementwise: bytes/s / HBM) and latency (elementwise p10)."""
    from analyzer.kernel_classes import KERNEL_CLASSES

    total_us = sum(k.dur_us for k in kernels) or 1.0
    fit: dict[str, dict[str, Any]] = {}
    for cls in KERNEL_CLASSES:
        ks = [k for k in kernels if k.kernel_class == cls and k.dur_us > 0]
        if not ks:
            fit[cls] = {"count": 0}
            continue
        time_us = sum(k.dur_us for k in ks)
        rec: dict[str, Any] = {"count": len(ks), "time_us": time_us, "share_pct": 100.0 * time_us / total_us,
                               "duration_us": _stats([k.dur_us for k in ks])}
        if cls == "gemm":
            effs = [k.flops / (k.dur_us * S_PER_US) / peak_flops for k in ks if k.flops]
            if effs:
                rec["efficiency"] = _stats(effs) | {"kernels_used": len(effs)}
        if cls == "elementwise":
            rec["kernel_latency_us"] = float(np.quantile([k.dur_us for k in ks], LATENCY_QUANTILE))
            if hbm_bytes_s:
                effs = [k.bytes / (k.dur_us * S_PER_US) / hbm_bytes_s for k in ks if k.bytes]
                if effs:
                    rec["memory_efficiency"] = _stats(effs) | {"kernels_used": len(effs)}
        fit[cls] = rec
    return fit


def overlay_from_fit(fit: dict[str, dict[str, Any]], profile: str, hardware: str) -> dict[str, Any]:
    """The overlay document: efficiencies the fit supports, each with its source."""
    eff: dict[str, Any] = {}
    sources: dict[str, str] = {}
    src = f"ndval calibrate --from-profile {profile}"
    g = fit.get("gemm", {}).get("efficiency")
    if g:
        eff["matmul"] = [[0.0, round(min(1.0, g["median"]), 6)]]
        sources["matmul"] = f"{src}: median achieved/peak FLOP/s of {g['kernels_used']} GEMM kernels with shapes"
    e = fit.get("elementwise", {})
    if e.get("memory_efficiency"):
        m = e["memory_efficiency"]
        eff["memory"] = [[0.0, round(min(1.0, m["median"]), 6)]]
        sources["memory"] = f"{src}: median achieved/HBM bytes/s of {m['kernels_used']} element-wise kernels"
    if "kernel_latency_us" in e:  # a near-empty kernel's time: every kernel's, casts' too (estimator.perf.efficiency)
        eff["kernel_latency_us"] = eff["cast_kernel_latency_us"] = round(e["kernel_latency_us"], 3)
        sources["kernel_latency_us"] = f"{src}: p10 duration of {e['count']} element-wise kernels"
        sources["cast_kernel_latency_us"] = sources["kernel_latency_us"]
    eff["sources"] = sources
    return {"hardware": hardware, "source": src, "efficiency": eff, "fit": fit}


def _hardware_name(requested: str | None, meta: dict[str, Any], profile: str) -> str:
    from estimator.inputs.hardware import preset_names, resolve_preset_name

    if requested:
        name = resolve_preset_name(requested)
        if name is None:
            raise ValueError(f"--hardware: unknown hardware {requested!r}; expected one of {', '.join(preset_names())}")
        return name
    props = meta.get("deviceProperties") or []
    text = " ".join(str(p.get("name", "")) for p in props if isinstance(p, dict)).lower()
    for pattern, name in (("a100", "a100-80g"), ("h100", "h100-80g"), ("h200", "h200"), ("b200", "b200")):
        if pattern in text:
            return name
    raise ValueError(f"{profile}: the profile does not name its device; give --hardware")


def run(args: argparse.Namespace) -> int:
    """Classify, fit, print, write; 2 on bad input."""
    from analyzer.kernel_classes import KERNEL_CLASSES
    from estimator.inputs.hardware import preset

    try:
        for cls in args.require:
            if cls not in KERNEL_CLASSES:
                raise ValueError(f"--require: unknown class {cls!r}; expected one of {', '.join(KERNEL_CLASSES)}")
        kernels, meta = profile_kernels(Path(args.profile), host_layers=True)
        hw_name = _hardware_name(args.hardware, meta, args.profile)
        hw = preset(hw_name)
        peak = hw.peak_tflops.get(args.precision)
        if peak is None:
            raise ValueError(f"--precision: hardware {hw_name!r} has no peak for {args.precision!r}")
        if not kernels:
            raise ValueError(f"{args.profile}: no device kernels (kernel_details.csv Name/Duration(us), or Kineto "
                             "device events)")
        fit = fit_classes(kernels, peak * FLOPS_PER_TFLOPS, hw.efficiency.hbm_gb_s * BYTES_PER_GB if hw.efficiency else None)
        for cls in args.require:
            if not fit[cls]["count"]:
                raise ValueError(f"{args.profile}: no kernels of class {cls!r} (kernel name / Type)")
    except (OSError, ValueError) as exc:
        print(f"ndval calibrate: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from ndval.core.atomic import is_stdout

    to_stdout = is_stdout(args.output)  # `-o -`: the overlay alone on stdout, the tables on stderr
    doc = overlay_from_fit(fit, args.profile, hw_name)
    doc["host_layers"] = meta.get("host_layers") or []
    with contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext():
        _print_fit(fit, hw_name)
        _print_host_layers(doc["host_layers"])
    if _write_overlay(args.output, doc):
        return EXIT_BAD_INPUT
    written = [k for k in doc["efficiency"] if k != "sources"]
    print(f"overlay: {'stdout' if to_stdout else args.output} ({', '.join(written) or 'no efficiency the profile supports'})",
          file=sys.stderr if to_stdout else sys.stdout)
    return 0


def _write_overlay(path: str, doc: dict[str, Any]) -> int:
    """Write the overlay YAML (``-``: stdout); 0, or (one line on stderr) ``EXIT_BAD_INPUT`` when the path cannot
    be written."""
    from ndval.core.atomic import write_output

    try:
        write_output(path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    except OSError as exc:
        print(f"ndval calibrate: cannot write the overlay: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def _print_host_layers(layers: list[dict[str, Any]]) -> None:
    """One line per host thread whose top-level ops repeat (host time per layer, launches per layer)."""
    if not layers:
        print("host time per layer: no host thread repeats a pattern of top-level ops that launches kernels "
              "(no layer structure in the profile)")
        return
    for r in layers:
        print(f"host layer on thread {r['thread']}: {len(r['ops'])} ops ({r['ops'][0]} ...) x {r['layers']} "
              f"({r['runs']} runs): host {r['host_us_per_layer']['median']:.1f} us per layer "
              f"(p25 {r['host_us_per_layer']['p25']:.1f}, p75 {r['host_us_per_layer']['p75']:.1f}), "
              f"{r['launches_per_layer']['median']:g} launches per layer, "
              f"{r['host_us_per_launch']['median']:.1f} us per launch")


def _print_fit(fit: dict[str, dict[str, Any]], hardware: str) -> None:
    from tabulate import tabulate

    rows = []
    for cls, rec in fit.items():
        if not rec["count"]:
            rows.append([cls, 0, "", "", "", "no kernels"])
            continue
        derived = rec.get("efficiency") or rec.get("memory_efficiency")
        text = (f"eff {derived['median']:.3f} (p25 {derived['p25']:.3f}, p75 {derived['p75']:.3f}; "
                f"{derived['kernels_used']} kernels)") if derived else ""
        if "kernel_latency_us" in rec:
            text += f"{'; ' if text else ''}latency {rec['kernel_latency_us']:.2f} us"
        rows.append([cls, rec["count"], f"{rec['time_us']:.1f}", f"{rec['share_pct']:.1f}",
                     f"{rec['duration_us']['median']:.2f}", text])
    print(f"kernel classes against {hardware}:")
    print(tabulate(rows, headers=["class", "kernels", "time us", "% of kernel time", "median us", "fit"]))
