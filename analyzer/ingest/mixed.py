"""A warning when the ranks of one folder mix DB and text exports (and, stronger, when their capture windows do
not overlap: different runs). Duck-typed over ``dataset.RankData`` (``events``, ``files``, ``base_ts_us``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _window_us(r: Any) -> tuple[float, float] | None:
    if r.events.empty:
        return None
    ts = r.events["ts_us"].to_numpy()
    return r.base_ts_us + float(ts.min()), r.base_ts_us + float((ts + r.events["dur_us"].to_numpy()).max())


def mixed_exports(path: Path, rds: list[Any]) -> list[str]:
    """A warning when ranks come from DB and text exports, naming the files; a stronger one when
    their capture windows do not overlap (different runs: their numbers are not one capture)."""
    def main_file(r: Any) -> Path | None:
        return next((f for k, f in r.files.items() if k.endswith(".db") and k != "analysis.db"), None)
    db = [r for r in rds if main_file(r) is not None]
    text = [r for r in rds if main_file(r) is None and "trace_view.json" in r.files]
    if not db or not text:
        return []
    out = [f"{path}: ranks mix DB exports ({', '.join(str(main_file(r)) for r in db)}) and text exports "
           f"({', '.join(str(r.files['trace_view.json']) for r in text)})"]
    windows = [(r, _window_us(r)) for r in db + text]
    for r, w in windows:
        others = [o for o, ow in windows if o is not r and ow is not None and w is not None
                  and (ow[1] < w[0] or w[1] < ow[0])]
        if others and r in db:
            out.append(f"{main_file(r)}: its capture window does not overlap that of "
                       f"{', '.join(str(o.files.get('trace_view.json') or main_file(o)) for o in others)} — "
                       "different runs: compare them (ndval compare) rather than analyse them as one cluster")
    return out
