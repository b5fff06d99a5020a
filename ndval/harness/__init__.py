"""ndval harness: validation cases, pytest plugin, golden files, reports and the CLI."""
