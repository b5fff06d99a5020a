"""Bounds on archives read as data (an ``.xlsx`` is a zip of XML parts), checked before anything is unpacked.

A 4 MB workbook can declare ~1 GB of XML (a "zip bomb"): reading it would run for minutes and fill memory.
:func:`check_zip` reads only the zip's central directory and refuses, in words naming the file, an archive
whose members would unpack to more than a bound, that has too many members, or whose compression ratio is
beyond what real spreadsheets reach; a file that is not a zip at all (a CSV named ``.xlsx``) is refused too.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from ndval.core.units import MIB_BYTES

#: most bytes the members of one archive may unpack to; most members; highest compression ratio of a member
MAX_UNCOMPRESSED_BYTES = 256 * MIB_BYTES
MAX_MEMBERS = 10_000
MAX_RATIO = 200


class ArchiveError(ValueError):
    """An archive refused before it is unpacked; the message names the file and the bound."""


def check_zip(path: Path, what: str = "archive", max_bytes: int = MAX_UNCOMPRESSED_BYTES) -> None:
    """Refuse ``path`` unless it is a zip within the bounds of this module (see the module docstring)."""
    if not zipfile.is_zipfile(path):
        raise ArchiveError(f"{path}: not a zip file, so not a valid {what} (a CSV or another format renamed?)")
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ArchiveError(f"{path}: {len(infos):,} members in the {what}, more than {MAX_MEMBERS:,}: refused")
    total = sum(i.file_size for i in infos)
    if total > max_bytes:
        raise ArchiveError(f"{path}: the {what} unpacks to {total / MIB_BYTES:,.0f} MiB, more than "
                           f"{max_bytes / MIB_BYTES:,.0f} MiB: refused before reading it")
    worst = max(infos, key=lambda i: i.file_size / max(i.compress_size, 1), default=None)
    if worst is not None and worst.file_size > MIB_BYTES and worst.file_size / max(worst.compress_size, 1) > MAX_RATIO:
        raise ArchiveError(f"{path}: member {worst.filename} is compressed {worst.file_size / max(worst.compress_size, 1):,.0f}:1, "
                           f"beyond {MAX_RATIO}:1 (a zip bomb?): refused before reading it")


def check_parquet(path: Path, max_rows: int, max_bytes: int = MAX_UNCOMPRESSED_BYTES) -> None:
    """Refuse a Parquet file whose footer declares more than ``max_rows`` rows or column pages that uncompress to
    more than ``max_bytes`` (a small compressed file can declare gigabytes), read from its metadata only."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, ValueError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise ArchiveError(f"{path}: not a readable Parquet file ({exc})") from None
    if meta.num_rows > max_rows:
        raise ArchiveError(f"{path}: {meta.num_rows:,} rows, more than {max_rows:,}: refused before reading it "
                           "(split the table)")
    total = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if total > max_bytes:
        raise ArchiveError(f"{path}: the Parquet pages unpack to {total / MIB_BYTES:,.0f} MiB, more than "
                           f"{max_bytes / MIB_BYTES:,.0f} MiB: refused before reading it")
