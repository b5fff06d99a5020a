"""ndval service: ``ndval serve`` — a local, read-only HTTP API and page over analysed profiles.

Layers (this package sits above ``analyzer`` and uses only its public API; nothing below imports it):

- :mod:`ndval.service.registry` — the datasets given on the command line, by id; safety walk (symlinks out
  of a dataset refused); one load per dataset; analyses cached per phase scope and threshold set;
- :mod:`ndval.service.lanes` — swimlane index per rank and window queries under an item budget;
- :mod:`ndval.service.evidence` — from an evidence row's indicator to the events behind it;
- :mod:`ndval.service.app` — the Starlette application (JSON API + the page in ``ndval/service/static``).

The command is ``ndval/harness/commands/serve.py``; the API is described in ``docs/serve.md``.
"""
