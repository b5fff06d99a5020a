"""Seams of the tree, read with ``ast``: no import cycle even through type-only imports, every store
that outlives a call made through the cache registry (``ndval.core.cache``), and the estimator's root
holding its public API only."""

from __future__ import annotations

import ast

from tests.structure import graph

#: the registry itself: the one module allowed a module-level store and ``functools`` caches
REGISTRY_MODULE = "ndval.core.cache"
#: module-level tables that are registrations, filled once at import by decorators, never caches
#: (name -> why); anything else empty and mutable at module level is a store and must go through the registry
REGISTRATION_TABLES = {
    ("ndval.harness.kinds", "KINDS"): "the case kinds, registered by @register_kind at import",
    ("ndval.harness.assertions.base", "REGISTRY"): "the assertion types, registered at import",
    ("ndval.harness.allure", "_WRITE_FAILURES"): "this process's failed Allure writes, a log the session reports",
}
_EMPTY_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "WeakKeyDictionary",
                "WeakValueDictionary", "Counter"}
_CACHE_DECORATORS = {"lru_cache", "cache", "cached_property"}


def test_no_import_cycle_counting_type_checking_imports() -> None:
    assert graph.cycles(graph.internal_graph(top_level_only=False, typing=True)) == []


def _is_empty_container(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Dict | ast.List | ast.Set):
        return not (node.keys if isinstance(node, ast.Dict) else node.elts)
    if isinstance(node, ast.Call) and not node.args and not node.keywords:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name in _EMPTY_CALLS
    return False


def _module_stores(name: str) -> list[tuple[str, int]]:
    found = []
    for node in graph.tree(name).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and _is_empty_container(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:  # (a name: an attribute set on a class is that class's configuration)
                if isinstance(t, ast.Name) and (name, t.id) not in REGISTRATION_TABLES:
                    found.append((t.id, node.lineno))
    return found


def test_every_module_level_store_goes_through_the_registry() -> None:
    """An empty dict/list/set (or defaultdict, deque, weak dictionary ...) bound at module level is a
    store that outlives a call: it must be made by ``ndval.core.cache.store`` (bound, key, what it
    holds; cleared by ``clear_all``, bypassed by ``NDVAL_NO_CACHE=1``)."""
    bad = {m: s for m in graph.modules() if m != REGISTRY_MODULE and (s := _module_stores(m))}
    assert not bad, f"module-level stores outside the cache registry (use ndval.core.cache.store): {bad}"


def _functools_caches(name: str) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(graph.tree(name)):
        if isinstance(node, ast.ImportFrom) and node.module == "functools":
            found += [(a.name, node.lineno) for a in node.names if a.name in {"lru_cache", "cache"}]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "functools" \
                and node.attr in {"lru_cache", "cache"}:
            found.append((f"functools.{node.attr}", node.lineno))
    return found


def test_no_functools_cache_outside_the_registry() -> None:
    """``functools.lru_cache`` / ``functools.cache`` only inside the registry (``ndval.core.cache.memoize``)."""
    bad = {m: c for m in graph.modules() if m != REGISTRY_MODULE and (c := _functools_caches(m))}
    assert not bad, f"functools caches outside the cache registry (use ndval.core.cache.memoize): {bad}"


def test_the_scans_find_planted_stores() -> None:
    planted = ast.parse("import functools\n_A = {}\nB: dict[str, int] = dict()\nC = {'x': 1}\n"
                        "@functools.lru_cache(maxsize=2)\ndef f(): ...\n")
    stores = [n for n in planted.body if isinstance(n, ast.Assign | ast.AnnAssign) and _is_empty_container(n.value)]
    assert len(stores) == 2  # the non-empty table C is a constant, not a store
    assert any(isinstance(n, ast.Attribute) and n.attr == "lru_cache" for n in ast.walk(planted))


def test_the_estimator_root_holds_only_its_api() -> None:
    root = graph.ROOT / "estimator"
    files = sorted(p.name for p in root.iterdir() if p.is_file() and not p.name.startswith("."))
    assert files == ["__init__.py", "py.typed"] or files == ["__init__.py"], files
