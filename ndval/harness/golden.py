"""Golden files: one lifecycle core (pytest-regressions' split) over YAML payloads.

``golden/`` mirrors ``validation_cases/``: the payload of case ``c`` (point ``p``) in
``validation_cases/a/b.case.yaml`` lives in ``golden/a/b/c__p.yaml``. Lifecycle:

- missing golden ⇒ fail (the obtained payload is written under ``reports/golden/`` for review);
- mismatch ⇒ ``<name>.yaml.obtained``, a unified diff and an HTML diff under ``reports/golden/``, fail;
- ``--update-golden`` ⇒ rewrite only missing/mismatching goldens, still fail (review the diff);
- ``--regen-all-golden`` ⇒ rewrite every selected golden, pass.

Files are deterministic: sorted keys, no aliases, floats rounded to ``SIGNIFICANT`` digits, a
``format_version`` marker (another version ⇒ "tainted", treated as a mismatch). Comparison is per
field: floats with rel/abs tolerance, integers, strings and booleans exact.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ndval.core import atomic
from ndval.core.yamlsrc import CaseError, parse_text, read_regular_text
from ndval.harness.results import to_builtin

GOLDEN_FORMAT = 1
SIGNIFICANT = 10
MAX_DIFF_FIELDS = 100
Mode = Literal["check", "update", "regen_all"]


class _NoAliasDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def golden_path(golden_root: Path, cases_root: Path, case_file: Path, case_id: str, point_id: str) -> Path:
    """``golden/<case file path without .case.yaml>/<case id>[__<point id>].yaml``."""
    rel = case_file.resolve().relative_to(cases_root.resolve())
    folder = rel.parent / rel.name.removesuffix(".case.yaml")
    name = case_id + (f"__{point_id}" if point_id else "")
    name = re.sub(r"[^A-Za-z0-9_.+-]", "_", name)
    return golden_root / folder / f"{name}.yaml"


@dataclass(frozen=True)
class GoldenUse:
    """One case item's golden file and where the item is defined (for the collision message)."""

    path: Path
    where: str


def collisions(uses: list[GoldenUse]) -> dict[str, str]:
    """Items that would share one golden file, after the id -> file-name mapping and after case-folding (two
    names equal on a case-insensitive file system): ``{where: message naming every location}``.

    Case ``gamma`` at point ``tool: x`` and case ``gamma__toolx`` map to one ``gamma__toolx.yaml``; so do
    points ``a b`` / ``a/b`` / ``a:b`` (each character outside ``[A-Za-z0-9_.+-]`` becomes ``_``) and
    ``Foo`` / ``foo`` on macOS or Windows. One file for two items flip-flops: each run rewrites or fails it.
    """
    groups: dict[str, list[GoldenUse]] = {}
    for use in uses:
        groups.setdefault(use.path.as_posix().casefold(), []).append(use)
    out: dict[str, str] = {}
    for group in groups.values():
        wheres = sorted({u.where for u in group})
        if len(wheres) < 2:
            continue
        files = sorted({u.path.as_posix() for u in group})
        same = "one golden file" if len(files) == 1 else "golden files equal after case-folding"
        for w in wheres:
            others = ", ".join(o for o in wheres if o != w)
            out[w] = (f"golden collision: shares {same} ({' / '.join(files)}) with {others}; rename a case id or a "
                      "matrix value so that each item has its own golden file")
    return out


def normalize(value: Any) -> Any:
    """Builtins with floats rounded to ``SIGNIFICANT`` significant digits (stable across platforms)."""
    value = to_builtin(value)
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT}g}") if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


def dump(case_id: str, payload: Any) -> str:
    """The golden file text for ``payload``."""
    doc = {"format_version": GOLDEN_FORMAT, "case": case_id, "data": normalize(payload)}
    return yaml.dump(doc, Dumper=_NoAliasDumper, sort_keys=True, default_flow_style=False, allow_unicode=True, width=100)


def compare(obtained: Any, expected: Any, rel: float, abs_tol: float, where: str = "") -> list[dict[str, Any]]:
    """Every mismatching field as {field, obtained, expected, diff}; floats within max(rel·|e|, abs) match."""
    path = where or "<root>"
    if isinstance(obtained, dict) and isinstance(expected, dict):
        out = []
        for key in sorted(set(obtained) | set(expected), key=str):
            sub = f"{where}.{key}" if where else str(key)
            if key not in expected:
                out.append({"field": sub, "obtained": obtained[key], "expected": "<absent>", "diff": "added"})
            elif key not in obtained:
                out.append({"field": sub, "obtained": "<absent>", "expected": expected[key], "diff": "removed"})
            else:
                out += compare(obtained[key], expected[key], rel, abs_tol, sub)
        return out
    if isinstance(obtained, list) and isinstance(expected, list):
        if len(obtained) != len(expected):
            return [{"field": path, "obtained": f"{len(obtained)} items", "expected": f"{len(expected)} items", "diff": "length"}]
        out = []
        for i, (o, e) in enumerate(zip(obtained, expected, strict=True)):
            out += compare(o, e, rel, abs_tol, f"{where}[{i}]")
        return out
    numeric = (int, float)
    if (isinstance(obtained, numeric) and isinstance(expected, numeric) and not isinstance(obtained, bool)
            and not isinstance(expected, bool) and (isinstance(obtained, float) or isinstance(expected, float))):
        diff = float(obtained) - float(expected)
        if abs(diff) <= max(rel * abs(float(expected)), abs_tol):
            return []
        return [{"field": path, "obtained": obtained, "expected": expected, "diff": diff}]
    if obtained == expected and type(obtained) is type(expected):
        return []
    return [{"field": path, "obtained": obtained, "expected": expected, "diff": "differs"}]


@dataclass
class GoldenOutcome:
    """What happened to one golden file in this run."""

    status: Literal["match", "missing", "mismatch", "tainted", "updated", "regenerated"]
    passed: bool
    path: Path
    mismatches: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[Path] = field(default_factory=list)
    diff_text: str = ""

    def message(self) -> str:
        rel = self.path.as_posix()
        text = {
            "match": f"golden {rel} matches",
            "missing": f"golden {rel} is missing: review the obtained payload and rerun with --update-golden",
            "mismatch": f"golden {rel}: {len(self.mismatches)} field(s) differ; rerun with --update-golden after review",
            "tainted": f"golden {rel} has another format_version: regenerate it (--regen-all-golden)",
            "updated": f"golden {rel} rewritten by --update-golden ({len(self.mismatches)} field(s) differed); review and rerun",
            "regenerated": f"golden {rel} regenerated (--regen-all-golden)",
        }[self.status]
        if self.artifacts:
            text += "; see " + ", ".join(str(p) for p in self.artifacts)
        return text


def _write_review(path: Path, review_dir: Path, text: str, old_text: str) -> tuple[list[Path], str]:
    obtained, diff_path, html_path = _review_files(path, review_dir)
    atomic.write_text(obtained, text)
    diff_lines = list(difflib.unified_diff(old_text.splitlines(), text.splitlines(), f"expected/{path.name}",
                                           f"obtained/{path.name}", lineterm=""))
    diff_text = "\n".join(diff_lines) + "\n"
    diff = atomic.write_text(diff_path, diff_text)
    html = difflib.HtmlDiff(wrapcolumn=100).make_file(old_text.splitlines(), text.splitlines(), "expected",
                                                      "obtained", context=True, numlines=3)
    page = atomic.write_text(html_path, html)
    return [obtained, diff, page], diff_text


def _review_files(path: Path, review_dir: Path) -> list[Path]:
    """The review files ``_write_review`` writes for golden ``path``."""
    return [review_dir / (path.name + ".obtained"), review_dir / (path.name + ".diff"), review_dir / (path.stem + ".diff.html")]


def check(case_id: str, payload: Any, path: Path, review_dir: Path, mode: Mode, rel: float, abs_tol: float) -> GoldenOutcome:
    """Run the lifecycle for one golden file (see module docstring); only this item's files are written.

    Review files of an earlier run for this golden are removed first, so what lies under
    ``reports/golden/`` is always this run's drift (plain ``pytest`` runs do not clean the folder).
    """
    for stale in _review_files(path, review_dir):
        stale.unlink(missing_ok=True)
    text = dump(case_id, payload)
    if not path.exists():
        if mode == "check":
            arts, diff = _write_review(path, review_dir, text, "")
            return GoldenOutcome("missing", False, path, artifacts=arts, diff_text=diff)
        atomic.write_text(path, text)
        return GoldenOutcome("regenerated" if mode == "regen_all" else "updated", mode == "regen_all", path)
    old_text, old = _read_golden(path)
    if mode == "regen_all":
        if old_text != text:
            atomic.write_text(path, text)
        return GoldenOutcome("regenerated", True, path)
    if old.get("format_version") != GOLDEN_FORMAT:
        status: Literal["tainted", "mismatch"] = "tainted"
        mismatches = [{"field": "format_version", "obtained": GOLDEN_FORMAT, "expected": old.get("format_version"), "diff": "differs"}]
    else:
        status = "mismatch"
        mismatches = compare(normalize(payload), old.get("data"), rel, abs_tol)
    if not mismatches:
        return GoldenOutcome("match", True, path)
    arts, diff = _write_review(path, review_dir, text, old_text)
    if mode == "update":
        atomic.write_text(path, text)
        return GoldenOutcome("updated", False, path, mismatches[:MAX_DIFF_FIELDS], arts, diff)
    return GoldenOutcome(status, False, path, mismatches[:MAX_DIFF_FIELDS], arts, diff)


class GoldenError(ValueError):
    """A golden file that cannot be read as one (a folder, not UTF-8, invalid YAML): the message names it."""


def _read_golden(path: Path) -> tuple[str, dict[str, Any]]:
    """The golden's text and mapping, read under the case loader's limits; ``GoldenError`` in one line."""
    try:
        text = read_regular_text(path)
        data = parse_text(text, str(path))
    except CaseError as exc:
        raise GoldenError(f"golden {exc.render()}") from None
    except (OSError, ValueError) as exc:
        raise GoldenError(f"golden {path}: {exc}") from None
    return text, data if isinstance(data, dict) else {}


def unused_goldens(golden_root: Path, expected: set[Path]) -> list[Path]:
    """Golden files under ``golden_root`` that no case in the tree would use (listed, never deleted)."""
    if not golden_root.is_dir():
        return []
    wanted = {p.resolve() for p in expected}
    return sorted(p for p in golden_root.rglob("*.yaml") if p.resolve() not in wanted)
