"""What a sweep shows: the ranked table, the Pareto front, rejections by reason, and the Pareto plot
(PNG, and a self-contained HTML page holding the plot as SVG with the ranked table)."""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from estimator.search.evaluate import Candidate
from estimator.search.run import SearchResult
from ndval.core.units import MIB_PER_GIB

#: overrides every layout carries that the tables need not repeat
_IMPLIED = ("hardware.devices",)
#: short column names for the usual dimensions
_SHORT = {
    "parallel.tp": "tp", "parallel.pp": "pp", "parallel.vpp": "vpp", "parallel.dp": "dp", "parallel.ep": "ep",
    "parallel.etp": "etp", "parallel.cp": "cp", "train.micro_batch_size": "mb", "recompute.mode": "recompute",
    "parallel.schedule": "schedule",
}
_SPLIT_PREFIXES = ("parallel.decoder_", "parallel.account_for_")


def layout_text(c: Candidate) -> str:
    """``tp=2 pp=8 dp=64 ep=8 mb=1 recompute=full`` (split fields shown by the split column)."""
    return " ".join(
        f"{_SHORT.get(k, k)}={v}" for k, v in c.overrides.items()
        if k not in _IMPLIED and not k.startswith(_SPLIT_PREFIXES)
    )


def candidate_rows(cands: Sequence[Candidate]) -> list[list[Any]]:
    return [[i + 1, layout_text(c), c.split, c.peak_mb / MIB_PER_GIB, c.total_s, c.tokens_per_s, c.mfu]
            for i, c in enumerate(cands)]


CANDIDATE_HEADERS = ["#", "layout", "split", "peak GiB", "step s", "tokens/s", "MFU"]


def format_result(result: SearchResult, top: int | None = None) -> str:
    """The console report: summary line, ranked table, Pareto front, rejections by reason."""
    p = result.partial
    lines = [
        f"{p.evaluated} layouts on {result.devices} devices: {p.feasible} feasible, "
        f"{p.evaluated - p.feasible} rejected; {result.configs_per_s:,.0f} layouts/s ({result.path} path); "
        f"objective {p.objective}",
    ]
    ranked = p.ranked[:top] if top else p.ranked
    if ranked:
        lines += ["", f"top {len(ranked)} by {p.objective}:",
                  tabulate(candidate_rows(ranked), headers=CANDIDATE_HEADERS, floatfmt=".4g")]
        lines += ["", f"Pareto front (step time vs peak memory), {len(p.pareto)} layouts:",
                  tabulate(candidate_rows(p.pareto), headers=CANDIDATE_HEADERS, floatfmt=".4g")]
    else:
        lines += ["", "no layout is feasible; why, by reason:"]
    if p.rejected:
        rows = [[reason, n, p.examples.get(reason, "")[:160]] for reason, n in p.rejected.most_common()]
        lines += ["", "rejected:", tabulate(rows, headers=["reason", "layouts", "first example"])]
    return "\n".join(lines)


def _points(result: SearchResult) -> list[tuple[float, float]]:
    """(step s, peak GiB) of every feasible layout kept: all rows when kept, else top K + front."""
    if result.rows:
        return [(r["total_s"], r["peak_mb"] / MIB_PER_GIB) for r in result.rows if r.get("feasible")]
    return [(c.total_s, c.peak_mb / MIB_PER_GIB) for c in {c.key(): c for c in [*result.ranked, *result.pareto]}.values()]


def pareto_figure(result: SearchResult) -> Any:
    """A matplotlib figure: feasible layouts, the Pareto front as a step line, the top K marked."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5), dpi=110)
    ax = fig.add_subplot()
    pts = _points(result)
    if pts:
        xs, ys = zip(*pts, strict=True)
        ax.scatter(xs, ys, s=8, alpha=0.4, color="0.55", label="feasible layouts")
    top = result.ranked
    if top:
        ax.scatter([c.total_s for c in top], [c.peak_mb / MIB_PER_GIB for c in top], s=24, marker="o",
                   facecolors="none", edgecolors="tab:blue", label=f"top {len(top)} ({result.partial.objective})")
    front = result.pareto
    if front:
        ax.step([c.total_s for c in front], [c.peak_mb / MIB_PER_GIB for c in front], where="post",
                color="tab:red", marker="s", ms=4, label="Pareto front")
    ax.set_xlabel("estimated step time [s]")
    ax.set_ylabel("estimated peak memory [GiB]")
    ax.set_title(f"{result.partial.feasible} feasible of {result.partial.evaluated} layouts, "
                 f"{result.devices} devices")
    ax.grid(alpha=0.3)
    if pts or top:
        ax.legend(loc="best", fontsize=8)
    return fig


def figure_bytes(fig: Any, fmt: str) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, bbox_inches="tight")
    return buf.getvalue()


def pareto_html(result: SearchResult, svg: bytes) -> str:
    """A self-contained page: the plot (inline SVG) and the ranked and Pareto tables."""
    ranked = tabulate(candidate_rows(result.ranked), headers=CANDIDATE_HEADERS, tablefmt="html", floatfmt=".4g")
    front = tabulate(candidate_rows(result.pareto), headers=CANDIDATE_HEADERS, tablefmt="html", floatfmt=".4g")
    title = html.escape(f"ndval search: {result.devices} devices")
    text = svg.decode("utf-8")
    inline = text[text.find("<svg"):]  # drop the XML prolog: the SVG sits inside an HTML page
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        "<style>body{font-family:sans-serif;max-width:1100px;margin:1em auto}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px}</style>"
        f"</head><body><h1>{title}</h1>{inline}"
        f"<h2>Top {len(result.ranked)} by {html.escape(result.partial.objective)}</h2>{ranked}"
        f"<h2>Pareto front</h2>{front}</body></html>"
    )
