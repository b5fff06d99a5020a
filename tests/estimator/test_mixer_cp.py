"""Context parallelism of the Mamba-2 and Gated DeltaNet mixers (estimator.perf.mixer_cp): the all-to-alls and
re-layouts by hand, the mixers' FLOPs per rank, the kernels, and Megatron-Core's head and group rules.
Synthetic models (labelled): two mixer layers and two MLP layers, no attention layer, so every CP byte is the
mixers'."""

from __future__ import annotations

from typing import Any

import pytest

import estimator
from estimator.config.errors import ConfigError
from estimator.config.schema import EstimatorConfig, load_config
from estimator.perf import gdn, kernels, mamba
from estimator.perf.context import config_context
from estimator.perf.mixer_cp import mixer_cp_collectives, mixer_cp_relayout_ops, mixer_cp_widths
from estimator.perf.roofline import layer_dims

GDN: dict[str, Any] = {"name": "synthetic-gdn-cp", "num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 512,
                       "num_attention_heads": 4, "num_kv_heads": 2, "attention": "gqa", "head_dim": 64,
                       "vocab_size": 1000, "gdn_num_key_heads": 2, "gdn_num_value_heads": 4,
                       "gdn_key_head_dim": 32, "gdn_value_head_dim": 16, "gdn_conv_kernel": 4,
                       "hybrid_override_pattern": "G-G-"}
MAMBA: dict[str, Any] = {"name": "synthetic-mamba-cp", "num_layers": 4, "hidden_size": 256, "ffn_hidden_size": 512,
                         "num_attention_heads": 4, "num_kv_heads": 2, "head_dim": 64, "attention": "gqa",
                         "vocab_size": 1024, "activation": "squared_relu", "position_embedding": "none",
                         "hybrid_override_pattern": "M-M-", "mamba_num_heads": 8, "mamba_head_dim": 32,
                         "mamba_state_dim": 16, "mamba_num_groups": 2}


def _run(model: dict[str, Any], cp: int, tp: int = 1, recompute: dict[str, Any] | None = None) -> EstimatorConfig:
    return load_config({"profile": "megatron", "model": model,
                        "train": {"seq_length": 128, "micro_batch_size": 1, "num_micro_batches": 2,
                                  "flash_attention": True},
                        "parallel": {"tp": tp, "cp": cp}, "hardware": "h100-80g",
                        "recompute": recompute or {"mode": "none"}})


def test_widths_by_hand() -> None:
    """GDN: in_proj 2·2·32 + 2·4·16 + 2·4 = 264, out 4·16 = 64; Mamba: 2·256 + 2·2·16 + 8 = 584, out d_i = 256."""
    assert mixer_cp_widths(_run(GDN, 1).model, "gdn", 1) == (264, 64)
    assert mixer_cp_widths(_run(MAMBA, 1).model, "mamba", 2) == (292, 128)


def test_collectives_by_hand() -> None:
    """b·s/cp = 64 tokens, BF16: GDN one all-to-all in (64·264·2 = 33,792 B) and one out (8,192 B); Mamba the same
    bytes in five calls; none at cp 1."""
    a, b = mixer_cp_collectives("gdn", 64, 264, 64, 2, 2)
    assert (a.kind, a.size_bytes, a.count, a.group_size) == ("all_to_all", 33792, 1, 2)
    assert (b.size_bytes, b.count) == (8192, 1)
    m_in, m_out = mixer_cp_collectives("mamba", 64, 584, 256, 2, 2)
    assert m_in.count == 5 and m_in.size_bytes * m_in.count == pytest.approx(64 * 584 * 2, rel=1e-12)
    assert m_out.size_bytes == 64 * 256 * 2 and m_out.count == 1
    assert mixer_cp_collectives("gdn", 64, 264, 64, 2, 1) == []


def test_relayout_copies_by_hand() -> None:
    """3 copies of the in_proj output and 2 of the scan output, each read and written: 2·64·2·3·264 = 202,752 B in
    and 2·64·2·2·64 = 32,768 B out, each way; GDN 3 + 2 kernels, Mamba 7 + 2; the out copies belong to GDN's
    ``gdn_norm_out`` recompute module; nothing at cp 1."""
    ops = mixer_cp_relayout_ops("gdn", 64, 264, 64, 2, 2)
    assert [(op.bytes, op.bw_bytes, op.kernels) for op in ops] == [(202752, 202752, 3), (32768, 32768, 2)]
    assert "gdn_norm_out" in ops[1].modules and "gdn_norm_out" not in ops[0].modules
    assert [op.kernels for op in mixer_cp_relayout_ops("mamba", 64, 584, 256, 2, 2)] == [7, 2]
    assert mixer_cp_relayout_ops("gdn", 64, 264, 64, 2, 1) == []


@pytest.mark.parametrize("model", [GDN, MAMBA], ids=["gdn", "mamba"])
def test_cp_bytes_are_the_mixers_all_to_alls_forward_and_backward(model: dict[str, Any]) -> None:
    """Two mixer layers at cp 2: wire bytes = 2 layers × (forward + backward) × (cp−1)/cp × (in + out bytes);
    nothing hides them (no ring window), and they are CP_COMM."""
    cfg = _run(model, 2)
    stage = estimator.estimate_perf(cfg).stages[0]
    w_in, w_out = mixer_cp_widths(cfg.model, "gdn" if model is GDN else "mamba", 1)
    assert stage.cp_bytes == pytest.approx(2 * 2 * 0.5 * 64 * 2 * (w_in + w_out), rel=1e-12)
    assert stage.cp_hidden == 0.0 and stage.cp_comm > 0.0
    report = estimator.estimate_perf(cfg)
    assert report.real_parts["CP_WAIT"] > 0.0
    assert report.real_parts["TOTAL"] == pytest.approx(sum(v for k, v in report.real_parts.items() if k != "TOTAL"))


@pytest.mark.parametrize("model", [GDN, MAMBA], ids=["gdn", "mamba"])
def test_flops_per_rank_are_those_of_the_local_tokens(model: dict[str, Any]) -> None:
    """The mixers' FLOPs are linear in the tokens: at cp 2 each rank does half of cp 1's (full sequence, half the
    heads = half the sequence, all the heads)."""
    one, two = (estimator.estimate_perf(_run(model, cp)).stages[0].fw_flops for cp in (1, 2))
    assert two == pytest.approx(one / 2, rel=1e-12)


def test_relayout_is_one_of_the_mixers_operators_only_under_cp() -> None:
    cfg1, cfg2 = _run(GDN, 1), _run(GDN, 2)
    names = [op.name for op in gdn.gdn_ops(cfg2.model, layer_dims(cfg2, config_context(cfg2)))]
    assert {"gdn_cp_relayout_in", "gdn_cp_relayout_out"} <= set(names)
    assert not any("relayout" in op.name for op in gdn.gdn_ops(cfg1.model, layer_dims(cfg1, config_context(cfg1))))
    cfg_m = _run(MAMBA, 2)
    assert "mamba_cp_relayout_in" in [op.name for op in mamba.mamba_ops(cfg_m.model, layer_dims(cfg_m,
                                                                                                config_context(cfg_m)))]


def test_host_launches_count_the_all_to_alls_and_copies() -> None:
    """Forward launches per GDN layer grow by its 2 all-to-alls and 5 copies (2 layers: 14)."""
    one, two = (estimator.estimate_perf(_run(GDN, cp)).stages[0].kernels_fw for cp in (1, 2))
    per_layer = 2 * kernels.OP_KERNELS["COLLECTIVE"][0] + 5 * kernels.OP_KERNELS["POINTWISE"][0]
    assert two - one == 2 * per_layer


@pytest.mark.parametrize(("model", "cp", "tp", "words"), [
    (GDN, 4, 1, "GDN key and value heads"),  # 2 key heads over tp·cp = 4
    (GDN, 2, 2, "GDN key and value heads"),  # 2 key heads over tp·cp = 4
    (MAMBA, 4, 1, "group_repeat_count"),  # 2 groups over cp 4: replicated group states
    ({**MAMBA, "mamba_num_groups": 8, "mamba_num_heads": 8}, 16, 1, "Mamba heads"),  # 8 heads over cp 16
])
def test_megatron_core_head_and_group_rules(model: dict[str, Any], cp: int, tp: int, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        _run(model, cp, tp)
    assert info.value.field == "parallel.cp" and words in info.value.rule


NORM_OUT = {"mode": "selective", "modules": ["gdn_norm_out"]}


def test_gdn_norm_out_recompute_by_hand() -> None:
    """Megatron-Core's recompute module ``gdn_norm_out`` (the GDN output norm and its HP-to-CP all-to-all, output
    discarded): per GDN layer the activations lose out_proj's saved input T·n_v·d_v·B = 128·64·2 and the norm's
    rstd T·n_v·4 = 128·4·4 (18,432 B); the recompute pass launches the norm and the copy back (2 kernels), under
    cp 2 also the all-to-all and its 2 re-layouts (5), and sends the output all-to-all once more (4,096 B)."""
    def act_bytes(cfg: EstimatorConfig) -> float:
        return float(estimator.estimate_memory(cfg).stages[0].components["activations"]) * 2**20

    assert act_bytes(_run(GDN, 1)) - act_bytes(_run(GDN, 1, recompute=NORM_OUT)) == pytest.approx(2 * 18432)
    plain, again = (estimator.estimate_perf(_run(GDN, 1, recompute=r)).stages[0] for r in (None, NORM_OUT))
    assert (plain.kernels_rec, again.kernels_rec) == (0.0, 2 * 2) and again.recompute > 0.0
    plain_cp, again_cp = (estimator.estimate_perf(_run(GDN, 2, recompute=r)).stages[0] for r in (None, NORM_OUT))
    assert again_cp.kernels_rec == 2 * 5
    assert again_cp.cp_bytes - plain_cp.cp_bytes == pytest.approx(2 * 0.5 * 64 * 64 * 2)
