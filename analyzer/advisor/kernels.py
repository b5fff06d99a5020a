"""The kernel table as the compute rules read it: numeric columns, op groups by (name, shapes), and shape parsing.

A *group* is msprof-analyze's unit of advice in ``ai_core_performance_checker.py``: kernels with the same
``Name`` and the same ``Input Shapes`` + ``Output Shapes``; its ratios are the mean over its kernels and its
duration the sum.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

RATIOS = ("aic_mac_ratio", "aic_mte2_ratio", "aic_fixpipe_ratio", "aic_scalar_ratio", "aic_mte1_ratio",
          "aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio", "aiv_scalar_ratio")


def numeric(kd: pd.DataFrame, col: str) -> np.ndarray:
    """Column ``col`` as float64 (``N/A`` and blanks -> NaN; a missing column -> all NaN)."""
    if col not in kd.columns:
        return np.full(len(kd), np.nan)
    return pd.to_numeric(kd[col], errors="coerce").to_numpy(dtype="float64", na_value=np.nan)


def text(kd: pd.DataFrame, col: str) -> pd.Series:
    """Column ``col`` as stripped strings with the CSV's doubled quotes removed (``""`` when missing)."""
    if col not in kd.columns:
        return pd.Series([""] * len(kd), index=kd.index)
    raw = kd[col].astype(object)
    return raw.where(raw.notna(), "").astype(str).str.strip().str.strip('"').replace({"N/A": ""})


def groups(kd: pd.DataFrame) -> pd.DataFrame:
    """One row per (name, shapes) group: name, type, core, shape, dtype, dur_us (Σ), count, mean of each ratio."""
    frame = pd.DataFrame({
        "name": text(kd, "Name"), "type": text(kd, "Type"), "core": text(kd, "Accelerator Core"),
        "in_shape": text(kd, "Input Shapes"), "out_shape": text(kd, "Output Shapes"),
        "dtype": text(kd, "Input Data Types"), "dur_us": numeric(kd, "Duration(us)"),
    })
    for r in RATIOS:
        frame[r] = numeric(kd, r)
    agg = {"type": ("type", "first"), "core": ("core", "first"), "dtype": ("dtype", "first"),
           "dur_us": ("dur_us", "sum"), "count": ("dur_us", "size"), **{r: (r, "mean") for r in RATIOS}}
    return frame.groupby(["name", "in_shape", "out_shape"], sort=False, dropna=False).agg(**agg).reset_index()


def dims(shape: str, index: int = 0) -> list[int]:
    """The integer dims of the ``index``-th tensor of a shape string ``"a,b;c,d"`` ([] when not parseable)."""
    parts = shape.split(";")
    if index >= len(parts):
        return []
    try:
        return [int(x) for x in parts[index].split(",") if x.strip()]
    except ValueError:
        return []


def tensor_elements(shape: str) -> int:
    """Σ over the tensors of a shape string of their element counts (a 1-d tensor counts twice: msprof-analyze's
    ``memory_size`` treats it as a bias, ``ai_core_performance_checker.py``)."""
    total = 0
    for i, part in enumerate(shape.split(";")):
        d = dims(shape, i)
        if not d:
            continue
        total += d[0] * 2 if "," not in part else int(np.prod(d))
    return total
