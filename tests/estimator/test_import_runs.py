"""Megatron-LM CI argument lists and the torchtitan train TOML behind the shared measured rows import to the
configs of the transcribed rows (estimator.experiments.measured), field by field; every difference is listed
with its reason. The launch files are in tests/data (verbatim copies, provenance in their first line)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from estimator.config.errors import ConfigError
from estimator.config.schema import EstimatorConfig, load_config
from estimator.experiments.measured import config_from_measured_row
from estimator.importers import import_megatron, import_torchtitan
from ndval.harness.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
#: fields that may differ, with why the two configs still describe the same run
EXPLAINED = {
    "model.name": "the row's model_name vs the launch file's name",
    "model.assumed": "reasons recorded by each side",
    "model.source_facts": "the row mapper cites the CI configs it read; the importer read them itself",
    "train.num_micro_batches": "the row states GBS/(MBS·dp); the importer gives global_batch_size (same count)",
    "train.global_batch_size": "see train.num_micro_batches",
    "train.attention_dropout": "7B rows: not stated by the row (None) vs Megatron's default 0.1: the same masks",
    "train.hidden_dropout": "7B rows: not stated by the row (None) vs Megatron's default 0.1: the same masks",
    "hardware.devices": "the row states its world size; the importer was given it",
}


def _rows(measured_dir: Path, source: str) -> dict[str, dict[str, str]]:
    with (measured_dir / "memory_cases.csv").open(newline="", encoding="utf-8") as fh:
        return {r["case_id"]: r for r in csv.DictReader(fh) if r["source_id"] == source}


def _flat(cfg: EstimatorConfig) -> dict[str, Any]:
    out = {}
    for section in ("model", "train", "parallel", "recompute", "precision", "options"):
        out.update({f"{section}.{k}": v for k, v in getattr(cfg, section).model_dump().items()})
    return out


def differences(imported: EstimatorConfig, transcribed: EstimatorConfig) -> dict[str, tuple[Any, Any]]:
    a, b = _flat(imported), _flat(transcribed)
    diff = {k: (a[k], b[k]) for k in a if a[k] != b[k] and k not in EXPLAINED}
    if imported.num_micro_batches != transcribed.num_micro_batches:
        diff["num_micro_batches"] = (imported.num_micro_batches, transcribed.num_micro_batches)
    return diff


TESTS = ["gpt3_7b_tp4_pp1_memory_speed", "gpt3_7b_tp1_pp4_memory_speed", "gpt3_mcore_te_tp2_pp2_ep4_etp1_memory_speed",
         "gpt3_mcore_te_tp2_pp2_ep4_etp1_mtp_resume_torch_dist_fp8",
         "gpt3_mcore_te_tp2_pp2_ep4_etp1_selective_recompute_experimental"]


@pytest.mark.parametrize("test", TESTS)
def test_megatron_ci_arguments_import_to_the_transcribed_row(test: str, measured_dir: Path) -> None:
    row = next(r for r in _rows(measured_dir, "megatron_ci").values() if r["model_name"] == test)
    transcribed = load_config(config_from_measured_row(row))
    # world size: tests/test_utils/recipes/h100/{gpt,moe}.yaml (nodes 1, gpus 8), as the row's notes say
    run = import_megatron(DATA / "megatron_ci" / f"{test}.model_config.yaml", world_size=8, hardware="h100-80g")
    imported = load_config(run.data)
    # listed difference: the three MoE CI configs set --overlap-grad-reduce --overlap-param-gather as the 7B
    # ones do (tests/data/megatron_ci/*.model_config.yaml); the MoE rows' notes do not mention them, and the
    # row mapper states the switches for the 7B rows only (measured._mcore_7b_facts), leaving them unset
    # (Megatron's default: off) for the MoE rows, which are therefore priced without the overlap. The
    # import follows the file. The files' --moe-token-dispatcher-type alltoall is read as such; the rows leave
    # the dispatcher unset, which the estimator prices as the same all-to-all.
    moe_gap = {"parallel.overlap_grad_reduce": (True, None), "parallel.overlap_param_gather": (True, None),
               "parallel.moe_token_dispatcher": ("alltoall", None)}
    assert differences(imported, transcribed) == ({} if "7b" in test else moe_gap)
    assert run.data["parallel"]["overlap_grad_reduce"] is True and run.warnings == []


TORCHTITAN_ROWS = {  # the benchmark's command-line changes to llama3_8b.toml, per the row's notes
    "t1__8B__FSDP": [], "t1__8B__FSDP+torch.compile": ["options.torch_compile=true"],
    "t1__8B__FSDP+torch.compile+Float8": ["options.torch_compile=true", "precision.fp8_linear=true"],
}


@pytest.mark.parametrize("case", sorted(TORCHTITAN_ROWS))
def test_torchtitan_train_toml_imports_to_the_transcribed_row(case: str, measured_dir: Path) -> None:
    row = _rows(measured_dir, "torchtitan_llama3_h100_202412")[f"torchtitan_llama3_h100_202412__{case}__max_reserved"]
    transcribed = load_config(config_from_measured_row(row))
    run = import_torchtitan(DATA / "torchtitan" / "llama3_8b.toml", world_size=8, hardware="h100-80g")
    # listed difference: the TOML's batch_size = 1, the benchmark ran local batch 2 (Table 1: 'local batch size 2')
    assert run.data["train"]["micro_batch_size"] == 1
    imported = load_config(run.data, ["train.micro_batch_size=2", *TORCHTITAN_ROWS[case]])
    assert differences(imported, transcribed) == {}


def test_launch_script_reads_world_size_and_flags(tmp_path: Path) -> None:
    script = tmp_path / "pretrain.sh"
    script.write_text("GPUS_PER_NODE=8\nNNODES=2\ntorchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES \\\n"
                      "  pretrain_gpt.py --num-layers 32 --hidden-size 4096 --num-attention-heads 32 \\\n"
                      "  --seq-length 4096 --vocab-size 32000 --tensor-model-parallel-size 4 --bf16 \\\n"
                      "  --recompute-granularity full --tp-comm-overlap --my-new-flag 3  # comment\n",
                      encoding="utf-8")
    run = import_megatron(script, hardware="h100-80g")
    cfg = load_config(run.data)
    assert (cfg.parallel.tp, cfg.parallel.dp, cfg.recompute.mode) == (4, 4, "full")
    assert "--tp-comm-overlap" in run.not_modelled
    assert any("--my-new-flag" in w for w in run.warnings)


@pytest.mark.parametrize(("text", "key", "words"), [
    ("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 8 --vocab-size 9 "
     "--tensor-model-parallel-size 0", "--tensor-model-parallel-size", "integer ≥ 1"),
    ("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 8 --vocab-size 9 "
     "--attention-dropout 1.5", "--attention-dropout", "[0, 1)"),
    ("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 8 --vocab-size 9 "
     "--tensor-model-parallel-size 3", "world size", "not a multiple"),
    ("--hidden-size 4096", "--num-layers", "required"),
    ("--num-layers 4 --hidden-size 2688 --num-attention-heads 32 --hybrid-override-pattern MEM*/M*",
     "--hybrid-override-pattern", "only '*E'"),
])
def test_bad_megatron_flags_name_file_flag_and_rule(tmp_path: Path, text: str, key: str, words: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "args.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        import_megatron(path, world_size=8)
    assert (info.value.field, info.value.file) == (key, str(path)) and words in info.value.rule
    assert main(["import", "--from-megatron", str(path), "--world-size", "8"]) == 2
    assert key in capsys.readouterr().err


def test_malformed_toml_and_unknown_flavor(tmp_path: Path) -> None:
    bad = tmp_path / "train.toml"
    bad.write_text("[model\nname = 'llama3'", encoding="utf-8")
    with pytest.raises(ConfigError, match="malformed TOML"):
        import_torchtitan(bad, world_size=8)
    bad.write_text("[model]\nname = 'llama3'\nflavor = '1T'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="known: llama3 8B"):
        import_torchtitan(bad, world_size=8)


@pytest.mark.parametrize(("training", "key", "words"), [
    ("enable_cpu_offload = true", "training.enable_cpu_offload", "CPUOffloadPolicy"),
    ("mixed_precision_param = 'float16'", "training.mixed_precision_param", "bfloat16 or float32"),
])
def test_torchtitan_keys_that_change_memory_and_time_are_not_ignored(tmp_path: Path, training: str, key: str,
                                                                     words: str) -> None:
    """FSDP2 CPU offload and the FSDP2 parameter dtype were once listed as 'no effect on memory/time'."""
    path = tmp_path / "train.toml"
    path.write_text(f"[model]\nname = 'llama3'\nflavor = '8B'\n[training]\n{training}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        import_torchtitan(path, world_size=8)
    assert info.value.field == key and words in info.value.rule
    path.write_text("[model]\nname = 'llama3'\nflavor = '8B'\n[training]\nmixed_precision_param = 'float32'\n"
                    "enable_cpu_offload = false\n", encoding="utf-8")
    data = import_torchtitan(path, world_size=8).data
    assert data["precision"]["compute"] == "fp32"


def test_mindspeed_llm_script_imports_llama3_8b_on_sapp_nd() -> None:
    run = import_megatron(DATA / "mindspeed" / "pretrain_llama3_8b_ms.sh", profile="sapp-nd", hardware="ascend-910b",
                          vocab_size=128256)
    cfg = load_config(run.data)
    assert (cfg.profile, cfg.parallel.tp, cfg.parallel.dp, cfg.parallel.sequence_parallel) == ("sapp-nd", 8, 1, True)
    shipped = load_config({**run.data, "model": {"ref": "models/llama3-8b.yaml"}}).model
    for field in ("num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "kv_heads", "head_size",
                  "vocab_size", "activation", "norm", "tied_embeddings", "position_embedding"):
        assert getattr(cfg.model, field) == getattr(shipped, field), field
    assert run.warnings == []


def test_mindformers_yaml_imports_llama3_1_8b() -> None:
    from estimator.importers import import_mindformers

    run = import_mindformers(DATA / "mindformers" / "finetune_llama3_1_8b.yaml", hardware="ascend-910b")
    cfg = load_config(run.data)
    assert (cfg.profile, cfg.parallel.dp, cfg.recompute.mode, cfg.precision.compute, cfg.train.seq_length) == (
        "sapp-nd", 8, "full", "bf16", 8192)
    shipped = load_config({**run.data, "model": {"ref": "models/llama3-8b.yaml"}}).model
    assert cfg.model.model_dump(exclude={"name"}) == shipped.model_dump(exclude={"name"})
    assert run.warnings == []


def test_torchtitan_async_tp_and_float8_recipe(tmp_path: Path) -> None:
    toml = tmp_path / "train.toml"
    toml.write_text("[model]\nname = 'llama3'\nflavor = '70B'\n[training]\nbatch_size = 1\nseq_len = 8192\n"
                    "tensor_parallel_degree = 8\ncompile = true\n[experimental]\nenable_async_tensor_parallel = true\n"
                    "[float8]\nenable_float8_linear = true\nrecipe_name = 'rowwise'\n", encoding="utf-8")
    cfg = load_config(import_torchtitan(toml, world_size=256, hardware="h100-80g").data)
    assert (cfg.parallel.tp, cfg.parallel.dp, cfg.parallel.enable_async_tensor_parallel) == (8, 32, True)
    assert (cfg.precision.linear_recipe, cfg.model.ffn_hidden_size) == ("torchao_rowwise", 28672)


def test_megatron_recipe_flags_map_to_the_landed_fields(tmp_path: Path) -> None:
    args = tmp_path / "args.txt"
    args.write_text("--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 4096 --vocab-size 32000 "
                    "--tensor-model-parallel-size 2 --sequence-parallel --use-distributed-optimizer "
                    "--overlap-grad-reduce --overlap-param-gather --tp-comm-overlap --fp8-format hybrid "
                    "--fp8-recipe mxfp8 --fp8-param-gather --cuda-graph-impl transformer_engine", encoding="utf-8")
    cfg = load_config(import_megatron(args, world_size=8, hardware="b200").data)
    p = cfg.parallel
    assert (p.overlap_grad_reduce, p.overlap_param_gather, p.tp_comm_overlap) == (True, True, True)
    assert (cfg.precision.linear_recipe, cfg.precision.fp8_param_gather, cfg.train.cuda_graph) == ("mxfp8", True, "layers")
    sapp = import_megatron(args, world_size=8, hardware="b200", profile="sapp-nd")
    assert "--overlap-grad-reduce" in sapp.not_modelled and "overlap_grad_reduce" not in sapp.data["parallel"]
    load_config(sapp.data)
    assert cfg.precision.bf16_layers_at_ends == (0, 0)  # no --first-last-layers-bf16
    args.write_text(args.read_text(encoding="utf-8") + " --first-last-layers-bf16 --num-layers-at-end-in-bf16 2",
                    encoding="utf-8")
    ends = load_config(import_megatron(args, world_size=8, hardware="b200").data).precision.bf16_layers_at_ends
    assert ends == (1, 2)  # Megatron's default 1 at the start
    args.write_text(args.read_text(encoding="utf-8") + " --cpu-offloading --cpu-offloading-num-layers 3",
                    encoding="utf-8")
    assert import_megatron(args, world_size=8, hardware="b200").data["train"]["cpu_offloading_num_layers"] == 3


def test_megatron_dispatcher_and_precision_aware_optimizer(tmp_path: Path) -> None:
    args = tmp_path / "args.txt"
    base = ("--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --vocab-size 32000 "
            "--num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 8 --use-distributed-optimizer ")
    args.write_text(base + "--moe-token-dispatcher-type flex --use-precision-aware-optimizer --exp-avg-dtype bf16 "
                    "--exp-avg-sq-dtype bf16 --main-grads-dtype bf16", encoding="utf-8")
    run = import_megatron(args, world_size=8, hardware="b200")
    cfg = load_config(run.data)
    assert (cfg.parallel.moe_token_dispatcher, cfg.precision.optimizer_states, cfg.precision.grads) == (
        "flex", "bf16", "bf16")
    assert run.warnings == [] and not run.not_modelled
    args.write_text(base.replace("--expert-model-parallel-size 8", "--expert-model-parallel-size 4")
                    + "--pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 "
                    "--no-overlap-p2p-communication", encoding="utf-8")
    assert load_config(import_megatron(args, world_size=8, hardware="b200").data).parallel.overlap_p2p_comm is False
    # Megatron-Core's default dispatcher (allgather) and fp8 moments: named as not modelled, nothing set
    args.write_text(base + "--use-precision-aware-optimizer --exp-avg-dtype fp8 --main-params-dtype fp16",
                    encoding="utf-8")
    run = import_megatron(args, world_size=8, hardware="b200")
    assert {"--moe-token-dispatcher-type", "--exp-avg-dtype", "--main-params-dtype"} <= set(run.not_modelled)
    assert "Megatron-Core default" in run.not_modelled["--moe-token-dispatcher-type"]
    assert "['fp32', 'fp8']" in run.not_modelled["--exp-avg-dtype"]
    cfg = load_config(run.data)
    assert (cfg.parallel.moe_token_dispatcher, cfg.precision.optimizer_states) == (None, None)
    # the dtype flags without the precision-aware optimizer change nothing: ignored with the reason
    args.write_text(base + "--exp-avg-dtype bf16", encoding="utf-8")
    run = import_megatron(args, world_size=8, hardware="b200")
    assert "precision-aware" in run.ignored["--exp-avg-dtype"] and run.warnings == []
    assert load_config(run.data).precision.optimizer_states is None


def test_mindspeed_lora_flags_import_as_an_adapter(tmp_path: Path) -> None:
    """MindSpeed-LLM's --lora-target-modules / --lora-r (legacy names mapped) -> adapter {kind: lora}; an unknown
    target is refused with the file and the flag."""
    path = tmp_path / "tune.sh"
    base = ("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --vocab-size 32000 "
            "--tensor-model-parallel-size 2 --bf16 --finetune ")
    path.write_text(base + "--lora-r 8 --lora-alpha 16 --lora-target-modules query_key_value dense linear_fc1",
                    encoding="utf-8")
    cfg = load_config(import_megatron(path, world_size=8, hardware="h100-80g").data)
    assert (cfg.adapter.kind, cfg.adapter.rank) == ("lora", 8)
    assert sorted(cfg.adapter.target_modules) == ["linear_fc1", "linear_proj", "linear_qkv"]
    path.write_text(base + "--lora-target-modules linear_qkv", encoding="utf-8")
    assert load_config(import_megatron(path, world_size=8, hardware="h100-80g").data).adapter.rank == 16
    path.write_text(base + "--lora-target-modules q_proj", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        import_megatron(path, world_size=8)
    assert (info.value.field, info.value.file) == ("--lora-target-modules", str(path))


def test_torchtitan_2025_schema_tomls_import_without_unknown_keys() -> None:
    """torchtitan's last TOML schema (pytorch/torchtitan@238fa9953e, verbatim): local_batch_size, [parallelism],
    [compile], [quantize.linear.float8] with no converter (Float8 off), every key read or ignored."""
    small = import_torchtitan(DATA / "torchtitan" / "llama3_8b_2025.toml", world_size=8, hardware="h100-80g")
    assert not small.warnings, small.warnings
    cfg = load_config(small.data)
    assert (cfg.train.micro_batch_size, cfg.train.num_micro_batches, cfg.train.seq_length) == (1, 1, 8192)
    assert (cfg.recompute.mode, cfg.recompute.selective_ac_option, cfg.precision.fp8_linear) == ("selective", "op",
                                                                                                 False)
    big = import_torchtitan(DATA / "torchtitan" / "llama3_70b_2025.toml", world_size=64, hardware="h100-80g")
    assert not big.warnings, big.warnings
    cfg = load_config(big.data)
    assert (cfg.parallel.tp, cfg.parallel.dp, cfg.train.micro_batch_size, cfg.recompute.mode) == (8, 8, 8, "full")


def _toml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "train.toml"
    path.write_text("[model]\nname = 'llama3'\nflavor = '8B'\n" + text, encoding="utf-8")
    return path


def test_torchtitan_2025_batch_float8_pipeline_and_reshard(tmp_path: Path) -> None:
    run = import_torchtitan(_toml(tmp_path, "converters = ['quantize.linear.float8']\n[training]\nlocal_batch_size = 2\n"
                                  "global_batch_size = 64\n[compile]\nenable = true\n[quantize.linear.float8]\n"
                                  "enable_fsdp_float8_all_gather = true\nrecipe_name = 'rowwise'\n"
                                  "filter_fqns = ['output']\n[parallelism]\nfsdp_reshard_after_forward = 'never'\n"),
                            world_size=8, hardware="h100-80g")
    cfg = load_config(run.data)
    # 64 = 2 local × 8 DP × 4 accumulation steps
    assert (cfg.train.micro_batch_size, cfg.train.num_micro_batches) == (2, 4)
    assert (cfg.precision.fp8_linear, cfg.precision.linear_recipe, cfg.precision.fsdp_float8_all_gather) == (
        True, "torchao_rowwise", True)
    assert cfg.options.torch_compile and cfg.parallel.fsdp_reshard_after_forward is False and not run.warnings
    piped = load_config(import_torchtitan(_toml(tmp_path, "[training]\nlocal_batch_size = 8\n[parallelism]\n"
                                                "pipeline_parallel_degree = 2\npipeline_parallel_microbatch_size = 2\n"
                                                "pipeline_parallel_schedule = 'GPipe'\n"), world_size=8,
                                             hardware="h100-80g").data)
    assert (piped.parallel.pp, piped.parallel.schedule, piped.train.micro_batch_size, piped.train.num_micro_batches) \
        == (2, "gpipe", 2, 4)


@pytest.mark.parametrize(("text", "key", "words"), [
    ("converters = ['quantize.linear.mx']\n", "model.converters", "MX linear"),
    ("converters = ['quantize.grouped_mm.float8']\n", "model.converters", "MoE"),
    ("[training]\ndtype = 'bfloat16'\n", "training.dtype", "no fp32 master"),
    ("[activation_checkpoint]\nmode = 'memory_budget'\n", "activation_checkpoint.mode", "memory_budget"),
    ("[training]\nlocal_batch_size = 3\nglobal_batch_size = 32\n", "training.global_batch_size", "multiple"),
    ("[parallelism]\nexpert_parallel_degree = 2\n", "parallelism.expert_parallel_degree", "dense"),
    ("[parallelism]\ntensor_parallel_degree = 2\ndisable_loss_parallel = true\n", "parallelism.disable_loss_parallel",
     "vocabulary-parallel"),
    ("[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = 'ZBVZeroBubble'\n",
     "parallelism.pipeline_parallel_schedule", "not modelled"),
    ("converters = ['float8']\n[quantize.linear.float8]\nrecipe_name = 'rowwise_with_gw_hp'\n",
     "quantize.linear.float8.recipe_name", "not modelled"),
])
def test_torchtitan_2025_settings_it_does_not_model_are_refused(tmp_path: Path, text: str, key: str,
                                                                words: str) -> None:
    with pytest.raises(ConfigError) as info:
        import_torchtitan(_toml(tmp_path, text), world_size=8)
    assert info.value.field == key and words in info.value.rule, info.value


def test_torchtitan_tp_is_sequence_parallel_in_the_importer_and_for_measured_rows(measured_dir: Path) -> None:
    """torchtitan's TP plan shards the norms and block outputs by sequence (apply_tp): the 70B preset at TP 8
    imports sequence-parallel, and a torchtitan row at TP > 1 whose cell says false is read so, recorded in
    ``model.assumed`` (off with ``row_rules=False``)."""
    run = import_torchtitan(DATA / "torchtitan" / "llama3_70b_2025.toml", world_size=64, hardware="h100-80g")
    assert run.data["parallel"]["sequence_parallel"] is True
    row = dict(_rows(measured_dir, "torchtitan_llama3_h100_202412")[
        "torchtitan_llama3_h100_202412__t1__8B__FSDP__max_reserved"])
    assert row["sequence_parallel"] == "false"
    row.update(tp="2", dp="4")  # a SYNTHETIC TP 2 variant of the row
    config = config_from_measured_row(row)
    assert config["parallel"]["sequence_parallel"] is True
    assert "framework parallel.sequence_parallel" in config["model"]["assumed"]
    assert config_from_measured_row(row, row_rules=False)["parallel"].get("sequence_parallel") is False


@pytest.mark.parametrize(("text", "key"), [
    ("[training]\ndata_parallel_replicate_degree = 2\n", "training.data_parallel_replicate_degree"),
    ("[experimental]\npipeline_parallel_degree = 0\n", "experimental.pipeline_parallel_degree"),
    ("[parallelism]\ndata_parallel_replicate_degree = 2\n", "parallelism.data_parallel_replicate_degree"),
    ("[training]\nglobal_batch_size = 0\n", "training.global_batch_size"),
])
def test_torchtitan_errors_name_the_key_where_the_file_holds_it(tmp_path: Path, text: str, key: str) -> None:
    """A 2024 file keeps the degrees under [training] / [experimental]; the error names that table."""
    with pytest.raises(ConfigError) as info:
        import_torchtitan(_toml(tmp_path, text), world_size=8)
    assert info.value.field == key


def test_torchtitan_float8_tensorwise_tp_gathers_float8() -> None:
    """The 70B preset at TP 8 with the float8 converter: tensorwise Float8 halves the TP all-gathers' bytes
    (torchtitan's Float8ColwiseParallel / Float8RowwiseParallel), rowwise keeps them high-precision; the switch
    ``options.quantized_tp_gather`` off restores the BF16 bytes."""
    import estimator

    run = import_torchtitan(DATA / "torchtitan" / "llama3_70b_2025.toml", world_size=64, hardware="h100-80g")
    fp8 = ["precision.fp8_linear=true"]

    def mp(*extra: str) -> float:
        return estimator.estimate_perf(load_config(run.data, [*fp8, *extra])).perf_parts["MP_COMM"]

    tensorwise, rowwise = mp(), mp("precision.linear_recipe=torchao_rowwise")
    assert 0 < tensorwise < rowwise
    assert mp("options.quantized_tp_gather=false") > tensorwise


def test_torchtitan_new_converter_name_keeps_bf16_tp_gathers(tmp_path: Path) -> None:
    """At 238fa9953e torchtitan enables its float8 TP plan on `"float8" in model.converters`: the older converter
    name gathers float8, the 2025 name 'quantize.linear.float8' alone gathers bf16 (the Float8Linear GEMMs stay FP8)."""
    def imported(name: str) -> dict[str, Any]:
        text = f"converters = ['{name}']\n[parallelism]\ntensor_parallel_degree = 2\n"
        return import_torchtitan(_toml(tmp_path, text), world_size=8).data

    assert "quantized_tp_gather" not in imported("float8").get("options", {})
    new = imported("quantize.linear.float8")
    assert new["options"]["quantized_tp_gather"] is False and new["precision"]["fp8_linear"] is True


@pytest.mark.parametrize(("flavor", "published"), [("0.6B", 0.6e9), ("1.7B", 1.7e9), ("4B", 4.0e9), ("8B", 8.2e9),
                                                   ("14B", 14.8e9), ("32B", 32.8e9)])
def test_torchtitan_qwen3_dense_flavours_give_the_published_sizes(tmp_path: Path, flavor: str,
                                                                   published: float) -> None:
    """torchtitan's qwen3 flavours (torchtitan@238fa9953e qwen3_args) against the Qwen3 model cards' parameter counts
    (0.6B, 1.7B, 4.0B, 8.2B, 14.8B, 32.8B; one decimal: within 2 %), q/k norms, tied below 8B; TP is sequence-
    parallel as for llama3; a MoE flavour is refused naming the expert-parallel mesh."""
    from estimator.inputs.params import param_counts

    path = tmp_path / "train.toml"
    path.write_text(f"[model]\nname = 'qwen3'\nflavor = '{flavor}'\n[parallelism]\ntensor_parallel_degree = 2\n",
                    encoding="utf-8")
    run = import_torchtitan(path, world_size=8, hardware="h100-80g")
    cfg = load_config(run.data)
    assert cfg.model.qk_norm and cfg.parallel.sequence_parallel
    assert cfg.model.tied_embeddings == (flavor in ("0.6B", "1.7B", "4B"))
    assert abs(param_counts(cfg.model).total / published - 1) <= 0.02
    path.write_text("[model]\nname = 'qwen3'\nflavor = '30B-A3B'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="expert-parallel mesh"):
        import_torchtitan(path, world_size=8)


def test_megatron_flags_of_the_current_release_are_read_ignored_or_named(tmp_path: Path) -> None:
    """Flags of Megatron-LM@d98e8a64dd arguments.py: --recompute-activations is selective recompute,
    --no-position-embedding none, --cuda-graph-impl full_iteration a whole-iteration graph; --checkpoint-activations
    is refused (Megatron exits on it); inference / RL flags are ignored, a flag read only with another says so, and
    flags that change memory or time without a model are named; none is an unknown flag."""
    base = ("--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000 "
            "--micro-batch-size 1 --global-batch-size 8 ")
    path = tmp_path / "args.txt"
    path.write_text(base + "--recompute-activations --no-position-embedding --cuda-graph-impl full_iteration "
                    "--inference-max-requests 8 --rl-use-sequence-packing --fp8-param-gather "
                    "--num-distributed-optimizer-instances 2 --muon-num-ns-steps 6", encoding="utf-8")
    run = import_megatron(path, world_size=8)
    assert not run.warnings, run.warnings
    data = run.data
    assert (data["recompute"]["mode"], data["model"]["position_embedding"], data["train"]["cuda_graph"]) == (
        "selective", "none", "full_iteration")
    assert "--inference-max-requests" in run.ignored and "--fp8-format" in run.ignored["--fp8-param-gather"]
    assert {"--num-distributed-optimizer-instances", "--muon-num-ns-steps"} <= set(run.not_modelled)
    path.write_text(base + "--checkpoint-activations", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        import_megatron(path, world_size=8)
    assert info.value.field == "--checkpoint-activations" and "--recompute-activations" in info.value.rule
