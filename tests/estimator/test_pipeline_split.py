"""Uneven pipeline splits (Megatron-Core semantics): layout strings, first/last counts, embedding/loss
accounting. Expected placements are written out by hand from Megatron's documented rules."""

from __future__ import annotations

from typing import Any

import pytest

import estimator
from estimator.inputs.derive import stage_layouts
from estimator.inputs.pipeline_split import expand_layout, parse_layout

DSV3 = {"ref": "models/deepseek-v3-671b.yaml"}
LLAMA405 = {"ref": "models/llama3.1-405b.yaml"}


def _cfg(model: dict[str, Any], **parallel: Any) -> estimator.EstimatorConfig:
    pp, vpp = parallel.get("pp", 1), parallel.get("vpp", 1)
    dp = parallel.pop("dp", 8)
    return estimator.load_config({
        "profile": "megatron",
        "model": model,
        "train": {"seq_length": 4096, "micro_batch_size": 1, "num_micro_batches": 2 * pp},
        "parallel": {"tp": 8, "dp": dp, "schedule": "interleaved" if vpp > 1 else "1f1b", **parallel},
        "recompute": {"mode": "full"},
        "hardware": "h100-80g",
    })


def _placement(cfg: estimator.EstimatorConfig) -> list[tuple[tuple[int, ...], int | None, int | None, int | None]]:
    """Per pipeline rank: (decoder layers per chunk, embedding chunk, head chunk, MTP chunk)."""
    n = cfg.model.num_layers
    return [
        (
            tuple(sum(1 for i in c if i < n) for c in s.chunks),
            s.embedding_chunk, s.head_chunk, s.mtp_chunk(n),
        )
        for s in stage_layouts(cfg)
    ]


def test_expand_layout_grammar() -> None:
    assert expand_layout("Et*3|(tt|)*2,m|L") == "Ettt|tt|tt|m|L"
    assert expand_layout("(t*2|)*3") == "tt|tt|tt|"
    assert expand_layout("E, t | t L") == "Et|tL"
    assert expand_layout("E|*2tL") == "E||tL"
    assert [s.symbols for s in parse_layout("E||t|L")] == ["E", "", "t", "L"]


def test_layout_deepseek_v3_pp16_vpp2() -> None:
    """Megatron's documented example: 'Et*3|(tt|)*29,m|L' on PP 16 = VPP 2 (its table)."""
    cfg = _cfg(DSV3, pp=16, vpp=2, ep=8, pipeline_layout="Et*3|(tt|)*29,m|L")
    expected = [((3, 2), 0, None, None)] + [((2, 2), None, None, None)] * 13
    expected += [((2, 0), None, None, 1), ((2, 0), None, 1, None)]
    assert _placement(cfg) == expected
    layouts = stage_layouts(cfg)
    assert layouts[0].chunks[1] == (33, 34)  # chunk 1 of rank 0 follows the 32 layers of chunk 0 ranks
    assert layouts[14].chunks[1] == (61,)  # the MTP layer (index num_layers) on rank 14, chunk 1
    estimator.estimate_memory(cfg)
    estimator.estimate_perf(cfg)


def test_layout_megatron_ci_selective_recompute() -> None:
    """The CI test's 'Et*3|(tt|)*6tmL' on PP 2 = VPP 4: virtual stages 3,2,2,2,2,2,2,1."""
    model = {**DSV3, "num_layers": 16, "num_experts": 8, "moe_topk": 2}
    cfg = _cfg(model, pp=2, vpp=4, ep=8, pipeline_layout="Et*3|(tt|)*6tmL")
    assert _placement(cfg) == [((3, 2, 2, 2), 0, None, None), ((2, 2, 2, 1), None, 3, 3)]
    assert stage_layouts(cfg)[1].chunks[3] == (15, 16)


def test_layout_empty_decoder_first_stage() -> None:
    """'E|t*4|t*4|t*3,L' on PP 4: the first stage holds only the embedding."""
    model = {**LLAMA405, "num_layers": 11}
    cfg = _cfg(model, pp=4, pipeline_layout="E|t*4|t*4|t*3,L")
    assert _placement(cfg) == [((0,), 0, None, None), ((4,), None, None, None), ((4,), None, None, None),
                               ((3,), None, 0, None)]
    assert stage_layouts(cfg)[3].chunks[0] == (8, 9, 10)
    mem = estimator.estimate_memory(cfg)
    assert mem.stages[0].components["activations"] < mem.stages[1].components["activations"]


@pytest.mark.parametrize(("pp", "first", "last", "per_rank"), [
    (8, 7, 6, [7, 8, 8, 8, 8, 8, 8, 6]),
    (16, 3, 2, [3] + [4] * 14 + [2]),
])
def test_deepseek_v3_first_last_split(pp: int, first: int, last: int, per_rank: list[int]) -> None:
    cfg = _cfg(DSV3, pp=pp, ep=8, dp=64 // pp * 2,
               decoder_first_pipeline_num_layers=first, decoder_last_pipeline_num_layers=last)
    assert [len([i for i in s.layers if i < 61]) for s in stage_layouts(cfg)] == per_rank
    assert stage_layouts(cfg)[-1].layers[-1] == 61  # MTP on the last stage
    mem = estimator.estimate_memory(cfg)
    assert len(mem.stages) == pp
    estimator.estimate_perf(cfg)


def test_llama_405b_pp8_vpp8_embedding_loss_accounting() -> None:
    """126 layers + embedding + loss = 128 slots over 64 virtual stages: 2 each, 1 on the first and last."""
    cfg = _cfg(LLAMA405, pp=8, vpp=8, account_for_embedding_in_pipeline_split=True,
               account_for_loss_in_pipeline_split=True)
    placement = _placement(cfg)
    assert placement[0] == ((1, 2, 2, 2, 2, 2, 2, 2), 0, None, None)
    assert placement[7] == ((2, 2, 2, 2, 2, 2, 2, 1), None, 7, None)
    assert all(p[0] == (2,) * 8 for p in placement[1:7])
    assert stage_layouts(cfg)[1].chunks[0] == (1, 2)  # offset reduced by the embedding's slot
    estimator.estimate_memory(cfg)
    estimator.estimate_perf(cfg)


def test_split_drives_memory_per_stage() -> None:
    """A middle stage's parameters scale with the MoE layers the split gives it (8 vs 9 of them), and
    the first/last flags give the same estimate as the equivalent explicit list."""
    eight = _cfg(DSV3, pp=8, ep=8, dp=16, decoder_first_pipeline_num_layers=7, decoder_last_pipeline_num_layers=6)
    nine = _cfg(DSV3, pp=8, ep=8, dp=16, decoder_first_pipeline_num_layers=5, decoder_last_pipeline_num_layers=2)
    p8 = estimator.estimate_memory(eight).stages[2].components["params"]
    p9 = estimator.estimate_memory(nine).stages[2].components["params"]
    assert p9 / p8 == pytest.approx(9 / 8)
    explicit = _cfg(DSV3, pp=8, ep=8, dp=16, layers_per_stage=[7, 8, 8, 8, 8, 8, 8, 6])
    assert estimator.estimate_memory(explicit).stages == estimator.estimate_memory(eight).stages


@pytest.mark.parametrize(("parallel", "field", "rule_part"), [
    ({"pp": 16, "vpp": 2, "pipeline_layout": "Et*3|(tt|)*29,x|L"}, "parallel.pipeline_layout", "unknown symbol"),
    ({"pp": 16, "vpp": 2, "pipeline_layout": "Et*3|((tt|)*2)*14,tm|L"}, "parallel.pipeline_layout", "nested"),
    ({"pp": 16, "vpp": 2, "pipeline_layout": "Et*3|(tt|)*28,t|m|L"}, "parallel.pipeline_layout", "'t' layers"),
    ({"pp": 16, "vpp": 1, "pipeline_layout": "Et*3|(tt|)*29,m|L"}, "parallel.pipeline_layout", "vpp"),
    ({"pp": 16, "vpp": 2, "pipeline_layout": "t*3|(tt|)*29,m|EL"}, "parallel.pipeline_layout", "'E'"),
    ({"pp": 8, "decoder_first_pipeline_num_layers": 6, "decoder_last_pipeline_num_layers": 6},
     "parallel.decoder_first_pipeline_num_layers", "split evenly"),
    ({"pp": 8, "vpp": 2, "decoder_first_pipeline_num_layers": 7, "decoder_last_pipeline_num_layers": 6},
     "parallel.decoder_first_pipeline_num_layers", "not divisible by parallel.vpp"),
    ({"pp": 8, "account_for_embedding_in_pipeline_split": True},
     "parallel.account_for_embedding_in_pipeline_split", "split evenly"),
    ({"pp": 8, "decoder_first_pipeline_num_layers": 7, "pipeline_layout": "E|t|L"}, "parallel", "at most one"),
])
def test_bad_split_names_field_rule_and_example(parallel: dict[str, Any], field: str, rule_part: str) -> None:
    with pytest.raises(estimator.ConfigError) as info:
        _cfg(DSV3, ep=8, **parallel)
    err = info.value
    assert err.field == field
    assert rule_part in err.rule
    assert "valid example" in str(err)


def test_unknown_checkpoint_policy_names_field_rule_and_example() -> None:
    with pytest.raises(estimator.ConfigError) as info:
        estimator.load_config({
            "model": LLAMA405, "train": {"seq_length": 4096}, "hardware": "h100-80g",
            "parallel": {"tp": 8, "pp": 9, "layers_per_stage": [14] * 9},
            "recompute": {"mode": "selective", "modules": ["op-level SAC"]},
        })
    assert info.value.field == "recompute.modules"
    assert "unknown" in info.value.rule
    assert "valid example" in str(info.value)
