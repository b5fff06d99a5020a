"""``docs/architecture.md`` stays true: every package folder its tables name exists, and every package of
the tree (a folder with ``__init__.py`` under ``estimator``, ``analyzer`` or ``ndval``) is named there."""

from __future__ import annotations

import re

from tests.structure import graph

DOC = graph.ROOT / "docs" / "architecture.md"
#: a package named in a table row's first cell: `estimator/perf`
_ROW = re.compile(r"^\| `([a-z_]+(?:/[a-z_]+)*)` \|", re.M)


def _named() -> set[str]:
    return set(_ROW.findall(DOC.read_text(encoding="utf-8")))


def _packages() -> set[str]:
    return {str(p.parent.relative_to(graph.ROOT)) for top in ("estimator", "analyzer", "ndval")
            for p in (graph.ROOT / top).rglob("__init__.py")}


def test_every_named_package_exists() -> None:
    named = {n for n in _named() if "/" in n or n in {"ndval", "estimator", "analyzer"}}
    missing = sorted(n for n in named if not (graph.ROOT / n / "__init__.py").is_file())
    assert not missing, f"docs/architecture.md names packages that do not exist: {missing}"


def test_every_package_is_named() -> None:
    unnamed = sorted(_packages() - _named())
    assert not unnamed, f"packages missing from docs/architecture.md: {unnamed}"


def test_the_homes_it_names_exist() -> None:
    homes = re.findall(r"\| `((?:estimator|analyzer|ndval)/[\w/]+\.(?:py|yaml))`", DOC.read_text(encoding="utf-8"))
    assert homes and not [h for h in homes if not (graph.ROOT / h).is_file()]
