"""The document outputs of ``analyze`` and ``compare`` (``--json``, ``--markdown``, ``--html``): written through
the one output writer, ``-`` meaning stdout; the console lines go to stderr whenever a document does."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from ndval.core.atomic import is_stdout, write_output

#: (output option's value or None, the function rendering the document from the result)
Output = tuple[str | None, Callable[[Any], str]]


def console_for(outputs: Sequence[Output]) -> TextIO:
    """stderr when a document goes to stdout (stdout then carries the document only), else stdout."""
    return sys.stderr if any(is_stdout(out) for out, _ in outputs) else sys.stdout


def write_documents(command: str, outputs: Sequence[Output], result: Any, console: TextIO) -> bool:
    """Write each requested document of ``result``; False (after one error line naming the output) when one
    cannot be written."""
    for out, render in outputs:
        if out is None:
            continue
        try:
            where = write_output(out, render(result))
        except OSError as exc:
            print(f"ndval {command}: error: {out}: cannot write ({exc})", file=sys.stderr)
            return False
        print(f"wrote {where}", file=console)
    return True
