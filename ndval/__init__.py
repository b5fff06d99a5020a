"""ndval: the harness (``ndval.harness``), the analyzer's web service (``ndval.service``) and the small
base package below estimator, analyzer and harness (``ndval.core``). Imports nothing, so that
``ndval.core`` stays importable without the harness."""
