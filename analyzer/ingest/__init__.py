"""Profile ingestion: Ascend torch_npu text exports and PyTorch Kineto traces -> one event table.

Public pieces: :mod:`analyzer.ingest.events` (the event-table schema), :class:`IngestError`,
:func:`read_ascend_rank` (one ``*_ascend_pt`` directory or a bare ``trace_view.json``) and
:func:`read_kineto_trace` (``.json`` / ``.json.gz``). Most callers want
:func:`analyzer.dataset.load_dataset`, which finds the inputs and calls these.
"""

from analyzer.ingest.errors import IngestError

__all__ = ["IngestError"]
