"""YAML loading that remembers where every value came from (file and 1-based line).

A case error must name the file, the line and the field, so the loader composes the YAML node
tree itself (PyYAML safe loader) and records ``path tuple -> (file, line)`` for every value.
``{ref: models/x.yaml, ...}`` mappings are replaced by the referenced file (confined to the cases
tree); other keys beside ``ref`` override the referenced values (deep merge). ``did_you_mean``
gives the hint for a misspelt name.
"""

from __future__ import annotations

import difflib
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ndval.core.units import MIB_BYTES

Loc = tuple[Any, ...]

#: PyYAML's safe loader on libyaml when it is built in (same safe tags, ~10x faster), else the Python one
FAST_SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Yaml12Loader(yaml.SafeLoader):
    """The safe loader with the YAML 1.2 core schema's scalars (https://yaml.org/spec/1.2.2/#1032-tag-resolution).

    PyYAML resolves YAML 1.1 scalars: ``010`` is octal 8, ``1:0`` sexagesimal 60, ``yes``/``on`` true. Here only
    ``true``/``false`` are booleans, integers are decimal (``010`` = 10), ``0o17`` or ``0x1f``, floats have a digit
    or ``.inf``/``.nan``, ``null``/``~``/empty is null, and everything else (``yes``, ``1:0``, dates) is a string.
    """


Yaml12Loader.yaml_implicit_resolvers = {}
for _tag, _regex, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     "-+0123456789."),
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
):
    Yaml12Loader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_regex), list(_first))


def _int12(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = str(node.value)
    base = 16 if text.startswith("0x") else 8 if text.startswith("0o") else 10
    return int(text[2:] if base != 10 else text, base)


def _float12(loader: yaml.SafeLoader, node: yaml.Node) -> float:
    text = str(node.value).lower()
    return float(text.replace(".inf", "inf").replace(".nan", "nan"))


Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _int12)
Yaml12Loader.add_constructor("tag:yaml.org,2002:float", _float12)
Yaml12Loader.add_constructor("tag:yaml.org,2002:bool", lambda _l, n: str(n.value).lower() == "true")


class CaseError(Exception):
    """A problem with a case file: names the file, the line, the field and the rule."""

    def __init__(self, file: Path | str, line: int | None, field_path: str, rule: str) -> None:
        self.file = str(file)
        self.line = line
        self.field = field_path
        self.rule = rule
        super().__init__(self.render())

    def render(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: field '{self.field}': {self.rule}"


@dataclass
class Located:
    """Plain YAML data plus the source position of every value, keyed by its path tuple."""

    data: Any
    lines: dict[Loc, tuple[str, int]] = field(default_factory=dict)
    files: set[str] = field(default_factory=set)
    #: 1-based line of each mapping key (``lines`` holds where the value starts, often the next line)
    key_lines: dict[Loc, int] = field(default_factory=dict)

    def where(self, loc: Loc) -> tuple[str, int | None]:
        """(file, line) of the value at ``loc`` or of its nearest ancestor that has one."""
        for n in range(len(loc), -1, -1):
            hit = self.lines.get(tuple(loc[:n]))
            if hit:
                return hit
        return (next(iter(sorted(self.files)), "?"), None)


def format_loc(loc: Loc) -> str:
    """``('cases', 0, 'expect', 2, 'lo')`` -> ``cases[0].expect[2].lo``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<root>"


def confine(path: Path, root: Path, file: str, line: int | None, field_path: str) -> Path:
    """Resolve ``path`` and require it inside ``root`` (no ``..`` escapes, no absolute paths out)."""
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise CaseError(file, line, field_path, f"path {str(path)!r} is outside the cases tree {root}")
    return resolved


_KEY_LINE = re.compile(r"^(?P<indent>[ ]*)(?P<dash>-[ ]+)?(?P<key>[A-Za-z_][\w.+-]*)[ ]*:(?:\s|$)")


def field_at_line(text: str, line: int) -> str | None:
    """Path (``cases[0].params.x``) of the block-mapping key in force at 1-based ``line``, or None.

    Indentation-based, for messages about text that does not parse (no node tree exists then):
    a ``- key:`` line opens the next item of the sequence under the enclosing key.
    """
    stack: list[tuple[int, Any]] = []
    items: dict[tuple[Any, ...], int] = {}
    for raw in text.splitlines()[:line]:
        m = _KEY_LINE.match(raw)
        if not m:
            continue
        indent = len(m["indent"])
        if m["dash"]:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parent = tuple(k for _, k in stack)
            items[parent] = items.get(parent, -1) + 1
            stack.append((indent, items[parent]))
            indent += len(m["dash"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, m["key"]))
    return format_loc(tuple(k for _, k in stack)) if stack else None


def _invalid_yaml(exc: yaml.MarkedYAMLError, text: str, file: str, loc: Loc) -> CaseError:
    """``CaseError`` for text that does not parse: the line where the broken construct starts, the key there."""
    start = exc.context_mark or exc.problem_mark
    line = start.line + 1 if start else None
    problem_line = exc.problem_mark.line + 1 if exc.problem_mark else None
    where = f"{exc.context} (line {line}): " if exc.context and exc.context_mark else ""
    at = f" at line {problem_line}" if problem_line and problem_line != line else ""
    key = field_at_line(text, line) if line else None
    field_path = ".".join(p for p in (format_loc(loc) if loc else "", key or "") if p) or "<root>"
    return CaseError(file, line, field_path, f"invalid YAML: {where}{exc.problem or exc}{at}")


#: limits of one case load (the file and every file it references), each a ``CaseError`` when exceeded:
#: values built (aliases count once per use, so a "billion laughs" file stops here, not in swap);
#: nesting depth of mappings/sequences; characters of a mapping key; characters of a scalar; file bytes.
MAX_NODES = 200_000
MAX_DEPTH = 64
MAX_KEY_CHARS = 200
MAX_SCALAR_CHARS = 100_000
MAX_FILE_BYTES = 16 * MIB_BYTES
_MERGE_TAG = "tag:yaml.org,2002:merge"


def _check_depth(text: str, file: str, loc: Loc) -> None:
    """Refuse nesting deeper than ``MAX_DEPTH`` from the parser's event stream (iterative: the composer
    recurses once per level and would hit Python's recursion limit first, slowly)."""
    depth = 0
    try:  # libyaml when present (fast); its syntax errors are left to the composer, which words them for us
        for event in yaml.parse(text, Loader=FAST_SAFE_LOADER):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    line = event.start_mark.line + 1 if event.start_mark else None
                    raise CaseError(file, line, format_loc(loc), f"nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" in str(exc.problem):
            line = exc.problem_mark.line + 1 if exc.problem_mark else None
            raise CaseError(file, line, format_loc(loc), f"nested deeper than {MAX_DEPTH} levels") from None
    except yaml.YAMLError:
        pass


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Values the node tree holds once every alias is expanded (memoised per node: linear in the file)."""
    key = id(node)
    if key not in memo:
        memo[key] = 1  # a recursive alias counts once instead of looping
        if isinstance(node, yaml.MappingNode):
            memo[key] = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            memo[key] = 1 + sum(_expanded_size(v, memo) for v in node.value)
    return memo[key]


def _reader_line(exc: yaml.YAMLError, text: str) -> int | None:
    """1-based line of a ``ReaderError`` (it gives a character position, not a mark)."""
    pos = getattr(exc, "position", None)
    return text.count("\n", 0, pos) + 1 if isinstance(pos, int) else None


class _Builder:
    def __init__(self, cases_root: Path | None, loader: type[yaml.SafeLoader] = yaml.SafeLoader) -> None:
        self.cases_root = cases_root  # None: ``ref`` keys stay plain data
        self.located = Located(data=None)
        self._loader = loader
        self._scalar = loader("")
        self._nodes = 0

    def load(self, path: Path, loc: Loc = (), stack: tuple[str, ...] = ()) -> Any:
        file = str(path)
        self.located.files.add(file)
        try:
            text = read_regular_text(path, MAX_FILE_BYTES)
        except UnicodeDecodeError as exc:
            raise CaseError(file, None, format_loc(loc), f"not UTF-8 text (byte {exc.start}: {exc.reason})") from None
        except ValueError as exc:
            raise CaseError(file, None, format_loc(loc), str(exc)) from None
        except OSError as exc:
            raise CaseError(file, None, format_loc(loc), f"cannot read: {exc}") from None
        return self.load_text(text, file, loc, (*stack, str(path.resolve())))

    def load_text(self, text: str, file: str, loc: Loc = (), stack: tuple[str, ...] = ()) -> Any:
        """Compose and build ``text`` (named ``file`` in errors) under the limits of this module."""
        try:
            _check_depth(text, file, loc)
            node = yaml.compose(text, Loader=self._loader)
        except yaml.MarkedYAMLError as exc:
            raise _invalid_yaml(exc, text, file, loc) from None
        except yaml.YAMLError as exc:  # ReaderError: NUL and other characters YAML forbids
            raise CaseError(file, _reader_line(exc, text), format_loc(loc), f"invalid YAML: {str(exc).splitlines()[0]}") from None
        except RecursionError:
            raise CaseError(file, None, format_loc(loc), f"nested deeper than {MAX_DEPTH} levels") from None
        if node is None:
            return None
        self._nodes += _expanded_size(node, {})
        if self._nodes > MAX_NODES:
            raise CaseError(file, node.start_mark.line + 1, format_loc(loc),
                            f"more than {MAX_NODES:,} values once YAML aliases are expanded (each alias expands "
                            "once per use): refused")
        return self._build(node, loc, file, stack)

    def _key(self, k_node: yaml.Node, loc: Loc, file: str) -> Any:
        line = k_node.start_mark.line + 1
        if k_node.tag == _MERGE_TAG or (isinstance(k_node, yaml.ScalarNode) and k_node.value == "<<"):
            raise CaseError(file, line, format_loc(loc), "YAML merge keys (<<) are not supported; use ref:")
        if not isinstance(k_node, yaml.ScalarNode):
            raise CaseError(file, line, format_loc(loc), "a mapping key must be a plain scalar (no list/mapping keys)")
        if len(k_node.value) > MAX_KEY_CHARS:
            raise CaseError(file, line, format_loc(loc), f"key longer than {MAX_KEY_CHARS} characters")
        return self._scalar_value(k_node, loc, file)

    def _scalar_value(self, node: yaml.Node, loc: Loc, file: str) -> Any:
        line = node.start_mark.line + 1
        if isinstance(node, yaml.ScalarNode) and len(node.value) > MAX_SCALAR_CHARS:
            raise CaseError(file, line, format_loc(loc), f"value longer than {MAX_SCALAR_CHARS:,} characters")
        try:
            return self._scalar.construct_object(node, deep=True)
        except yaml.YAMLError as exc:  # unknown or unsafe tag (!!python/...), bad binary ...
            problem = getattr(exc, "problem", None) or str(exc)
            raise CaseError(file, line, format_loc(loc), f"invalid value: {problem}") from None
        except (ValueError, OverflowError) as exc:  # 2024-02-30: the timestamp resolver matched, the date is invalid
            raise CaseError(file, line, format_loc(loc), f"invalid value {node.value!r}: {exc}") from None

    def _build(self, node: yaml.Node, loc: Loc, file: str, stack: tuple[str, ...]) -> Any:
        line = node.start_mark.line + 1
        self.located.lines[loc] = (file, line)
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for k_node, v_node in node.value:
                key = self._key(k_node, loc, file)
                if key in out:
                    raise CaseError(file, k_node.start_mark.line + 1, format_loc((*loc, key)), "duplicate key")
                self.located.key_lines[(*loc, key)] = k_node.start_mark.line + 1
                out[key] = self._build(v_node, (*loc, key), file, stack)
            if "ref" in out and self.cases_root is not None:
                return self._resolve_ref(out, loc, file, line, stack, self.cases_root)
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self._build(v, (*loc, i), file, stack) for i, v in enumerate(node.value)]
        return self._scalar_value(node, loc, file)

    def _resolve_ref(
        self, mapping: dict[Any, Any], loc: Loc, file: str, line: int, stack: tuple[str, ...], root: Path
    ) -> Any:
        ref = mapping.pop("ref")
        field_path = format_loc((*loc, "ref"))
        if not isinstance(ref, str):
            raise CaseError(file, line, field_path, "ref must be a path relative to validation_cases/")
        target = confine(root / ref, root, file, line, field_path)
        if not target.is_file():
            raise CaseError(file, line, field_path, f"referenced file {ref!r} not found under {root}")
        if str(target) in stack:
            raise CaseError(file, line, field_path, f"circular ref to {ref!r}")
        overrides = mapping
        saved = {k: v for k, v in self.located.lines.items() if k[: len(loc)] == loc and len(k) > len(loc)}
        base = self.load(target, loc, stack)
        if loc and isinstance(base, dict) and list(base) == [loc[-1]]:
            base = base[loc[-1]]  # a file wrapping its content in the referencing key (model: {...})
        if overrides:
            if not isinstance(base, dict):
                raise CaseError(file, line, field_path, "keys beside ref: need the referenced file to be a mapping")
            base = deep_merge(base, overrides)
            self.located.lines.update(saved)
        return base


def deep_merge(base: dict[Any, Any], over: dict[Any, Any]) -> dict[Any, Any]:
    """Return ``base`` updated by ``over``; nested mappings merge, everything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_located(path: Path, cases_root: Path) -> Located:
    """Load ``path`` with every ``ref:`` resolved against ``cases_root``; positions kept.

    A referenced file whose only top-level key equals the referencing key is unwrapped, so
    ``model: {ref: models/x.yaml}`` works with a file that starts with ``model:``.
    """
    builder = _Builder(cases_root)
    builder.located.data = builder.load(path)
    return builder.located


def read_located(path: Path) -> Located:
    """Load ``path`` under the same limits and rules as :func:`load_located`, ``ref:`` keys left as data

    (for callers with their own include rule, such as the estimator's ``model: {ref: ...}``).
    """
    builder = _Builder(None)
    builder.located.data = builder.load(path)
    return builder.located


def read_regular_text(path: Path, max_bytes: int = MAX_FILE_BYTES) -> str:
    """UTF-8 text of ``path``, which must be a regular file of at most ``max_bytes``: a FIFO, a device such as
    ``/dev/zero`` or a folder is refused up front (``ValueError`` in words) instead of being read until killed."""
    mode = path.stat().st_mode
    if not stat.S_ISREG(mode):
        what = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
            "a folder" if stat.S_ISDIR(mode) else "not a regular file"
        raise ValueError(f"is {what}, not a regular file: refused (read from a FIFO or device it would never end)")
    with path.open("rb") as fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"file larger than {max_bytes // MIB_BYTES} MiB")
    return data.decode("utf-8")


def parse_text(text: str, name: str = "<text>", yaml12: bool = False) -> Any:
    """YAML ``text`` (named ``name`` in errors) under the limits and rules of :func:`read_located` (aliases,
    depth, key/value lengths, safe tags; ``ref`` keys left as data); ``yaml12``: YAML 1.2 core scalars
    (:class:`Yaml12Loader`). Raises ``CaseError``."""
    builder = _Builder(None, Yaml12Loader if yaml12 else yaml.SafeLoader)
    return builder.load_text(text, name)


def read_plain(path: Path) -> Any:
    """The data of the YAML file ``path`` under the limits of :func:`read_located`, positions dropped."""
    return read_located(path).data


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``name`` with a difflib ratio ≥ 0.6, else None."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """``"did you mean 'x'?"`` for the :func:`closest` candidate, else None."""
    near = closest(name, candidates)
    return f"did you mean {near!r}?" if near else None
