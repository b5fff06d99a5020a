"""What follows a trace's JSON document: nothing, or an error of the file.

Two JSON documents in one file (``cat a.json b.json``, or two gzip members, which a gzip reader
decompresses as one stream) were merged into one rank with no warning, and bytes appended after the
document were ignored. Now the text after the document's end is described in words and the file is
refused: "2 traces in one file" when complete documents follow, else "data after the JSON document".
"""

from __future__ import annotations

import json
from typing import Any

_DECODER = json.JSONDecoder()


def object_rest(text: bytes) -> tuple[dict[str, Any] | None, int]:
    """The top-level keys of ``{`` + ``text`` (the rest of a Kineto object after ``traceEvents``) and the bytes
    of ``text`` they span (0 when they do not decode: nothing is then said about what follows)."""
    s = "{" + text.decode("utf-8", errors="replace")
    try:
        obj, end = _DECODER.raw_decode(s)
    except ValueError:
        return None, 0
    return (obj if isinstance(obj, dict) else None), len(s[1:end].encode("utf-8", errors="replace"))


def _documents(s: str) -> tuple[int, int]:
    """(complete JSON documents at the start of ``s``, characters they span with the blanks between)."""
    n, pos = 0, 0
    while pos < len(s):
        try:
            _, end = _DECODER.raw_decode(s, pos)
        except ValueError:
            break
        n, pos = n + 1, end
        while pos < len(s) and s[pos].isspace():
            pos += 1
    return n, pos


def describe(text: bytes, plain: bool = True) -> str:
    """Why ``text`` (stripped bytes after the document) makes the file an error; empty when there is none."""
    if not text:
        return ""
    how = "one after another" if plain else "one after another, or gzip members concatenated"
    s = text.decode("utf-8", errors="replace")
    n, pos = _documents(s)
    if n and pos >= len(s):
        return f"{1 + n} traces in one file (JSON documents {how}): give one trace per file"
    if n or text[:1] in (b"{", b"["):
        return (f"at least {1 + max(n, 1)} traces in one file (a JSON document starts after the first ends, "
                f"{len(text):,} bytes follow): give one trace per file")
    return (f"data after the JSON document ({len(text):,} bytes, starting {text[:32]!r}): the file is not one "
            "trace (appended output, or a damaged file)")
