"""ndval.core — the small base the estimator, the analyzer and the harness share.

One home for each rule they all need, so no rule lives twice:

- ``ndval.core.units``: unit constants (bytes per MiB, MiB per GiB, ms per s, µs per s);
- ``ndval.core.stats``: MAPE, Pearson, Spearman (pooled and within groups), with one rule for
  constant or too-short input;
- ``ndval.core.hashing``: SHA-256 of bytes, text and files;
- ``ndval.core.yamlsrc``: YAML loading that remembers file and line of every value, ``{ref:}``
  includes, and the "did you mean" hint;
- ``ndval.core.rows``: the ``where`` row filter of case data and assertions;
- ``ndval.core.render``: tables rendered to Markdown (tabulate) and HTML (Jinja2 templates);
- ``ndval.core.atomic``: the one output writer (atomic files; ``-`` for standard output);
- ``ndval.core.version``: the installed ndval version.

ndval.core imports none of ``estimator``, ``analyzer`` or ``harness`` (a structure test checks it).
"""
