"""Case schema (pydantic), case-file loading with line numbers, matrix expansion and data loading.

A case file is ``*.case.yaml`` under ``validation_cases/``: either one case (a mapping with ``id``)
or ``{schema_version: 1, defaults: {...}, cases: [...]}``. Each case expands into points: one
point, one per ``matrix`` combination (ids like ``ep2-tp1``), or one per data row
(``data.per_row: <id column>``). Every error is a ``CaseError`` naming file, line and field.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ndval.core import rows as rowfilter
from ndval.core.hashing import sha256_file
from ndval.core.yamlsrc import (
    CaseError,
    Loc,
    Located,
    confine,
    deep_merge,
    did_you_mean,
    format_loc,
    load_located,
)
from ndval.harness import golden, paths
from ndval.harness.assertions import AssertionSpec, load_assertions
from ndval.harness.kinds import load_kinds

SCHEMA_VERSION = 1
CASE_SUFFIX = ".case.yaml"
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"
#: longest case id / matrix point id: each becomes part of a file name (goldens, Allure results),
#: and ``<case>__<point>.yaml`` must stay well inside the 255-byte file-name limit of common filesystems
MAX_ID_CHARS = 120
#: most items (matrix points or data rows) one case may expand into; the matrix size is checked before
#: anything is expanded (8 keys × 10 values would be 10^8 points)
MAX_POINTS = 10_000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Waiver(Strict):
    """A known, accepted failure: reported as waived, never hidden; expired ⇒ the case is broken."""

    reason: str = Field(min_length=10)
    owner: str = Field(min_length=1)
    expires: dt.date
    issue: str = Field(min_length=1, description="issue link or id tracking the fix")
    assertions: list[str] | None = Field(None, description="assertion ids covered (default: all)")
    points: list[str] | None = Field(None, description="matrix point / data-row ids covered (default: all)")


class DataSpec(Strict):
    """Measured/recorded data: ``inline`` rows, a ``file`` next to the case, or a shared ``measured`` CSV."""

    inline: list[dict[str, Any]] | None = None
    file: str | None = Field(None, description="CSV/XLSX path relative to the case file (inside validation_cases/)")
    sheet: str | None = Field(None, description="XLSX sheet name (default: first)")
    sha256: str | None = Field(None, description="expected checksum of file; recorded either way")
    measured: str | None = Field(None, description="file name in the shared measured-data folder (NDVAL_MEASURED_DIR)")
    where: dict[str, Any] = Field(default_factory=dict, description="keep rows whose column equals value / is in list")
    columns: dict[str, str] = Field(default_factory=dict, description="rename columns {from: to}")
    per_row: str | None = Field(None, description="one item per row; the column giving its id")


class Case(Strict):
    """One validation case (spec §1)."""

    id: str = Field(pattern=ID_PATTERN, max_length=MAX_ID_CHARS)
    title: str = Field(min_length=1)
    kind: str
    owner: str = Field(min_length=1)
    severity: Literal["blocker", "major", "minor"]
    source: str = Field(min_length=1, description="where the measured/recorded data came from")
    tags: list[str] = Field(default_factory=list)
    description: str = ""
    story: str | None = Field(None, description="Allure story (default: the case file name)")
    criterion: str | None = Field(None, description="default acceptance criterion for the assertions")
    links: list[str] = Field(default_factory=list)
    params: dict[str, Any] = Field(default_factory=dict, description="kind-specific, validated by the kind")
    data: DataSpec | None = None
    matrix: dict[str, list[Any]] | list[dict[str, Any]] | None = None
    expect: list[dict[str, Any]] = Field(min_length=1)
    golden: bool = Field(False, description="keep a golden file of the kind's payload (adds golden_match)")
    waiver: Waiver | None = None


class CaseFileModel(Strict):
    schema_version: Literal[1] = 1
    defaults: dict[str, Any] = Field(default_factory=dict)
    cases: list[dict[str, Any]] = Field(min_length=1)


@dataclass
class Point:
    """One runnable item: a case at one matrix point (or data row)."""

    id: str
    #: the kind's params model, validated, with the point's overrides applied
    params: BaseModel
    rows: list[dict[str, Any]]
    overrides: dict[str, Any] = field(default_factory=dict)
    unavailable: str | None = None


@dataclass
class LoadedCase:
    case: Case
    expect: list[AssertionSpec]
    points: list[Point]
    file: Path
    line: int
    data_provenance: dict[str, Any] = field(default_factory=dict)
    expect_lines: list[int | None] = field(default_factory=list)


@dataclass
class LoadedFile:
    path: Path
    sha256: str
    cases: list[LoadedCase]
    errors: list[tuple[str, CaseError]]


def find_cases_root(path: Path) -> Path:
    """The project's cases folder when ``path`` is inside it, else the nearest ancestor named
    ``validation_cases``, else the project's cases folder."""
    project_cases = paths.cases_dir()
    resolved = path.resolve()
    if project_cases in resolved.parents:
        return project_cases
    for parent in resolved.parents:
        if parent.name == "validation_cases":
            return parent
    return project_cases


def today() -> dt.date:
    """Date used for waiver expiry: today in UTC, so a waiver expires at the same instant everywhere (the local
    date made a waiver "expiring today" fail in UTC+14 and pass in UTC); ``NDVAL_TODAY=YYYY-MM-DD`` pins it."""
    pinned = os.environ.get("NDVAL_TODAY")
    return dt.date.fromisoformat(pinned) if pinned else dt.datetime.now(dt.UTC).date()


def _pydantic_error(exc: ValidationError, located: Located, prefix: Loc) -> CaseError:
    err = exc.errors()[0]
    loc = (*prefix, *err["loc"])
    file, line = located.where(loc)
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    if err["type"] == "union_tag_invalid" or (err.get("input") is not None and err["type"] == "literal_error"):
        msg = f"{msg} (got {err.get('input')!r})"
    more = f" (+{len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return CaseError(file, line, format_loc(loc), msg + more)


def _did_you_mean(word: str, options: list[str]) -> str:
    hint = did_you_mean(word, options)
    return f" ({hint})" if hint else ""


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    out = dict(target)
    head, _, rest = dotted.partition(".")
    if rest:
        sub = out.get(head)
        out[head] = _set_dotted(sub if isinstance(sub, dict) else {}, rest, value)
    else:
        out[head] = value
    return out


def _point_id(overrides: dict[str, Any]) -> str:
    return "-".join(f"{k.rsplit('.', 1)[-1]}{v}" for k, v in overrides.items())


def check_matrix(matrix: dict[str, list[Any]] | list[dict[str, Any]] | None, located: Located, loc: Loc) -> None:
    """Refuse a matrix key with no values (the product would silently drop the case) or more than ``MAX_POINTS`` points."""
    if not matrix:
        return
    if isinstance(matrix, list):
        n = len(matrix)
    else:
        n = 1
        for key, values in matrix.items():
            if not values:
                file, line = located.where((*loc, "matrix", key))
                raise CaseError(file, line, format_loc((*loc, "matrix", key)),
                                "a matrix key needs at least one value (an empty list would drop the case silently)")
            n *= len(values)
    if n > MAX_POINTS:
        file, line = located.where((*loc, "matrix"))
        raise CaseError(file, line, format_loc((*loc, "matrix")), f"{n:,} points: more than {MAX_POINTS:,} per case")


def expand_matrix(matrix: dict[str, list[Any]] | list[dict[str, Any]] | None) -> list[tuple[str, dict[str, Any]]]:
    """Matrix -> [(point id, {dotted.param.path: value})]; dict = cartesian product in YAML key order."""
    if not matrix:
        return [("", {})]
    if isinstance(matrix, dict):
        keys = list(matrix)
        combos = itertools.product(*(matrix[k] for k in keys))
        return [(_point_id(dict(zip(keys, combo, strict=True))), dict(zip(keys, combo, strict=True))) for combo in combos]
    out = []
    for entry in matrix:
        entry = dict(entry)
        pid = str(entry.pop("id", "") or _point_id(entry))
        out.append((pid, entry))
    return out


def read_table(path: Path, sheet: str | None, text: bool = False) -> list[dict[str, Any]]:
    """Rows of a CSV/XLSX/Parquet table; ``text`` keeps every CSV cell as written (empty = '').

    Bounded before reading: a workbook's zip must unpack to at most ``ndval.core.archives`` bounds (a 4 MB
    file declaring 1 GB is refused, and a CSV named ``.xlsx`` is named as not a workbook), a Parquet file's
    footer is checked the same way; at most :data:`MAX_TABLE_ROWS` rows are read, more is an error."""
    import pandas as pd

    from ndval.core.archives import check_parquet, check_zip

    suffix = path.suffix.lower()
    if suffix == ".csv" and text:
        import csv

        with path.open(newline="", encoding="utf-8") as fh:
            rows = [dict(r) for r in itertools.islice(csv.DictReader(fh), MAX_TABLE_ROWS + 1)]
        return _bounded(rows, path)
    if suffix == ".csv":
        frame = pd.read_csv(path, nrows=MAX_TABLE_ROWS + 1)
    elif suffix in (".xlsx", ".xlsm"):
        check_zip(path, "xlsx workbook")
        frame = pd.read_excel(path, sheet_name=sheet or 0, engine="openpyxl", nrows=MAX_TABLE_ROWS + 1)
    elif suffix == ".parquet":
        check_parquet(path, MAX_TABLE_ROWS)
        frame = pd.read_parquet(path)
    else:
        raise ValueError(f"unsupported data file type {suffix!r} (csv, xlsx, parquet)")
    frame = frame.astype(object).where(frame.notna(), None)
    return _bounded([{str(k): v for k, v in row.items()} for row in frame.to_dict(orient="records")], path)


#: most rows one data table may have
MAX_TABLE_ROWS = 1_000_000


def _bounded(rows: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    if len(rows) > MAX_TABLE_ROWS:
        raise ValueError(f"{path}: more than {MAX_TABLE_ROWS:,} rows: refused (split the table)")
    return rows


def load_data(spec: DataSpec, case_file: Path, cases_root: Path, located: Located,
              loc: Loc) -> tuple[list[dict[str, Any]], dict[str, Any], str | None]:
    """Rows of the case's data, its provenance (path, sha256, n rows) and an unavailability reason."""
    where = located.where
    sources = [s for s in ("inline", "file", "measured") if getattr(spec, s) is not None]
    if len(sources) != 1:
        file, line = where(loc)
        raise CaseError(file, line, format_loc(loc), f"give exactly one of inline/file/measured (got {sources or 'none'})")
    prov: dict[str, Any] = {"source": sources[0]}
    if spec.inline is not None:
        rows = [dict(r) for r in spec.inline]
    else:
        fld = "file" if spec.file else "measured"
        file, line = where((*loc, fld))
        if spec.file:
            path = confine(case_file.parent / spec.file, cases_root, file, line, format_loc((*loc, "file")))
        else:
            base = paths.measured_dir()
            if not base.is_dir():
                return [], {"source": "measured", "path": str(base)}, f"published measurements not available at {base}"
            assert spec.measured is not None  # exactly one source is set (checked above)
            path = confine(base / spec.measured, base, file, line, format_loc((*loc, "measured")))
        if not path.is_file():
            raise CaseError(file, line, format_loc((*loc, fld)), f"data file {str(getattr(spec, fld))!r} not found ({path})")
        digest = sha256_file(path)
        if spec.sha256 and spec.sha256 != digest:
            sfile, sline = where((*loc, "sha256"))
            raise CaseError(sfile, sline, format_loc((*loc, "sha256")), f"checksum mismatch: file has {digest}")
        try:
            rows = read_table(path, spec.sheet, text=spec.measured is not None)
        except Exception as exc:  # pandas/openpyxl raise many types; all mean "cannot read this table"
            raise CaseError(file, line, format_loc((*loc, fld)), f"cannot read {path.name}: {exc}") from None
        prov |= {"path": str(path), "sha256": digest}
    rows = [{spec.columns.get(k, k): v for k, v in r.items()} for r in rows]
    try:
        rows = rowfilter.select(rows, spec.where)
    except rowfilter.RowFilterError as exc:
        file, line = where((*loc, "where"))
        raise CaseError(file, line, format_loc((*loc, "where")), str(exc)) from None
    prov["rows"] = len(rows)
    return rows, prov, None


def _validate_expect(case: Case, located: Located, loc: Loc) -> list[AssertionSpec]:
    out: list[AssertionSpec] = []
    ids: set[str] = set()
    assertions = load_assertions()
    for i, raw in enumerate(case.expect):
        aloc = (*loc, "expect", i)
        kind = raw.get("type")
        if kind not in assertions:
            file, line = located.where((*aloc, "type"))
            raise CaseError(file, line, format_loc((*aloc, "type")),
                            f"unknown assertion type {kind!r}{_did_you_mean(str(kind), list(assertions))}; known: {', '.join(sorted(assertions))}")
        raw = {"criterion": case.criterion, **raw}
        if "id" not in raw or raw["id"] is None:
            raw["id"] = f"{kind}#{i}"
        try:
            spec = assertions[kind].model_validate(raw)
        except ValidationError as exc:
            raise _pydantic_error(exc, located, aloc) from None
        if spec.id in ids:
            file, line = located.where((*aloc, "id"))
            raise CaseError(file, line, format_loc((*aloc, "id")), f"duplicate assertion id {spec.id!r}")
        ids.add(str(spec.id))
        out.append(spec)
    if case.golden and not any(s.type == "golden_match" for s in out):
        # golden drift is its own gate rule, not evidence for the case's acceptance criterion
        out.append(assertions["golden_match"].model_validate({"type": "golden_match", "id": "golden"}))
    if case.waiver and case.waiver.assertions:
        unknown = [a for a in case.waiver.assertions if a not in ids and a != "golden"]
        if unknown:
            file, line = located.where((*loc, "waiver", "assertions"))
            raise CaseError(file, line, format_loc((*loc, "waiver", "assertions")), f"no assertion with id {unknown}")
    return out


def _build_case(raw: dict[str, Any], located: Located, loc: Loc, path: Path, cases_root: Path) -> LoadedCase:
    kinds = load_kinds()
    try:
        case = Case.model_validate(raw)
    except ValidationError as exc:
        raise _pydantic_error(exc, located, loc) from None
    file, line = located.where(loc)
    if case.kind not in kinds:
        kfile, kline = located.where((*loc, "kind"))
        raise CaseError(kfile, kline, format_loc((*loc, "kind")),
                        f"unknown kind {case.kind!r}{_did_you_mean(case.kind, list(kinds))}; known: {', '.join(sorted(kinds))}")
    if case.waiver and case.waiver.expires < today():
        wfile, wline = located.where((*loc, "waiver", "expires"))
        raise CaseError(wfile, wline, format_loc((*loc, "waiver", "expires")),
                        f"waiver expired on {case.waiver.expires} (owner {case.waiver.owner}, {case.waiver.issue}): fix the case or renew the waiver")
    expect = _validate_expect(case, located, loc)
    rows: list[dict[str, Any]] = []
    prov: dict[str, Any] = {}
    unavailable: str | None = None
    if case.data:
        rows, prov, unavailable = load_data(case.data, path, cases_root, located, (*loc, "data"))
    kind = kinds[case.kind]
    if case.data and case.data.per_row:
        if case.matrix:
            raise CaseError(file, line, format_loc((*loc, "matrix")), "matrix and data.per_row cannot be combined")
        col = case.data.per_row
        if rows and col not in rows[0]:
            pfile, pline = located.where((*loc, "data", "per_row"))
            raise CaseError(pfile, pline, format_loc((*loc, "data", "per_row")), f"column {col!r} not in the data")
        specs: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = (
            [(str(r[col]), {}, [r]) for r in rows] or [("unavailable", {}, [])])
    else:
        check_matrix(case.matrix, located, loc)
        specs = [(pid, over, rows) for pid, over in expand_matrix(case.matrix)]
    if len(specs) > MAX_POINTS:
        raise CaseError(file, line, format_loc((*loc, "data")), f"{len(specs):,} data rows: more than {MAX_POINTS:,} items per case")
    points, seen = [], set()
    for pid, over, prow in specs:
        if pid in seen:
            raise CaseError(file, line, format_loc((*loc, "matrix")), f"duplicate point id {pid!r}")
        if len(pid) > MAX_ID_CHARS or len(f"{case.id}__{pid}.yaml".encode()) > 2 * MAX_ID_CHARS:
            raise CaseError(file, line, format_loc((*loc, "matrix")),
                            f"point id {pid[:40]!r}... is {len(pid):,} characters: at most {MAX_ID_CHARS} (it becomes a file name)")
        seen.add(pid)
        params = dict(case.params)
        for dotted, value in over.items():
            params = _set_dotted(params, dotted, value)
        try:
            model = kind.params_model.model_validate(params)
        except ValidationError as exc:
            err = _pydantic_error(exc, located, (*loc, "params"))
            if over:
                err = CaseError(err.file, err.line, err.field, f"{err.rule} (matrix point {pid!r})")
            raise err from None
        points.append(Point(pid, model, prow, over, unavailable))
    # an expectation a file's ``defaults:`` set points at the defaults' line, not at the case that inherited it
    inherited = loc[:1] == ("cases",) and (*loc, "expect") not in located.key_lines
    expect_loc = ("defaults", "expect") if inherited and ("defaults", "expect") in located.key_lines else (*loc, "expect")
    lines = [located.where((*expect_loc, i))[1] for i in range(len(expect))]
    if case.waiver and case.waiver.points:
        unknown = sorted(set(case.waiver.points) - {p.id for p in points})
        if unknown and not any(p.unavailable for p in points):
            wfile, wline = located.where((*loc, "waiver", "points"))
            raise CaseError(wfile, wline, format_loc((*loc, "waiver", "points")), f"no point/row with id {unknown}")
    return LoadedCase(case, expect, points, path, line or 1, prov, lines)


def load_case_file(path: Path, cases_root: Path | None = None) -> LoadedFile:
    """Load one case file. File-level problems raise ``CaseError``; per-case ones are collected in ``errors``."""
    cases_root = cases_root or find_cases_root(path)
    if path.is_symlink():  # lint and the run refuse it alike (a link may point anywhere)
        raise CaseError(path, None, "<file>", f"case file is a symbolic link (to {os.readlink(path)}): "
                        "copy the file into validation_cases/ or use ref: to share content")
    located = load_located(path, cases_root)
    data = located.data
    digest = sha256_file(path)
    if isinstance(data, dict) and "cases" not in data and "id" in data:
        raws: list[tuple[Any, Loc]] = [(data, ())]
    else:
        try:
            model = CaseFileModel.model_validate(data)
        except ValidationError as exc:
            raise _pydantic_error(exc, located, ()) from None
        raws = []
        for i, raw in enumerate(model.cases):
            merged = deep_merge(model.defaults, raw) if isinstance(raw, dict) else raw
            if isinstance(raw, dict) and "tags" in model.defaults and "tags" in raw:
                merged["tags"] = [*model.defaults["tags"], *raw["tags"]]
            raws.append((merged, ("cases", i)))
    cases, errors, ids = [], [], set()
    for raw, loc in raws:
        cid = str(raw.get("id", f"case{loc[-1] if loc else 0}")) if isinstance(raw, dict) else "case"
        try:
            if not isinstance(raw, dict):
                file, line = located.where(loc)
                raise CaseError(file, line, format_loc(loc), "a case must be a mapping")
            if cid in ids:
                file, line = located.where((*loc, "id"))
                raise CaseError(file, line, format_loc((*loc, "id")), f"duplicate case id {cid!r}")
            ids.add(cid)
            cases.append(_build_case(raw, located, loc, path, cases_root))
        except CaseError as exc:
            errors.append((cid, exc))
    return LoadedFile(path, digest, cases, errors)


def iter_case_files(root: Path) -> list[Path]:
    """Every ``*.case.yaml`` under ``root``, sorted (deterministic for xdist)."""
    return sorted(p for p in root.rglob(f"*{CASE_SUFFIX}") if p.is_file())


def case_json_schema() -> dict[str, Any]:
    """JSON Schema of a case file: a single case or ``{schema_version, defaults, cases}``."""
    kinds = load_kinds()
    assertions = load_assertions()
    case = Case.model_json_schema(ref_template="#/$defs/{model}")
    defs = case.pop("$defs", {})
    variants = []
    for name, cls in sorted(assertions.items()):
        sch = cls.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(sch.pop("$defs", {}))
        defs[f"assert_{name}"] = sch
        variants.append({"$ref": f"#/$defs/assert_{name}"})
    case["properties"]["expect"]["items"] = {"oneOf": variants}
    case["properties"]["kind"] = {"enum": sorted(kinds), "title": "Kind", "type": "string"}
    params = []
    for name, kind in sorted(kinds.items()):
        sch = kind.params_model.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(sch.pop("$defs", {}))
        defs[f"params_{name}"] = sch
        params.append({"$ref": f"#/$defs/params_{name}"})
    case["properties"]["params"] = {"anyOf": params, "description": "kind-specific parameters"}
    defs["Case"] = case
    partial = {k: v for k, v in case.items() if k != "required"}
    partial["description"] = "A case inside a file with defaults: required fields may come from defaults."
    defs["CasePartial"] = partial
    many = CaseFileModel.model_json_schema(ref_template="#/$defs/{model}")
    many["properties"]["cases"]["items"] = {"$ref": "#/$defs/CasePartial"}
    many["properties"]["defaults"] = {"$ref": "#/$defs/CasePartial"}
    defs["CaseFile"] = many
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "ndval validation case file",
            "oneOf": [{"$ref": "#/$defs/Case"}, {"$ref": "#/$defs/CaseFile"}], "$defs": defs}


def golden_uses(cases: list[LoadedCase], cases_root: Path, golden_root: Path) -> list[golden.GoldenUse]:
    """The golden file of every item of ``cases`` that checks one (``golden_match``), with its location."""
    return [golden.GoldenUse(golden.golden_path(golden_root, cases_root, lc.file, lc.case.id, pt.id),
                             item_location(lc, pt.id))
            for lc in cases if any(s.type == "golden_match" for s in lc.expect) for pt in lc.points]


def item_location(lc: LoadedCase, point_id: str) -> str:
    """``file:line case 'id'[point]``: where a case item is defined."""
    return f"{lc.file}:{lc.line} case '{lc.case.id}'" + (f"[{point_id}]" if point_id else "")

