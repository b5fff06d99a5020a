"""Mutated case files: only ``CaseError`` (file:line), within the per-input time and memory bounds."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ndval.core.yamlsrc import CaseError
from ndval.harness.cases import load_case_file
from tests.fuzz.conftest import PROFILE
from tests.fuzz.limits import bounded, only
from tests.harness.conftest import synthetic_case

BASE = synthetic_case("fuzz") + "params: {}\nmatrix: {x: [1, 2]}\n"
#: fragments a hostile or careless author might paste in
FRAGMENTS = ["&a [1, 2]", "*a", "<<: *a", "!!python/object:os.system", "? [a, b]\n: 1", "\x00", "2024-02-30",
             "[" * 200, "]" * 200, "{", "}", ": :", "- - -", "\t", "\ufeff", "'", '"', "ref: ../../etc/passwd",
             "ref: models/nope.yaml", "matrix: {x: []}", "id: " + "x" * 300, "!!binary ####", "%YAML 1.1\n---",
             "...", "---\n", "1e999", ".nan", "-.inf", "~"]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    text = BASE.encode()
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "fragment"]))
        if op == "insert":
            text = text[:pos] + draw(st.binary(min_size=1, max_size=8)) + text[pos:]
        elif op == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 40)):]
        elif op == "replace":
            text = text[:pos] + draw(st.binary(min_size=1, max_size=4)) + text[pos + 4:]
        else:
            text = text[:pos] + draw(st.sampled_from(FRAGMENTS)).encode() + text[pos:]
    return text


@settings(settings.get_profile(PROFILE))
@given(data=mutated())
def test_mutated_case_file_is_loaded_or_a_case_error(tmp_path_factory, data: bytes) -> None:
    root = tmp_path_factory.mktemp("validation_cases")
    path = root / "fuzz.case.yaml"
    path.write_bytes(data)
    with bounded(f"loading {data[:60]!r}"):
        exc = only((CaseError,), lambda: load_case_file(path, root))
    if isinstance(exc, CaseError):
        assert exc.file.endswith(".case.yaml") or Path(exc.file).is_relative_to(root)
