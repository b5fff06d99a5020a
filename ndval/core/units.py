"""Unit constants, one definition each (binary sizes follow IEC: MiB = 2**20 bytes)."""

from __future__ import annotations

#: bytes in one MiB (2**20)
BYTES_PER_MIB = float(1 << 20)
#: bytes in one GiB (2**30)
BYTES_PER_GIB = float(1 << 30)
#: MiB in one GiB
MIB_PER_GIB = 1024.0
#: milliseconds in one second
MS_PER_S = 1000.0
#: microseconds in one second
US_PER_S = 1e6
#: microseconds in one millisecond
US_PER_MS = 1000.0
#: bytes in one (decimal) GB, the unit of link bandwidths in GB/s
BYTES_PER_GB = 1e9
#: seconds in one microsecond
S_PER_US = 1e-6
#: FLOP/s in one TFLOP/s
FLOPS_PER_TFLOPS = 1e12
#: bytes in one decimal megabyte (1e6), the unit of the HBM efficiency tables' kernel sizes — not a MiB,
#: so never a ``_mb`` name
BYTES_PER_MEGABYTE = 1e6
#: FLOPs in one GFLOP
FLOPS_PER_GFLOP = 1e9
#: nanoseconds in one microsecond
NS_PER_US = 1000.0
#: bytes in one MiB / GiB as integers (buffer sizes, byte budgets)
MIB_BYTES = 1 << 20
GIB_BYTES = 1 << 30
