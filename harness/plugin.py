"""pytest hooks of the ndval plugin (wired in by the harness issue)."""
