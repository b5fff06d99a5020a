"""An imported configuration as YAML with one comment per field naming its source key.

``render(imported, header, source)`` writes the sections in schema order; every field line ends with
``# <source key or rule>``; the keys that were ignored, not modelled or unknown follow as comments
at the end, so the file says everything the importer did with its input.
"""

from __future__ import annotations

from typing import Any

import yaml

from estimator.importers.common import Imported

#: section order of a run configuration (estimator.config.schema.EstimatorConfig)
SECTION_ORDER = ("profile", "model", "train", "parallel", "recompute", "precision", "hardware", "options")


def _scalar(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _lines(imported: Imported, node: dict[str, Any], prefix: str, indent: int) -> list[str]:
    out: list[str] = []
    pad = "  " * indent
    for key, value in node.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.append(f"{pad}{key}:")
            out += _lines(imported, value, f"{dotted}.", indent + 1)
            continue
        line = f"{pad}{key}: {_scalar(value)}"
        source = imported.sources.get(dotted)
        out.append(f"{line}  # {source}" if source else line)
    return out


def ordered(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its sections in schema order (unknown ones last)."""
    keys = [k for k in SECTION_ORDER if k in data] + [k for k in data if k not in SECTION_ORDER]
    return {k: data[k] for k in keys}


def render(imported: Imported, header: list[str], source: dict[str, Any] | None = None) -> str:
    """The YAML text: ``header`` comment lines, the optional ``source`` items as ``# source <key>: value``
    comments (a model file keeps ``model:`` as its only key, so ``{ref:}`` includes unwrap it), the
    sections, then the importer's notes (ignored, not modelled, unknown keys) as comments."""
    lines = [f"# {h}" if h else "#" for h in header]
    if source:
        lines += [f"# source {k}: {v}" for k, v in source.items()]
    lines += _lines(imported, ordered(imported.data), "", 0)
    if imported.not_modelled:
        lines.append("# not modelled by the estimator (read, no effect on the estimate):")
        lines += [f"#   {k}: {why}" for k, why in imported.not_modelled.items()]
    if imported.warnings:
        lines.append("# unknown to the importer:")
        lines += [f"#   {w}" for w in imported.warnings]
    if imported.ignored:
        lines.append(f"# ignored ({len(imported.ignored)} keys that do not change memory or time): "
                     + ", ".join(imported.ignored))
    return "\n".join(lines) + "\n"
