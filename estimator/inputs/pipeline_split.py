"""Uneven pipeline splits as Megatron-Core states them: which decoder layers each virtual stage holds.

Four ways to say it (mutually exclusive; none = an even split over pp·vpp):

- ``parallel.layers_per_stage`` — an explicit list, one count per virtual stage;
- ``parallel.decoder_first_pipeline_num_layers`` / ``decoder_last_pipeline_num_layers`` — Megatron
  ``--decoder-first/last-pipeline-num-layers``: the first (last) pipeline rank holds that many
  layers, the other ranks share the rest evenly; with VPP every rank's count is split evenly over
  its vpp chunks (Megatron-Core ``TransformerConfig.num_layers_in_first/last_pipeline_stage``,
  ``get_transformer_layer_offset``; it asserts both divisions, e.g. "number of layers at last stage:
  6 must be divisible by virtual pipeline parallel degree 4", Megatron MR 2795);
- ``parallel.account_for_embedding_in_pipeline_split`` / ``account_for_loss_in_pipeline_split`` —
  the embedding (loss) counts as one layer when splitting: n = L + [E] + [loss] slots split evenly
  over pp·vpp virtual stages, and the first (last) virtual stage holds one decoder layer fewer
  (Megatron-Core ``get_transformer_layer_offset``: ``num_layers += 1`` for each, offsets reduced by
  one after the embedding);
- ``parallel.pipeline_layout`` — Megatron ``--pipeline-model-parallel-layout``
  (``docs/api-guide/pipeline_parallel_layout.md``): virtual stages separated by ``|``; ``E``
  embedding, ``t`` decoder layer, ``m`` MTP layer, ``L`` loss; ``x*n`` repeats one symbol (or ``|``),
  ``(...)*n`` repeats a group (not nested); commas and spaces are cosmetic. Virtual stage i sits on
  pipeline rank i mod pp, chunk i div pp; vpp = (number of stages)/pp. ``E`` must be the first
  symbol and ``L`` the last, each exactly once; the ``t`` count must equal num_layers and the
  ``m`` count mtp_layers, with every ``m`` after every ``t`` and in its rank's last chunk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

from estimator.config.errors import ConfigError

#: the parallel section of a configuration: estimator.config.sections.ParallelConfig, which imports this module (not imported here, even
#: for type checking: no import cycle)
ParallelConfig = Any


LAYOUT_FIELD = "parallel.pipeline_layout"
LAYOUT_SYMBOLS = "EtmL"
#: a valid layout shown in every layout error (DeepSeek-V3 on PP 16 × VPP 2, Megatron's own example)
LAYOUT_EXAMPLE = "Et*3|(tt|)*29,m|L"
SPLIT_EXAMPLE = "num_layers 61 on pp 8: decoder_first_pipeline_num_layers 5, decoder_last_pipeline_num_layers 2"
_GROUP = re.compile(r"\(([^()]*)\)\*(\d+)")
_REPEAT = re.compile(r"([EtmL|])\*(\d+)")


@dataclass(frozen=True)
class VirtualStage:
    """Symbols of one virtual stage in order (``E``, ``t``, ``m``, ``L``)."""

    symbols: str

    @property
    def decoder_layers(self) -> int:
        return self.symbols.count("t")

    @property
    def mtp_layers(self) -> int:
        return self.symbols.count("m")


def _layout_error(rule: str) -> ConfigError:
    return ConfigError(LAYOUT_FIELD, rule, hint=f"a valid example: {LAYOUT_EXAMPLE!r}")


def expand_layout(text: str) -> str:
    """The layout with commas/spaces dropped and every ``(...)*n`` and ``x*n`` unrolled.

    Groups are unrolled first, then single-symbol repeats (Megatron's order), so ``(t*2|)*3`` is
    ``tt|tt|tt|``. Raises ``ConfigError`` for nested or unbalanced parentheses and a ``*`` that
    follows nothing repeatable.
    """
    flat = re.sub(r"[,\s]", "", text)
    if re.search(r"\([^()]*\(", flat):
        raise _layout_error("nested parentheses are not part of Megatron's layout grammar")
    flat = _GROUP.sub(lambda g: g.group(1) * int(g.group(2)), flat)
    if "(" in flat or ")" in flat:
        raise _layout_error("parentheses must enclose a group and be followed by '*n' (not nested)")
    flat = _REPEAT.sub(lambda g: g.group(1) * int(g.group(2)), flat)
    if "*" in flat:
        raise _layout_error("'*n' must follow one of E, t, m, L or a parenthesised group")
    return flat


def parse_layout(text: str) -> list[VirtualStage]:
    """Virtual stages of a Megatron layout string, in virtual-stage order (see module docstring)."""
    if not text.strip():
        raise _layout_error("must not be empty")
    flat = expand_layout(text)
    bad = sorted({c for c in flat if c not in LAYOUT_SYMBOLS + "|"})
    if bad:
        raise _layout_error(f"unknown symbol(s) {', '.join(map(repr, bad))}; known: E, t, m, L, '|', '*n', '(...)'")
    return [VirtualStage(part) for part in flat.split("|")]


def check_layout(stages: list[VirtualStage], pp: int, vpp: int, num_layers: int, mtp_layers: int) -> None:
    """Megatron's layout rules for ``pp``, ``vpp``, ``num_layers`` and ``mtp_layers``."""
    if len(stages) % pp:
        raise _layout_error(f"has {len(stages)} stages, not a multiple of parallel.pp ({pp})")
    if len(stages) != pp * vpp:
        raise _layout_error(
            f"has {len(stages)} stages = pp·vpp with vpp = {len(stages) // pp}; parallel.vpp is {vpp}"
        )
    flat = "".join(s.symbols for s in stages)
    if not flat.startswith("E") or flat.count("E") != 1:
        raise _layout_error("'E' (embedding) must appear exactly once, as the first symbol")
    if not flat.endswith("L") or flat.count("L") != 1:
        raise _layout_error("'L' (loss) must appear exactly once, as the last symbol")
    if flat.count("t") != num_layers:
        raise _layout_error(f"has {flat.count('t')} 't' layers; model.num_layers is {num_layers}")
    if flat.count("m") != mtp_layers:
        raise _layout_error(f"has {flat.count('m')} 'm' layers; model.mtp_layers is {mtp_layers}")
    if "m" in flat and "t" in flat[flat.index("m"):]:
        raise _layout_error("every 'm' (MTP) layer must come after every 't' layer")
    for v, stage in enumerate(stages):
        if stage.mtp_layers and v // pp != vpp - 1:
            raise _layout_error("'m' (MTP) layers must sit in the last chunk of their pipeline rank")


def first_last_split(num_layers: int, pp: int, vpp: int, first: int | None, last: int | None) -> list[int]:
    """Decoder layers per virtual stage with Megatron's first/last-stage counts.

    Rank 0 holds ``first``, rank pp−1 ``last`` (when given); the other ranks hold
    (L − first − last)/(number of other ranks) each; each rank's count is split evenly over its vpp
    chunks. Virtual stage v = chunk·pp + rank.
    """
    field = "parallel.decoder_first_pipeline_num_layers" if first is not None else (
        "parallel.decoder_last_pipeline_num_layers"
    )
    given = [n for n in (first, last) if n is not None]
    middle_ranks = pp - len(given)
    middle_layers = num_layers - sum(given)
    if pp < 2 or (pp == 2 and first is not None and last is not None and middle_layers):
        raise ConfigError(field, f"needs pp ≥ 2 and first + last = num_layers ({num_layers}) when pp = 2",
                          hint=f"a valid example: {SPLIT_EXAMPLE}")
    if middle_layers < 0 or (middle_ranks and middle_layers % middle_ranks) or (not middle_ranks and middle_layers):
        raise ConfigError(
            field,
            f"num_layers ({num_layers}) minus the first/last counts ({middle_layers}) must split evenly "
            f"over the other {middle_ranks} pipeline ranks",
            hint=f"a valid example: {SPLIT_EXAMPLE}",
        )
    per_rank = [middle_layers // middle_ranks if middle_ranks else 0] * pp
    if first is not None:
        per_rank[0] = first
    if last is not None:
        per_rank[-1] = last
    for rank, n in enumerate(per_rank):
        if n % vpp:
            raise ConfigError(field, f"pipeline rank {rank} holds {n} layers, not divisible by parallel.vpp ({vpp})",
                              hint=f"a valid example: {SPLIT_EXAMPLE}")
    return [per_rank[v % pp] // vpp for v in range(pp * vpp)]


def accounted_split(num_layers: int, pp: int, vpp: int, embedding: bool, loss: bool) -> list[int]:
    """Decoder layers per virtual stage when the embedding and/or loss count as one layer each.

    n = L + [embedding] + [loss] slots over pp·vpp virtual stages (must divide); the first virtual
    stage gives one slot to the embedding, the last one to the loss.
    """
    slots = num_layers + int(embedding) + int(loss)
    chunks = pp * vpp
    if slots % chunks:
        field = "parallel.account_for_embedding_in_pipeline_split" if embedding else (
            "parallel.account_for_loss_in_pipeline_split"
        )
        raise ConfigError(
            field,
            f"num_layers + embedding + loss = {slots} must split evenly over pp·vpp = {chunks}",
            hint="a valid example: num_layers 126 on pp 8 × vpp 8 with both set (128 slots, 2 per virtual stage)",
        )
    counts = [slots // chunks] * chunks
    counts[0] -= int(embedding)
    counts[-1] -= int(loss)
    return counts


def split_fields_set(p: ParallelConfig) -> list[str]:
    """Names of the uneven-split fields that are set (at most one family may be)."""
    families = {
        "layers_per_stage": p.layers_per_stage is not None,
        "pipeline_layout": p.pipeline_layout is not None,
        "decoder_first/last_pipeline_num_layers": (
            p.decoder_first_pipeline_num_layers is not None or p.decoder_last_pipeline_num_layers is not None
        ),
        "account_for_embedding/loss_in_pipeline_split": (
            p.account_for_embedding_in_pipeline_split or p.account_for_loss_in_pipeline_split
        ),
    }
    return [name for name, on in families.items() if on]


def decoder_layers_per_virtual_stage(p: ParallelConfig, num_layers: int) -> list[int]:
    """Decoder layers of each virtual stage under whichever split ``p`` states (even by default)."""
    if p.layers_per_stage is not None:
        return list(p.layers_per_stage)
    if p.pipeline_layout is not None:
        return [s.decoder_layers for s in parse_layout(p.pipeline_layout)]
    if p.decoder_first_pipeline_num_layers is not None or p.decoder_last_pipeline_num_layers is not None:
        return first_last_split(
            num_layers, p.pp, p.vpp, p.decoder_first_pipeline_num_layers, p.decoder_last_pipeline_num_layers
        )
    if p.account_for_embedding_in_pipeline_split or p.account_for_loss_in_pipeline_split:
        return accounted_split(
            num_layers, p.pp, p.vpp, p.account_for_embedding_in_pipeline_split, p.account_for_loss_in_pipeline_split
        )
    chunks = p.pp * p.vpp
    return [num_layers // chunks] * chunks


def mtp_virtual_stage(p: ParallelConfig) -> int:
    """Virtual stage holding the MTP layers: the layout's ``m`` stage, else the last virtual stage."""
    if p.pipeline_layout is not None:
        stages = parse_layout(p.pipeline_layout)
        return next((v for v, s in enumerate(stages) if s.mtp_layers), len(stages) - 1)
    return cast(int, p.pp * p.vpp - 1)
