"""Estimate-vs-measured plots (matplotlib, Agg backend) as PNG bytes, for Allure and the sign-off report."""

from __future__ import annotations

import io
import math
from typing import Any


def point_state(row: dict[str, Any]) -> str:
    """How a plotted evidence row is drawn: ``in`` (in band), ``waived`` (outside under a waiver), ``out``."""
    if row.get("passed"):
        return "in"
    return "waived" if row.get("waived") else "out"


#: unit suffix of a column name (the project's naming rule) -> the unit written on an axis
UNITS = {"_mb": "MiB", "_gib": "GiB", "_bytes": "bytes", "_ms": "ms", "_s": "s", "_us": "µs"}


def unit_of(column: str) -> str:
    """The unit a column's name states (``estimate_mb`` -> ``MiB``), else ``""``."""
    return next((u for suffix, u in UNITS.items() if column.lower().endswith(suffix)), "")


def axis_label(what: str, column: str) -> str:
    """``measured (MiB)`` from the role and the column name; the bare role when the name states no unit."""
    unit = unit_of(column)
    return f"{what}: {column} ({unit})" if unit else f"{what}: {column}" if column else what


def columns_of(target: str) -> tuple[str, str]:
    """(estimate column, measured column) of a row-wise assertion's target text (``ratio: est vs meas``)."""
    body = target.split(":", 1)[-1].strip()
    for prefix in ("MAPE ",):
        body = body.removeprefix(prefix)
    est, _, meas = body.partition(" vs ")
    return est.strip(), meas.strip()


def _free_labels(pts: list[tuple[float, float, str, str]], top: float, size_px: tuple[float, float],
                 font_px: float = 7.5) -> list[tuple[float, float, str, tuple[int, int]]]:
    """Point labels that do not overlap each other nor leave the axes (where the tick labels are): each tries
    four offsets around its point and is dropped when all four collide (x, y, text, offset in points)."""
    placed: list[tuple[float, float, float, float]] = []
    out = []
    for x, y, name, _ in pts:
        text = name[-18:]
        w, h = len(text) * font_px * 0.6, font_px * 1.3
        px, py = x / top * size_px[0], y / top * size_px[1]
        for dx, dy in ((3, 3), (3, -10), (-3 - int(w), 3), (-3 - int(w), -10)):
            box = (px + dx, py + dy, px + dx + w, py + dy + h)
            inside = box[0] >= 0 and box[2] <= size_px[0] and box[1] >= 0 and box[3] <= size_px[1]
            if inside and all(box[2] <= b[0] or box[0] >= b[2] or box[3] <= b[1] or box[1] >= b[3] for b in placed):
                placed.append(box)
                out.append((x, y, text, (dx, dy)))
                break
    return out


def estimate_vs_measured_png(rows: list[dict[str, Any]], title: str, band: tuple[float, float] | None = None,
                             x_label: str = "measured", y_label: str = "estimate",
                             band_label: str | None = None) -> bytes | None:
    """Scatter of estimate (y) against measured (x) with y = x and the band's y = lo·x, y = hi·x lines.

    ``rows`` are evidence rows of a row-wise assertion: {row, estimate, measured, passed, waived}; a
    waived row outside the band is drawn as waived (orange diamond), not as a failure (red). Axis labels
    carry the units (:func:`axis_label`); point labels that would overlap are left out (:func:`_free_labels`).
    Returns ``None`` when no row has two finite positive values.
    """
    pts = [(float(r["measured"]), float(r["estimate"]), str(r.get("row", "")), point_state(r))
           for r in rows if r.get("measured") is not None and r.get("estimate") is not None
           and math.isfinite(float(r["measured"])) and math.isfinite(float(r["estimate"]))]
    top = max(max(p[0] for p in pts), max(p[1] for p in pts)) * 1.08 if pts else 0.0
    if top <= 0:  # nothing to draw on a 0..0 square (e.g. every value is 0)
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.2), dpi=90)
    ax.plot([0, top], [0, top], color="grey", lw=1, label="estimate = measured")
    if band:
        ax.fill_between([0, top], [0, band[0] * top], [0, band[1] * top], color="tab:green", alpha=0.12,
                        label=band_label or f"band {band[0]:g}–{band[1]:g}")
    for state, color, label, marker in (("in", "tab:blue", "in band", "o"),
                                        ("waived", "tab:orange", "outside, waived", "D"),
                                        ("out", "tab:red", "outside", "o")):
        sel = [p for p in pts if p[3] == state]
        if sel:
            ax.scatter([p[0] for p in sel], [p[1] for p in sel], s=22, color=color, marker=marker, label=label,
                       zorder=3)
    if len(pts) <= 12:
        bbox = ax.get_window_extent()
        for x, y, text, offset in _free_labels(pts, top, (bbox.width, bbox.height)):
            ax.annotate(text, (x, y), fontsize=6, xytext=offset, textcoords="offset points")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel(x_label, fontsize=8)
    ax.set_ylabel(y_label, fontsize=8)
    ax.set_title(title[:70], fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def band_of(assertion: dict[str, Any]) -> tuple[float, float] | None:
    """(lo, hi) of a ``ratio_within`` result's expected text ``[lo, hi]``."""
    if assertion.get("type") != "ratio_within":
        return None
    text = str(assertion.get("expected", "")).strip("[]")
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        return None
    return lo, hi
