"""Recipe facts of measured rows (estimator.experiments.recipe_notes) and the step of a throughput-only row;
the harness's refused-rows count (ndval.harness.assertions.values.RefusedRowsLe). Rows here are synthetic."""

from __future__ import annotations

from typing import Any

import pytest

import estimator
from estimator import search
from estimator.experiments import recipe_notes
from ndval.harness.assertions.values import REFUSED_PREFIX, RefusedRowsLe
from ndval.harness.results import RunResult
from tests.estimator.scalar_reference import EXAMPLES

NOTES = ("release '26.08' | tokens_per_s_per_gpu=6288 | recipe (pinned): x | recipe layout matches table (TP/PP) | "
         "fp8_recipe=mxfp8(fp8=e4m3,fp8_param_gather=true) | cuda_graph=transformer_engine(scope=[attn,moe_router]) | "
         "recompute=selective(mla_up_proj) | etp=1 | sequence_parallel=true | distributed_optimizer=true | "
         'pp_layout(list, 4 stages)="Et*2|t*2|t*2|tmL" | mtp_num_layers=1 | moe_a2a_overlap=true | dispatcher=flex(hybridep) | '
         "te_op_fuser=true | "
         "tp_comm_overlap=true [inactive: Bridge comm_overlap.py disables TP overlap when TP<2]")


def test_recipe_items_parse_keys_with_a_parenthesised_tail() -> None:
    items = recipe_notes.recipe_items(NOTES)
    assert items["pp_layout"] == '"Et*2|t*2|t*2|tmL"' and items["etp"] == "1"
    assert items["cuda_graph"].startswith("transformer_engine") and "recipe layout matches table (TP/PP)" not in items


@pytest.mark.parametrize(("text", "items", "recipe"), [
    ("mxfp8", {}, "mxfp8"), ("fp8-mx", {}, "mxfp8"), ("fp8-cs", {}, "tensorwise"), ("nvfp4", {}, "nvfp4"),
    ("fp8", {"fp8_recipe": "tensorwise(fp8=hybrid)"}, "tensorwise"), ("bf16", {"fp8_recipe": "none(bf16 mixed)"}, None),
    ("fp8 (32x32 quantization granularity per table footnote)", {}, "mxfp8"),
    ("fp8-sc", {}, "blockwise"), ("fp8", {"fp8_recipe": "blockwise(fp8=hybrid,fp8_param_gather=false)"}, "blockwise"),
    ("fp8-ds", {}, "delayed"), ("fp8", {"fp8_recipe": "delayed(fp8=hybrid)"}, "delayed"),
])
def test_precision_recipe(text: str, items: dict[str, str], recipe: str | None) -> None:
    assert recipe_notes.precision_recipe(text, items)[0] == recipe


def test_subchannel_fp8_row_prices_blockwise_on_hopper() -> None:
    """A synthetic H100 row in Bridge's FP8-SC form (``compute_dtype fp8_sc``: TE Float8BlockScaling) takes the
    blockwise recipe, not the per-tensor default: 1 B + 4/128 B of scales per element, two copies on Hopper."""
    from estimator.experiments.measured import config_from_measured_row
    from estimator.inputs.recipes import on_device, stored_recipe

    from .test_config_measured_rows import SYNTHETIC_ROW

    row = {**SYNTHETIC_ROW, "precision": "FP8-SC", "notes": "recipe (pinned): x | fp8_recipe=blockwise(fp8=hybrid)"}
    cfg = estimator.load_config(config_from_measured_row(row))
    assert cfg.precision.linear_recipe == "blockwise" and cfg.hardware.name == "h100-80g"
    recipe = stored_recipe(cfg)
    assert recipe is not None and on_device(recipe, cfg).stored_bytes * on_device(recipe, cfg).copies == 2 * (1 + 4 / 128)
    assert estimator.estimate_perf(cfg).total > 0


def test_apply_recipe_items_sets_and_cites() -> None:
    config: dict[str, Any] = {"profile": "megatron", "model": {"num_experts": 8, "source_facts": {}, "assumed": {}},
                              "train": {}, "parallel": {"tp": 2, "pp": 4}, "recompute": {}}
    recipe_notes.apply_recipe_items({"notes": NOTES, "mtp_layers": ""}, config)
    assert config["train"]["cuda_graph"] == "layers"
    assert config["recompute"] == {"mode": "selective", "modules": ["mla_up_proj"]}
    p = config["parallel"]
    assert (p["etp"], p["sequence_parallel"], p["distributed_optimizer"]) == (1, True, True)
    assert p["pipeline_layout"] == "Et*2|t*2|t*2|tmL" and config["model"]["mtp_layers"] == 1
    assert config["model"]["source_facts"]["train.cuda_graph"].startswith("notes: cuda_graph=")
    assert p["overlap_moe_expert_parallel_comm"] is True and p["tp_comm_overlap"] is False  # the recipe's overlap switch, priced by the overlap model
    assert p["moe_token_dispatcher"] == "flex"  # priced: one copy per destination rank (comm.ep_dispatch_tokens_flex)
    assert config["model"]["source_facts"]["parallel.moe_token_dispatcher"] == "notes: dispatcher=flex(hybridep)"
    assert "dispatcher" not in config["model"]["assumed"].get("recipe_items", "")
    assert config["train"]["te_op_fuser"] is True  # priced: the experts' casts and GEMMs as one kernel each


@pytest.mark.parametrize("kind", ["a2a", "p2p"])
def test_cp_comm_type_item_is_read(kind: str) -> None:
    config: dict[str, Any] = {"profile": "megatron", "model": {"num_experts": 0, "source_facts": {}, "assumed": {}},
                              "train": {}, "parallel": {"tp": 1, "pp": 1, "cp": 2}, "recompute": {}}
    recipe_notes.apply_recipe_items({"notes": f"release 'x' | cp_comm_type={kind}", "mtp_layers": ""}, config)
    assert config["parallel"]["cp_comm_type"] == kind
    assert config["model"]["source_facts"]["parallel.cp_comm_type"] == f"notes: cp_comm_type={kind}"


def test_a_sink_attention_row_under_cp_runs_ulysses_as_its_recipe_does() -> None:
    """A GPT-OSS row (attention sinks) at cp 2 without a cp_comm_type item takes Bridge's recipe value a2a (the only
    CP that TE runs a learnable softmax with), cited; an item given wins."""
    def config(notes: str) -> dict[str, Any]:
        out: dict[str, Any] = {"profile": "megatron", "model": {"num_experts": 8, "attention_sinks": True,
                                                                 "source_facts": {}, "assumed": {}},
                               "train": {}, "parallel": {"tp": 1, "pp": 1, "cp": 2}, "recompute": {}}
        recipe_notes.apply_recipe_items({"notes": notes, "mtp_layers": ""}, out)
        return out

    plain = config("release 'x' | etp=1")
    assert plain["parallel"]["cp_comm_type"] == "a2a"
    assert "gpt_oss" in plain["model"]["source_facts"]["parallel.cp_comm_type"]
    assert config("release 'x' | etp=1 | cp_comm_type=p2p")["parallel"]["cp_comm_type"] == "p2p"


def test_cp_comm_type_the_estimator_does_not_model_is_refused_by_field() -> None:
    """Megatron-Core's hierarchical 'a2a+p2p' is not modelled: the row is one ConfigError naming
    parallel.cp_comm_type, never priced as the ring; 'allgather' is (estimator.perf.comm)."""
    for kind, refused in (("a2a+p2p", True), ("allgather", False)):
        config: dict[str, Any] = {"profile": "megatron", "model": {"num_experts": 0, "source_facts": {},
                                                                   "assumed": {}},
                                  "train": {}, "parallel": {"tp": 1, "pp": 1, "cp": 2}, "recompute": {}}
        recipe_notes.apply_recipe_items({"notes": f"release 'x' | cp_comm_type={kind}", "mtp_layers": ""}, config)
        run = {**config, "model": {"ref": "models/llama3-8b.yaml"}, "train": {"seq_length": 8192},
               "parallel": {"tp": 1, "pp": 1, "cp": 2, "dp": 4, "cp_comm_type": config["parallel"]["cp_comm_type"]},
               "hardware": {"preset": "h100-80g", "devices": 8}}
        if refused:
            with pytest.raises(estimator.ConfigError) as info:
                estimator.load_config(run, base_dir=EXAMPLES)
            assert info.value.field == "parallel.cp_comm_type"
        else:
            assert estimator.load_config(run, base_dir=EXAMPLES).parallel.cp_comm_type == "allgather"


#: synthetic notes in an older release's form: namespaced keys, a labelled base-recipe item, a run-script list
OLD_FORM = ("release '25.09' | recipe (pinned): perf_matrix entries | cuda_graph=false | sequence_parallel=false | "
            "base recipe (src/megatron/bridge/recipes/x.py): tp_comm_overlap=true | ddp.overlap_grad_reduce=true | "
            "ddp.overlap_param_gather=false | distributed_optimizer=true | "
            "recompute=selective (yaml ConfigContainer.model.recompute_granularity) | "
            "run_script.py x branch for b200: use_tokendrop default=true (apply_moe_token_drop), moe_a2a_overlap=false, "
            "moe_shared_expert_overlap=true, recompute_modules=[mla_up_proj,mlp,moe_act], "
            "comm_overlap.overlap_grad_reduce=false, mtp_num_layers=1 (base recipe)")


def test_recipe_items_of_the_older_forms() -> None:
    """Labelled lists give their items; a namespaced key is read under its last name (the first stated wins:
    ddp.overlap_grad_reduce=true before comm_overlap.overlap_grad_reduce=false); commas inside brackets stay."""
    items = recipe_notes.recipe_items(OLD_FORM)
    assert items["tp_comm_overlap"] == "true" and items["overlap_grad_reduce"] == "true"
    assert items["overlap_param_gather"] == "false" and items["recompute_modules"] == "[mla_up_proj,mlp,moe_act]"
    assert items["moe_shared_expert_overlap"] == "true" and items["mtp_num_layers"] == "1 (base recipe)"
    assert "use_tokendrop default" not in items and "ddp.overlap_grad_reduce" in items


def test_apply_recipe_items_of_the_older_forms() -> None:
    """The older form is applied (no fp8_recipe item): overlap switches, the distributed optimizer, the
    run-script's recompute modules for a bare ``selective``; TP overlap is off without sequence parallelism
    (Megatron-Bridge comm_overlap.py); the namespaced keys read under their names are not listed as unpriced."""
    config: dict[str, Any] = {"profile": "megatron", "model": {"num_experts": 8, "source_facts": {}, "assumed": {}},
                              "train": {}, "parallel": {"tp": 2, "pp": 4}, "recompute": {}}
    recipe_notes.apply_recipe_items({"notes": OLD_FORM, "mtp_layers": ""}, config)
    p = config["parallel"]
    assert (p["overlap_grad_reduce"], p["overlap_param_gather"], p["distributed_optimizer"]) == (True, False, True)
    assert p["moe_shared_expert_overlap"] is True and p["overlap_moe_expert_parallel_comm"] is False
    assert p["tp_comm_overlap"] is False and p["sequence_parallel"] is False
    assert config["recompute"] == {"mode": "selective", "modules": ["mla_up_proj", "mlp", "moe_act"]}
    assert config["train"]["cuda_graph"] == "none" and config["model"]["mtp_layers"] == 1
    assert "overlap_grad_reduce" not in config["model"]["assumed"].get("recipe_items", "")
    bare = {**config, "recompute": {}}
    recipe_notes.apply_recipe_items({"notes": "cuda_graph=false | recompute=selective (comment)"}, bare)
    assert bare["recompute"] == {"mode": "selective", "modules": ["core_attn"]}  # Megatron's default list


def test_throughput_step_by_hand() -> None:
    """GBS 256 · seq 8192 / (6288 tokens/s/GPU · 64 GPUs) = 5.2112 s."""
    row = {"notes": NOTES, "global_batch_size": "256", "seq_length": "8192", "world_size": "64"}
    assert recipe_notes.throughput_step_ms(row) == pytest.approx(256 * 8192 / (6288 * 64) * 1000)
    assert recipe_notes.throughput_step_ms({**row, "notes": "no throughput"}) is None


def test_refused_rows_counted_with_reasons() -> None:
    table = [{"config": "a", "total_ms": 1.0}, {"config": "b", "not_evaluable": REFUSED_PREFIX + "model.x: rule"},
             {"config": "c", "not_evaluable": "column seq_length: not stated by the source"}]
    result = RunResult(table=table)
    zero = RefusedRowsLe(type="refused_rows_le", max=0).evaluate(result, None)  # type: ignore[arg-type]
    one = RefusedRowsLe(type="refused_rows_le", max=1).evaluate(result, None)  # type: ignore[arg-type]
    assert (zero.passed, one.passed, zero.observed) == (False, True, 1)
    assert zero.rows[0]["reason"] == "model.x: rule"


def test_batched_search_with_a_recipe_and_graphs_equals_the_scalar_path() -> None:
    base = estimator.load_config(EXAMPLES / "deepseek-v3-671b-h100.yaml",
                                 ["hardware.preset=b200", "precision.linear_recipe=mxfp8",
                                  "train.cuda_graph=layers"])
    space = {"parallel.tp": (2, 8), "parallel.pp": (8,), "parallel.ep": (8, 64), "train.micro_batch_size": (1, 2)}
    fast = search.search(base, 1024, space, top_k=None)
    slow = search.search(base, 1024, space, top_k=None, batched=False)
    assert [(c.key(), c.total_s, c.peak_mb) for c in fast.ranked] == [(c.key(), c.total_s, c.peak_mb) for c in slow.ranked]


@pytest.mark.parametrize(("notes", "case", "adapter"), [
    ("peft=lora(dim=16, target_modules=[linear_qkv, linear_proj])", "x",
     {"kind": "lora", "rank": 16, "target_modules": ["linear_qkv", "linear_proj"]}),
    ("section 'Fine-Tuning (LoRA) Performance'", "x", {"kind": "lora"}),
    ("", "mbridge__26.04_LLAMA3_70B_DGX-H100_FP8_LoRA", {"kind": "lora"}),
    ("MLA: q_lora none, kv_lora 512, q_lora_rank 1536", "x", None),  # MLA dims, not an adapter
    ("peft=none (SFT)", "x", None),
])
def test_a_row_naming_lora_trains_adapters(notes: str, case: str, adapter: dict[str, Any] | None) -> None:
    """A LoRA row gets ``adapter`` (rank / targets as stated, else Bridge's defaults, cited); a full-training row
    none. Synthetic rows."""
    config: dict[str, Any] = {"profile": "megatron", "model": {}, "parallel": {"tp": 1}, "train": {}}
    recipe_notes.apply_recipe_items({"case_id": case, "notes": notes}, config)
    assert config.get("adapter") == adapter
    if adapter is not None:
        assert "LoRA" in config["model"]["source_facts"]["adapter"]
        if "rank" not in adapter:
            assert "dim 32" in config["model"]["source_facts"]["adapter"]


@pytest.mark.parametrize(("techniques", "profile", "tp", "on"), [
    ("techniques: FSDP2, TP, torch.compile, Float8, AsyncTP", "fsdp2", 8, True),
    ("techniques: FSDP2, TP, torch.compile, Float8", "fsdp2", 8, False),
    ("techniques: FSDP2, torch.compile, async TP", "fsdp2", 1, False),  # no TP to overlap
    ("techniques: AsyncTP", "megatron", 8, False),  # torchtitan's switch, not Megatron's
])
def test_async_tp_from_the_techniques_item(techniques: str, profile: str, tp: int, on: bool) -> None:
    """torchtitan benchmark rows name AsyncTP among their techniques (synthetic rows)."""
    config: dict[str, Any] = {"profile": profile, "model": {}, "parallel": {"tp": tp}, "train": {}}
    recipe_notes.apply_recipe_items({"notes": f"Table 2, row 'x' | {techniques} | local batch size 16"}, config)
    assert config["parallel"].get("enable_async_tensor_parallel", False) is on
