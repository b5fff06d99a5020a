"""Importers: start an estimate from the files users already have.

- :func:`import_hf_config` — a Hugging Face ``config.json`` -> the ``model`` section;
- :func:`import_megatron` — Megatron-LM / Megatron-Core / MindSpeed-LLM launch arguments -> a run;
- :func:`import_torchtitan` — a torchtitan job TOML -> a run;
- :func:`import_mindformers` — a MindFormers training YAML -> a run (profile ``sapp-nd``);
- :func:`render` — the result as YAML with one comment per field naming its source key.

Each returns an :class:`Imported` (the mapping, the source of every field, what was ignored, not
modelled or unknown); bad input raises ``ConfigError`` naming the file, the key and the rule.
"""

from estimator.importers.common import Imported
from estimator.importers.hf import import_hf_config, known_architectures
from estimator.importers.megatron import import_megatron
from estimator.importers.mindformers import import_mindformers
from estimator.importers.render import render
from estimator.importers.torchtitan import import_torchtitan

__all__ = ["Imported", "import_hf_config", "import_megatron", "import_mindformers", "import_torchtitan",
           "known_architectures", "render"]
