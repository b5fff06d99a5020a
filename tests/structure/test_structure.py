"""Structure of the source tree, read with ``ast`` (nothing is imported): layering, cycles, sizes, one
definition per concept. Each rule names the offenders."""

from __future__ import annotations

import ast
import re

import numpy as np
import pytest

from tests.structure import graph

#: which of our packages each package may import (ARCHITECTURE: estimator and analyzer are independent;
#: the harness drives both; ndval.core is below all three)
ALLOWED = {"ndval": set(), "ndval.core": set(), "estimator": {"ndval.core"}, "analyzer": {"ndval.core"},
           "ndval.harness": {"ndval.core", "estimator", "analyzer", "ndval.service"},
           "ndval.service": {"ndval.core", "analyzer"}}
MAX_MODULE_LINES = 500
#: modules still over the limit while they are being split (remove an entry when its split lands)
SIZE_EXCEPTIONS: set[str] = set()
MAX_FUNCTION_P90 = 30


def test_the_tree_is_found() -> None:
    mods = graph.modules()
    assert {"ndval", "ndval.core.stats", "estimator.inputs.derive", "analyzer.analysis", "ndval.harness.plugin",
            "ndval.service.app"} <= set(mods)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_layering(package: str) -> None:
    bad = sorted({(m, imp.target) for m in graph.modules() if graph.package_of(m) == package
                  for imp in graph.imports(m)
                  if graph.package_of(imp.target) in ALLOWED and graph.package_of(imp.target) != package
                  and graph.package_of(imp.target) not in ALLOWED[package]})
    assert not bad, f"{package} may import only {sorted(ALLOWED[package]) or 'none of ours'}; found {bad}"


def test_no_import_cycle_at_import_time() -> None:
    assert graph.cycles(graph.internal_graph(top_level_only=True)) == []


def test_no_import_cycle_even_through_deferred_imports() -> None:
    """An import inside a function still ties two modules together; TYPE_CHECKING imports do not."""
    assert graph.cycles(graph.internal_graph(top_level_only=False)) == []


def test_cycle_finder_finds_a_planted_cycle() -> None:
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert graph.cycles(g) == [["a", "b", "c"]]


def test_no_module_over_the_size_limit() -> None:
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in graph.modules().items()}
    over = {m: n for m, n in sizes.items() if n > MAX_MODULE_LINES and m not in SIZE_EXCEPTIONS}
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"
    stale = {m for m in SIZE_EXCEPTIONS if sizes.get(m, 0) <= MAX_MODULE_LINES}
    assert not stale, f"remove from SIZE_EXCEPTIONS (split or gone): {stale}"


def test_functions_are_short() -> None:
    lengths = graph.function_lengths()
    p90 = float(np.percentile([n for _, n in lengths], 90))
    longest = sorted(lengths, key=lambda x: -x[1])[:5]
    assert p90 <= MAX_FUNCTION_P90, f"function length p90 {p90} > {MAX_FUNCTION_P90}; longest {longest}"


def _defs(name: str) -> list[str]:
    return [m for m in graph.modules() for node in ast.walk(graph.tree(m))
            if isinstance(node, ast.FunctionDef) and node.name == name]


@pytest.mark.parametrize("name,home", [
    ("mape", "ndval.core.stats"), ("spearman", "ndval.core.stats"), ("pearson", "ndval.core.stats"),
    ("fisher_ci", "ndval.core.stats"), ("did_you_mean", "ndval.core.yamlsrc"), ("deep_merge", "ndval.core.yamlsrc"),
    ("sha256_file", "ndval.core.hashing"), ("markdown_table", "ndval.core.render"), ("html_table", "ndval.core.render"),
    ("expert_groups", "estimator.inputs.derive"), ("write_text", "ndval.core.atomic"),
])
def test_one_definition_per_formula(name: str, home: str) -> None:
    assert _defs(name) == [home]


#: source patterns that define a concept; each may appear in its home module only
_ONE_HOME = {
    "bytes per MiB": (re.compile(r"^\s*\w+\s*=\s*(float\()?\s*(1\s*<<\s*20|2\s*\*\*\s*20|1024(\.0)?\s*\*\s*1024(\.0)?)\b",
                                 re.M),
                      "ndval/core/units.py"),
    "MiB per GiB": (re.compile(r"^\s*\w*(MIB|GIB|MB|GB)\w*\s*=\s*1024(\.0)?\s*$", re.M | re.I), "ndval/core/units.py"),
    "SHA-256": (re.compile(r"hashlib\.sha256\("), "ndval/core/hashing.py"),
    "difflib closest match": (re.compile(r"get_close_matches\("), "ndval/core/yamlsrc.py"),
    "Spearman/Pearson by scipy": (re.compile(r"\b(spearmanr|pearsonr)\("), "ndval/core/stats.py"),
    "HTML table by hand": (re.compile(r"[\"']<table>"), "ndval/core/templates"),
}


@pytest.mark.parametrize("concept", sorted(_ONE_HOME))
def test_one_home_per_concept(concept: str) -> None:
    pattern, home = _ONE_HOME[concept]
    hits = sorted({str(p.relative_to(graph.ROOT)) for p in graph.modules().values()
                   if pattern.search(p.read_text(encoding="utf-8"))})
    assert all(h.startswith(home) for h in hits), f"{concept} outside {home}: {hits}"


#: modules whose judgement numbers (score weights, gain factors, the priority formula, comparison rules) live
#: in analyzer/thresholds_default.yaml, with unit, rationale and source: none may bind a number at module level
_NUMBERS_IN_YAML = ("analyzer.bottleneck", "analyzer.gains", "analyzer.recommend", "analyzer.rootcause",
                    "analyzer.compare.metrics", "analyzer.compare.verdicts", "analyzer.compare.comparability",
                    "analyzer.compare.comparison", "analyzer.advisor.rules_env", "analyzer.advisor.rules_comm",
                    "analyzer.advisor.rules_compute", "analyzer.advisor.rules_schedule", "analyzer.hta_breakdowns")


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand)
    return isinstance(node, ast.Tuple) and any(_is_number(e) for e in node.elts)


def test_judgement_numbers_live_in_the_thresholds_file() -> None:
    bound = [(m, node.lineno) for m in _NUMBERS_IN_YAML for node in graph.tree(m).body
             if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and _is_number(node.value)]
    assert not bound, f"numbers bound in code, move them to analyzer/thresholds_default.yaml (parameters): {bound}"


def test_every_parameter_is_used() -> None:
    """A parameter of the thresholds file that no analyzer module names would be a dead copy."""
    import yaml

    params = yaml.safe_load((graph.ROOT / "analyzer" / "thresholds_default.yaml").read_text(encoding="utf-8"))
    text = "\n".join(p.read_text(encoding="utf-8") for m, p in graph.modules().items() if m.startswith("analyzer"))
    unused = sorted(k for k in params["parameters"] if f'"{k}"' not in text)
    assert not unused, f"parameters no analyzer module reads: {unused}"
