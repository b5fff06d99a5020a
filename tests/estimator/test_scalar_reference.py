"""The scalar path reproduces its stored outputs (tests/estimator/scalar_reference.py) to 1e-12 relative:
speed work (layers of one kind priced once, no deep copies) changes no number."""

from __future__ import annotations

import json

import pytest

from tests.estimator import scalar_reference as ref

STORED = json.loads(ref.DATA.read_text(encoding="utf-8"))
REL = 1e-12


def test_reference_covers_the_examples_profiles_and_rejections() -> None:
    configs = STORED["configs"]
    assert {c["example"] for c in configs} == {name for name, _, _ in ref.CASES}
    assert {c["overrides"].get("profile") for c in configs} >= set(ref.PROFILES)
    assert any("error" in c["outputs"] for c in configs)
    assert sum("error" not in c["outputs"] for c in configs) >= 90


def test_same_inputs_as_stored() -> None:
    """The stored set is the one the module enumerates today (a changed space needs a deliberate --write)."""
    assert [[n, o] for n, o in ref.reference_inputs()] == [[c["example"], c["overrides"]] for c in STORED["configs"]]


@pytest.mark.parametrize("index", range(len(STORED["configs"])))
def test_scalar_outputs_match_stored(index: int) -> None:
    case = STORED["configs"][index]
    got = ref._encode(ref.outputs(case["example"], case["overrides"]))
    assert ref.close(got, case["outputs"], REL) == []
