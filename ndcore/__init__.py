"""ndcore — the small base the estimator, the analyzer and the harness share.

One home for each rule they all need, so no rule lives twice:

- ``ndcore.units``: unit constants (bytes per MiB, MiB per GiB, ms per s, µs per s);
- ``ndcore.stats``: MAPE, Pearson, Spearman (pooled and within groups), with one rule for
  constant or too-short input;
- ``ndcore.hashing``: SHA-256 of bytes, text and files;
- ``ndcore.yamlsrc``: YAML loading that remembers file and line of every value, ``{ref:}``
  includes, and the "did you mean" hint;
- ``ndcore.rows``: the ``where`` row filter of case data and assertions;
- ``ndcore.render``: tables rendered to Markdown (tabulate) and HTML (Jinja2 templates).

ndcore imports none of ``estimator``, ``analyzer`` or ``harness`` (a structure test checks it).
"""
