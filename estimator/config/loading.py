"""YAML side of configuration loading: safe reading with a line index, ``model: {ref: ...}``
includes, and ``a.b=c`` overrides. Every failure is a ``ConfigError`` naming file and field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from estimator.config.errors import ConfigError
from estimator.importers.hf import import_hf_config
from ndval.core.yamlsrc import CaseError, parse_text, read_located

#: where ``model: {ref: models/x.yaml}`` is looked up when not found beside the YAML file
BUNDLED_CASES_DIR = Path(__file__).resolve().parents[2] / "validation_cases"


def line_for(field: str, lines: dict[str, int]) -> int | None:
    """Line of ``field`` or of its closest parent present in the YAML."""
    parts = field.split(".")
    while parts:
        key = ".".join(parts)
        if key in lines:
            return lines[key]
        parts.pop()
    return None


def read_yaml(path: Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Mapping and a ``dotted.key -> line`` index of a YAML file.

    Read by :func:`ndval.core.yamlsrc.read_located`, so a configuration has the limits and rules of a case
    file (safe tags only, aliases bounded, nesting depth, key/value lengths, no merge or duplicate keys);
    its ``CaseError`` becomes a ``ConfigError`` naming the same file, line and field.
    """
    try:
        located = read_located(path)
    except CaseError as exc:
        field = exc.field if exc.field != "<root>" else "<yaml>"
        raise ConfigError(field, exc.rule, file=exc.file, line=exc.line) from None
    if not isinstance(located.data, dict):
        raise ConfigError("<yaml>", "top level must be a mapping", file=str(path))
    lines = {".".join(loc): line for loc, line in located.key_lines.items() if all(isinstance(p, str) for p in loc)}
    return located.data, lines


@dataclass(frozen=True)
class RefSource:
    """Where the fields of a referenced model file came from (for error locations)."""

    file: str
    lines: dict[str, int]  # "model.<key>" -> line in the referenced file
    keys: frozenset[str]  # model keys taken from the file (not overridden beside ``ref``)


def resolve_model_ref(data: dict[str, Any], base_dir: Path | None,
                      ref_dirs: tuple[Path, ...] = ()) -> tuple[dict[str, Any], RefSource | None]:
    """Replace ``model: {ref: path, ...}`` by the referenced model merged with the keys beside ``ref``
    (looked up in ``base_dir`` — the working directory when None —, then in each of ``ref_dirs``, then in the
    bundled cases)."""
    model = data.get("model")
    if isinstance(model, dict) and "hf_config" in model:
        return resolve_hf_config(data, model, Path.cwd() if base_dir is None else base_dir), None
    if not isinstance(model, dict) or "ref" not in model:
        return data, None
    base_dir = Path.cwd() if base_dir is None else base_dir
    ref = str(model["ref"])
    folders = list(dict.fromkeys([base_dir, *ref_dirs, BUNDLED_CASES_DIR]))
    path = next((f / ref for f in folders if (f / ref).is_file()), None)
    if path is None:
        raise ConfigError("model.ref", f"model file {ref!r} not found (looked in {', '.join(map(str, folders))})")
    loaded, ref_lines = read_yaml(path)
    nested = "model" in loaded
    loaded = loaded["model"] if nested else loaded
    if not nested:
        ref_lines = {f"model.{k}": v for k, v in ref_lines.items()}
    local = {k: v for k, v in model.items() if k != "ref"}
    source = RefSource(str(path), ref_lines, frozenset(k for k in loaded if k not in local))
    return {**data, "model": {**loaded, **local}}, source


def resolve_hf_config(data: dict[str, Any], model: dict[str, Any], base_dir: Path) -> dict[str, Any]:
    """``model: {hf_config: path, ...}``: the model section imported from a Hugging Face ``config.json``
    (:func:`estimator.importers.hf.import_hf_config`, path relative to ``base_dir``), merged with the
    keys beside ``hf_config``. The importer's warnings are not raised here (``ndval import`` shows them)."""
    if "ref" in model:
        raise ConfigError("model.hf_config", "give either model.ref or model.hf_config, not both")
    path = Path(str(model["hf_config"]))
    path = path if path.is_absolute() else base_dir / path
    if not path.is_file():
        raise ConfigError("model.hf_config", f"Hugging Face config {str(model['hf_config'])!r} not found in {base_dir}")
    imported = import_hf_config(path).data["model"]
    local = {k: v for k, v in model.items() if k != "hf_config"}
    return {**data, "model": {**imported, **local}}


def parse_override(text: str) -> tuple[str, Any]:
    """``"parallel.tp=2"`` -> ``("parallel.tp", 2)``; the value is parsed as YAML with the 1.2 core schema's
    scalars (``010`` is 10, not octal 8; ``1:0`` and ``yes`` stay strings) under the case loader's limits (aliases,
    nesting depth: ``[[[...]]]`` 5000 deep is refused, not a RecursionError); text that is not YAML stays a string."""
    if "=" not in text:
        raise ConfigError(text, "override must look like key.path=value")
    key, raw = text.split("=", 1)
    try:
        value = parse_text(raw, f"--set {key.strip()}", yaml12=True) if raw.strip() else None
    except CaseError as exc:
        if not exc.rule.startswith("invalid YAML"):
            raise ConfigError(key.strip(), f"--set value: {exc.rule}") from None
        value = raw
    return key.strip(), value


def apply_overrides(data: dict[str, Any], overrides: Mapping[str, Any] | list[str]) -> dict[str, Any]:
    """A copy of ``data`` with dotted-key overrides applied (intermediate mappings created).

    Copy on write: only the mappings on an override's path are copied (``data`` is never changed);
    everything else is shared with ``data``, which validation reads but never mutates. A validated
    section (a pydantic model, as :func:`estimator.config.schema.load_config` passes them) on an override's
    path becomes its field mapping, validated again; sections no override touches stay validated.
    """
    pairs = [parse_override(o) for o in overrides] if isinstance(overrides, list) else list(overrides.items())
    out = dict(data)
    fresh = {id(out)}  # mappings created here (safe to write); the originals stay untouched
    for key, value in pairs:
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            child = node.get(part)
            if isinstance(child, str) and part == "hardware":
                child = {"preset": child}
            if child is None:
                child = {}
            if isinstance(child, BaseModel):  # a validated section: its fields, to be validated again
                child = child.model_dump(mode="python")
                fresh.add(id(child))
            if not isinstance(child, dict):
                raise ConfigError(key, f"cannot set a key inside {part!r}, which is not a mapping")
            if id(child) not in fresh:
                child = dict(child)
                fresh.add(id(child))
            node[part] = child
            node = child
        node[parts[-1]] = value
    return out
