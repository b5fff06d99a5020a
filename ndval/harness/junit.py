"""Tidy the JUnit XML pytest wrote for the case items: the reason as the failure message, a classname
without the ``.case.yaml`` suffix.

pytest's junitxml takes the failure message from the item's failure text (for a case: its header)
and the classname from the node id (``validation_cases.recorded.x.case.yaml``). CI dashboards show
exactly those two, so after pytest wrote the file the controller rewrites them from the records.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from _pytest.junitxml import mangle_test_address

from ndval.core import atomic

SUFFIX = ".case.yaml"


def reason_of(rec: dict[str, Any]) -> str:
    """What went wrong, in one line: the failing assertions' messages, else the case's message."""
    failing = [a for a in rec.get("assertions", []) if not a.get("passed") and not a.get("waived")]
    if failing:
        return "; ".join(f"{a['id']}: {a.get('message') or 'failed'}" for a in failing)[:2000]
    return (rec.get("message") or rec.get("status") or "")[:2000]


def _key(nodeid: str) -> tuple[str, str]:
    names = mangle_test_address(nodeid)
    return ".".join(names[:-1]), names[-1]


def rewrite(path: Path, records: dict[str, dict[str, Any]]) -> int:
    """Rewrite ``path`` in place; returns how many test cases were touched."""
    tree = ET.parse(path)
    by_key = {_key(nodeid): rec for nodeid, rec in records.items()}
    touched = 0
    for case in tree.iter("testcase"):
        rec = by_key.get((case.get("classname", ""), case.get("name", "")))
        if rec is None:
            continue
        touched += 1
        case.set("classname", case.get("classname", "").removesuffix(SUFFIX))
        for child in case:
            if child.tag in ("failure", "error"):
                child.set("message", reason_of(rec))
    atomic.write_bytes(path, ET.tostring(tree.getroot(), encoding="utf-8", xml_declaration=True))
    return touched
