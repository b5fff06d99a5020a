"""SHA-256 digests of bytes, text and files (hex unless stated)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ndval.core.units import BYTES_PER_MIB

_CHUNK = int(BYTES_PER_MIB)


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    """Hex SHA-256 of ``text`` encoded as UTF-8."""
    return sha256_bytes(text.encode("utf-8"))


def first_byte_of_sha256(text: str) -> int:
    """First byte (0-255) of the SHA-256 of ``text`` (UTF-8): a stable, order-free hash bucket."""
    return hashlib.sha256(text.encode("utf-8")).digest()[0]


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of the file at ``path``, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
