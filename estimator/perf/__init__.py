"""perf."""
