"""The source tree read with ``ast``: modules, their imports, their sizes and their functions."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: our packages (dotted names); the ``ndval`` namespace root itself imports nothing
PACKAGES = ("ndval.core", "estimator", "analyzer", "ndval.harness", "ndval.service")


@dataclass(frozen=True)
class Import:
    target: str
    top_level: bool  # executed at import time (not inside a function)
    typing_only: bool  # under ``if TYPE_CHECKING:`` (never executed)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def modules() -> dict[str, Path]:
    """Every module of our packages (and the ``ndval`` root): dotted name -> file."""
    found = {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg.replace(".", "/")).rglob("*.py"))}
    return {"ndval": ROOT / "ndval" / "__init__.py", **found}


@functools.cache
def tree(name: str) -> ast.Module:
    return ast.parse(modules()[name].read_text(encoding="utf-8"))


def _resolve(name: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_pkg = modules()[name].name == "__init__.py"
    base = name.split(".")[: len(name.split(".")) - node.level + (1 if is_pkg else 0)]
    return ".".join([*base, node.module] if node.module else base)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, top: bool, typing: bool = False) -> list[tuple[ast.AST, bool, bool]]:
    out: list[tuple[ast.AST, bool, bool]] = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for sub in child.body:
                out += [(sub, top, True), *_walk(sub, top, True)]
            for sub in child.orelse:
                out += [(sub, top, typing), *_walk(sub, top, typing)]
            continue
        inner = top and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        out += [(child, top, typing), *_walk(child, inner, typing)]
    return out


@functools.cache
def imports(name: str) -> tuple[Import, ...]:
    """Imports of module ``name``, resolved to the most specific module of ours (or the foreign name)."""
    known = modules()
    out = []
    for node, top, typing in _walk(tree(name), True):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, node)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        out += [Import(t, top, typing) for t in targets]
    return tuple(out)


def package_of(target: str) -> str:
    """The package of a dotted name: ``ndval.harness.cli`` -> ``ndval.harness``, ``estimator.perf`` -> ``estimator``."""
    parts = target.split(".")
    return ".".join(parts[:2]) if parts[0] == "ndval" and len(parts) > 1 else parts[0]


def internal_graph(top_level_only: bool, *, typing: bool = False) -> dict[str, set[str]]:
    """Module -> our modules it imports (importing ``a.b.c`` also runs ``a.b`` and ``a``); ``typing``:
    count the imports under ``if TYPE_CHECKING:`` too."""
    known = modules()
    graph: dict[str, set[str]] = {m: set() for m in known}
    for m in known:
        for imp in imports(m):
            if (imp.typing_only and not typing) or (top_level_only and not imp.top_level):
                continue
            t = imp.target
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != m:
                graph[m].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def function_lengths() -> list[tuple[str, int]]:
    """(qualified name, lines) of every function and method, decorators excluded."""
    out = []
    for name in modules():
        for node in ast.walk(tree(name)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out.append((f"{name}.{node.name}", (node.end_lineno or node.lineno) - node.lineno + 1))
    return out
