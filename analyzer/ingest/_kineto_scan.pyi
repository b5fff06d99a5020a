"""Type stub of the C extension ``_kineto_scan.c`` (see its header comment and ``native.py``)."""

from typing import Any

def scan(body: bytes | bytearray | memoryview, max_depth: int, phases: bytes, dtype_bytes: dict[str, int], /
         ) -> tuple[int, list[tuple[Any, ...]], bytes, bytes, bytes, bytearray, bytes, bytes, bytes,
                    list[tuple[int, int]]] | str: ...
