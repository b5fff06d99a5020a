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


def estimate_vs_measured_png(rows: list[dict[str, Any]], title: str, band: tuple[float, float] | None = None) -> bytes | None:
    """Scatter of estimate (y) against measured (x) with y = x and the band's y = lo·x, y = hi·x lines.

    ``rows`` are evidence rows of a row-wise assertion: {row, estimate, measured, passed, waived}; a
    waived row outside the band is drawn as waived (orange diamond), not as a failure (red).
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
                        label=f"band {band[0]:g}–{band[1]:g}")
    for state, color, label, marker in (("in", "tab:blue", "in band", "o"),
                                        ("waived", "tab:orange", "outside, waived", "D"),
                                        ("out", "tab:red", "outside", "o")):
        sel = [p for p in pts if p[3] == state]
        if sel:
            ax.scatter([p[0] for p in sel], [p[1] for p in sel], s=22, color=color, marker=marker, label=label,
                       zorder=3)
    if len(pts) <= 12:
        for x, y, name, _ in pts:
            ax.annotate(name[-18:], (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("measured")
    ax.set_ylabel("estimate")
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
