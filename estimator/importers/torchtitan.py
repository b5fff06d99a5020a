"""torchtitan job TOML -> a run configuration (profile ``fsdp2``).

Both TOML schemas torchtitan shipped are read: the 2024 one (pytorch/torchtitan@9dec370: ``[training] batch_size,
compile`` and the parallel degrees, ``[experimental]``, ``[float8] enable_float8_linear``) and the 2025 one, the last
before the Python config registry (pytorch/torchtitan@238fa9953e ``torchtitan/config/job_config.py``:
``[training] local_batch_size, global_batch_size, dtype``, ``[parallelism]`` degrees with
``fsdp_reshard_after_forward``, ``pipeline_parallel_schedule``, ``pipeline_parallel_microbatch_size`` and the expert
degrees, ``[compile] enable``, ``[model] converters`` with ``[quantize.linear.float8]``). Read: ``[model] name,
flavor`` (dimensions from the flavour tables torchtitan ships: llama3 :data:`FLAVORS`, dense qwen3
:data:`QWEN3_FLAVORS`), the batch (a ``global_batch_size``
above local × DP is gradient accumulation: more micro-batches), the degrees, ``[activation_checkpoint] mode,
selective_ac_option``, the Float8 linear settings (``enable_fsdp_float8_all_gather``, ``recipe_name``). Every
other key is ignored with a reason, refused with the rule (a setting that changes memory or time and is not
modelled), or reported as unknown.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from estimator.importers.common import Imported, as_bool, as_int, bad
from ndval.core.yamlsrc import read_regular_text

#: torchtitan flavours: pytorch/torchtitan@9dec370 torchtitan/models/llama/__init__.py ``llama3_configs``
#: (dim, n_layers, n_heads, n_kv_heads, ffn_dim_multiplier, multiple_of); vocab 128256 = the Llama 3
#: tokenizer (128,000 + 256 special tokens)
FLAVORS: dict[tuple[str, str], tuple[int, int, int, int, float, int]] = {
    ("llama3", "8B"): (4096, 32, 32, 8, 1.3, 1024),
    ("llama3", "70B"): (8192, 80, 64, 8, 1.3, 4096),
    ("llama3", "405B"): (16384, 126, 128, 8, 1.2, 4096),
}
LLAMA3_VOCAB = 128256
#: torchtitan's dense Qwen3 flavours: pytorch/torchtitan@238fa9953e torchtitan/models/qwen3/__init__.py
#: ``qwen3_args`` (dim, n_layers, n_heads, n_kv_heads, head_dim, hidden_dim, weight tying); vocab 151936, q/k norms
QWEN3_FLAVORS: dict[str, tuple[int, int, int, int, int, int, bool]] = {
    "0.6B": (1024, 28, 16, 8, 128, 3072, True),
    "1.7B": (2048, 28, 16, 8, 128, 6144, True),
    "4B": (2560, 36, 32, 8, 128, 9728, True),
    "8B": (4096, 36, 32, 8, 128, 12288, False),
    "14B": (5120, 40, 40, 8, 128, 17408, False),
    "32B": (5120, 64, 64, 8, 128, 25600, False),
}
QWEN3_VOCAB = 151936
#: sections whose keys never change memory or time (logging, checkpointing, data, optimizer schedule)
IGNORED_SECTIONS = ("job", "profiling", "metrics", "checkpoint", "optimizer", "comm", "memory_estimation",
                    "lr_scheduler", "validation", "fault_tolerance")
IGNORED_TRAINING = ("warmup_steps", "max_norm", "steps", "dataset", "dataset_path", "seed", "deterministic",
                    "gc_freq", "dataloader")
#: FSDP2 parameter dtype (torchtitan ``training.mixed_precision_param``, default bfloat16) -> precision.compute
PARAM_DTYPES = {"bfloat16": "bf16", "float32": "fp32"}
#: torchtitan ``float8.recipe_name`` -> precision.linear_recipe (torchao recipes)
FLOAT8_RECIPES = {"tensorwise": "torchao_tensorwise", "rowwise": "torchao_rowwise"}
#: torchtitan's tensor-parallel plan shards the norms and the blocks' outputs by sequence whenever TP > 1
TITAN_SP = ("torchtitan apply_tp: SequenceParallel on attention_norm / ffn_norm / norm, attention.wo and "
            "feed_forward.w2 output Shard(1) (pytorch/torchtitan@9dec370 torchtitan/parallelisms/parallelize_llama.py; "
            "the same plan at 238fa9953e torchtitan/models/llama3/infra/parallelize.py and models/qwen3/infra/parallelize.py)")
#: why torchtitan's blocks are PyTorch eager ops (estimator.perf.eager), and why the 2025 schema's norms are not
TITAN_EAGER = ("torchtitan's Llama 3 / Qwen3 blocks are plain PyTorch modules: complex RoPE (apply_rotary_emb), "
               "w2(F.silu(w1(x)) * w3(x)) (pytorch/torchtitan@9dec370 models/llama/model.py, the same at 238fa9953e); "
               "fused by options.torch_compile. The 2025 schema's nn.RMSNorm (torchtitan 3b39d7ab0, 2025-03-19) is "
               "priced as one kernel: PyTorch's fused rms_norm (pytorch/pytorch#153666)")
#: torchtitan ``model.converters`` that make the block linears Float8 (2025 name; the earlier ``float8``)
FLOAT8_CONVERTERS = ("float8", "quantize.linear.float8")
#: ``parallelism.fsdp_reshard_after_forward`` -> parallel.fsdp_reshard_after_forward (default: torchtitan's choice)
RESHARD: dict[str, bool | None] = {"default": None, "always": True, "never": False}
#: ``parallelism.pipeline_parallel_schedule`` -> parallel.schedule (single-stage-per-rank schedules)
PP_SCHEDULES = {"1F1B": "1f1b", "GPipe": "gpipe"}
#: FSDP2 reduce dtype (torchtitan ``training.mixed_precision_reduce``, default float32) -> precision.grads
REDUCE_DTYPES = {"float32": "fp32", "bfloat16": "bf16"}


def llama_ffn(dim: int, multiplier: float, multiple_of: int) -> int:
    """torchtitan ``FeedForward``: F = multiple_of·⌈multiplier·⌊2·4·dim/3⌋ / multiple_of⌉
    (pytorch/torchtitan@9dec370 torchtitan/models/llama/model.py)."""
    hidden = int(multiplier * int(2 * 4 * dim / 3))
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def _read(path: Path) -> dict[str, Any]:
    file = str(path)
    try:
        return tomllib.loads(read_regular_text(path))
    except OSError as exc:
        raise bad(file, "<file>", f"cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise bad(file, "<toml>", f"malformed TOML: {exc}") from None
    except ValueError as exc:  # a FIFO, a device or a folder (never read), or over the size bound
        raise bad(file, "<file>", str(exc)) from None


def _model(out: Imported, file: str, model: dict[str, Any], schema_2025: bool) -> None:
    name, flavor = str(model.get("name", "llama3")), str(model.get("flavor", ""))
    if name == "qwen3" and flavor in QWEN3_FLAVORS:
        dim, layers, heads, kv, head_dim, ffn, tied = QWEN3_FLAVORS[flavor]
        src = f"[model] qwen3 {flavor}: torchtitan@238fa9953e qwen3_args"
        vocab: int = QWEN3_VOCAB
    elif (name, flavor) in FLAVORS:
        dim, layers, heads, kv, mult, multiple = FLAVORS[(name, flavor)]
        head_dim, ffn, tied, vocab = dim // heads, llama_ffn(dim, mult, multiple), False, LLAMA3_VOCAB
        src = f"[model] {name} {flavor}: torchtitan@9dec370 llama3_configs"
    else:
        known = ", ".join([*(f"{n} {f}" for n, f in FLAVORS), *(f"qwen3 {f}" for f in QWEN3_FLAVORS)])
        rule = (" (torchtitan's MoE flavours need its expert-parallel mesh, not modelled)"
                if name in ("qwen3", "deepseek_v3", "llama4", "gpt_oss") else "")
        raise bad(file, "model.flavor", f"unknown model {name!r} flavour {flavor!r}{rule}; known: {known}")
    for field, value in (("name", f"{name}-{flavor.lower()}"), ("num_layers", layers), ("hidden_size", dim),
                         ("num_attention_heads", heads), ("num_kv_heads", kv), ("head_dim", head_dim),
                         ("attention", "gqa"), ("ffn_hidden_size", ffn), ("vocab_size", vocab),
                         ("tied_embeddings", tied), ("activation", "swiglu"), ("norm", "rmsnorm"),
                         ("position_embedding", "rope")):
        out.put(f"model.{field}", value, src)
    if name == "qwen3":
        out.put("model.qk_norm", True, src + " (qk_norm=True)")
    norm = model.get("norm_type", "rmsnorm")
    if norm not in ("rmsnorm", "fused_rmsnorm"):
        raise bad(file, "model.norm_type", f"{norm!r} is not modelled for {name} (rmsnorm, fused_rmsnorm)")
    out.put("train.eager_ops", True, TITAN_EAGER)
    if not schema_2025:
        out.put("train.eager_rmsnorm", norm == "rmsnorm", f"model.norm_type {norm!r}: " + (
            "torchtitan@9dec370 norms.py RMSNorm, its ATen ops one by one" if norm == "rmsnorm"
            else "the Triton fused RMSNorm kernel"))


def _degree(file: str, doc: dict[str, Any], key: str) -> int:
    return as_int(file, _at(doc, key), _par(doc).get(key, 1))


def _section(doc: dict[str, Any], dotted: str) -> dict[str, Any]:
    """The TOML table at ``dotted`` (``quantize.linear.float8``), {} when absent."""
    node: Any = doc
    for part in dotted.split("."):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _par(doc: dict[str, Any]) -> dict[str, Any]:
    """The parallel keys of both schemas: ``[experimental]`` / ``[training]`` (2024), ``[parallelism]`` (2025)."""
    return {**doc.get("experimental", {}), **doc.get("training", {}), **doc.get("parallelism", {})}


def _at(doc: dict[str, Any], key: str) -> str:
    """``section.key`` where the file holds ``key`` (``[parallelism]``, else ``[training]`` or ``[experimental]`` of
    the 2024 schema), for errors that name the key where it stands; ``parallelism.key`` when absent."""
    section = next((name for name in ("parallelism", "training", "experimental") if key in doc.get(name, {})),
                   "parallelism")
    return f"{section}.{key}"


def _parallel(out: Imported, file: str, doc: dict[str, Any], world: int | None) -> tuple[int, int]:
    """The degrees; returns the data-parallel degree (replicate × shard) and the pipeline degree."""
    par = _par(doc)
    tp = _degree(file, doc, "tensor_parallel_degree")
    cp = _degree(file, doc, "context_parallel_degree")
    pp = _degree(file, doc, "pipeline_parallel_degree")
    replicate = _degree(file, doc, "data_parallel_replicate_degree")
    if replicate != 1:
        raise bad(file, _at(doc, "data_parallel_replicate_degree"), "HSDP (replicate > 1) is not modelled: must be 1")
    for key in ("expert_parallel_degree", "expert_tensor_parallel_degree"):
        if _degree(file, doc, key) != 1:
            raise bad(file, _at(doc, key), "must be 1: the torchtitan flavours ndval reads are dense")
    shard_key = _at(doc, "data_parallel_shard_degree")
    shard = as_int(file, shard_key, par.get("data_parallel_shard_degree", -1), minimum=-1)
    if shard == -1:
        if world is None:
            raise bad(file, shard_key, "-1 (the rest of the GPUs) needs the world "
                      "size: pass it (ndval import --world-size N)")
        if world % (tp * cp * pp):
            raise bad(file, "world size", f"{world} GPUs is not a multiple of tp·cp·pp = {tp * cp * pp}")
        shard = world // (tp * cp * pp)
    elif shard == 0:
        raise bad(file, shard_key, "must be -1 or ≥ 1")
    for field, value, key in (("tp", tp, "tensor_parallel_degree"), ("pp", pp, "pipeline_parallel_degree"),
                              ("cp", cp, "context_parallel_degree"), ("dp", shard, "data_parallel_shard_degree")):
        out.put(f"parallel.{field}", value, key)
    out.put("parallel.distributed_optimizer", True, "FSDP2 shards parameters, gradients and optimizer states")
    if tp > 1:
        out.put("parallel.sequence_parallel", True, TITAN_SP)
    if "enable_async_tensor_parallel" in par:
        out.put("parallel.enable_async_tensor_parallel", as_bool(file, _at(doc, "enable_async_tensor_parallel"),
                par["enable_async_tensor_parallel"]), "enable_async_tensor_parallel")
    reshard = str(par.get("fsdp_reshard_after_forward", "default"))
    if reshard not in RESHARD:
        raise bad(file, "parallelism.fsdp_reshard_after_forward", f"{reshard!r}: must be default, always or never")
    if RESHARD[reshard] is not None:
        out.put("parallel.fsdp_reshard_after_forward", RESHARD[reshard], "parallelism.fsdp_reshard_after_forward")
    if tp > 1 and as_bool(file, "parallelism.disable_loss_parallel", par.get("disable_loss_parallel", False)):
        raise bad(file, "parallelism.disable_loss_parallel", "true gathers the whole vocabulary's logits on every TP "
                  "rank before the loss; ndval models the vocabulary-parallel loss (torchtitan's default, false)")
    if pp > 1:
        schedule = str(par.get("pipeline_parallel_schedule", "1F1B"))
        if schedule not in PP_SCHEDULES:
            raise bad(file, "parallelism.pipeline_parallel_schedule", f"{schedule!r} is not modelled "
                      f"({', '.join(PP_SCHEDULES)})")
        out.put("parallel.schedule", PP_SCHEDULES[schedule], "parallelism.pipeline_parallel_schedule")
        for key in ("pipeline_parallel_split_points", "pipeline_parallel_layers_per_stage",
                    "module_fqns_per_model_part"):
            if par.get(key):
                out.not_modelled[f"parallelism.{key}"] = "ndval splits the layers evenly over the stages"
    return shard, pp


def _batch(out: Imported, file: str, doc: dict[str, Any], dp: int, pp: int) -> None:
    """Micro-batch size and count: ``local_batch_size`` (2024: ``batch_size``) per rank, in PP micro-batches of
    ``pipeline_parallel_microbatch_size``, times the gradient-accumulation steps ``global_batch_size / (local ×
    DP)`` (torchtitan ``train.py``; ``global_batch_size`` -1 = local × DP, no accumulation)."""
    training, par = doc.get("training", {}), _par(doc)
    key = "local_batch_size" if "local_batch_size" in training else "batch_size"
    local = as_int(file, f"training.{key}", training.get(key, 8))
    accum = 1
    glob = as_int(file, "training.global_batch_size", training.get("global_batch_size", -1), minimum=-1)
    if glob == 0:
        raise bad(file, "training.global_batch_size", "must be -1 (local_batch_size × DP) or a multiple of it")
    if glob != -1:
        if glob % (local * dp):
            raise bad(file, "training.global_batch_size", f"{glob} must be a multiple of local_batch_size × DP = "
                      f"{local} × {dp}")
        accum = glob // (local * dp)
    micro, chunks = local, 1
    if pp > 1:
        micro = as_int(file, "parallelism.pipeline_parallel_microbatch_size",
                       par.get("pipeline_parallel_microbatch_size", 1))
        if local % micro:
            raise bad(file, "parallelism.pipeline_parallel_microbatch_size", f"{micro} must divide the local batch "
                      f"{local}")
        chunks = local // micro
    out.put("train.micro_batch_size", micro, f"training.{key}" + (" / pipeline_parallel_microbatch_size"
                                                                  if chunks > 1 or micro != local else ""))
    out.put("train.num_micro_batches", chunks * accum, "PP micro-batches × gradient-accumulation steps "
            f"({chunks} × {accum}; global_batch_size / (local × DP))")


def _float8(out: Imported, file: str, doc: dict[str, Any]) -> None:
    """Float8 linear layers: the 2024 ``[float8] enable_float8_linear``, or a ``float8`` /
    ``quantize.linear.float8`` model converter with ``[quantize.linear.float8]`` (2025)."""
    converters = {str(c) for c in doc.get("model", {}).get("converters", [])}
    for name in sorted(converters - set(FLOAT8_CONVERTERS)):
        rule = ("torchao MX linear layers are not modelled (Transformer Engine's MXFP8 is, for Megatron runs)"
                if ".mx" in name or name == "mx" else "grouped-GEMM converters are for MoE models; the flavours "
                "ndval reads are dense" if "grouped_mm" in name else "this model converter is not modelled")
        raise bad(file, "model.converters", f"{name!r}: {rule}")
    legacy, table = doc.get("float8", {}), _section(doc, "quantize.linear.float8")
    settings, where = {**legacy, **table}, "quantize.linear.float8" if table else "float8"
    fp8 = bool(converters) or as_bool(file, "float8.enable_float8_linear", legacy.get("enable_float8_linear", False))
    out.put("precision.fp8_linear", fp8, "model.converters / float8.enable_float8_linear")
    recipe = settings.get("recipe_name")
    if fp8 and recipe is not None:
        if recipe not in FLOAT8_RECIPES:
            raise bad(file, f"{where}.recipe_name", f"{recipe!r} is not modelled ({', '.join(FLOAT8_RECIPES)})")
        out.put("precision.linear_recipe", FLOAT8_RECIPES[recipe], "float8.recipe_name (torchao Float8LinearConfig)")
    if fp8 and _degree(file, doc, "tensor_parallel_degree") > 1 and "float8" not in converters and converters:
        out.put("options.quantized_tp_gather", False, "model.converters names only 'quantize.linear.float8': "
                "torchtitan's parallelize_llama tests `\"float8\" in model.converters` for its float8 TP plan "
                "(pytorch/torchtitan@238fa9953e torchtitan/models/llama3/infra/parallelize.py), so TP gathers in bf16")
    if fp8:
        out.put("precision.fsdp_float8_all_gather", as_bool(
            file, f"{where}.enable_fsdp_float8_all_gather", settings.get("enable_fsdp_float8_all_gather", False)),
            f"{where}.enable_fsdp_float8_all_gather")
        skipped = [f for f in settings.get("filter_fqns", []) if f != "output"]
        if skipped:
            out.not_modelled[f"{where}.filter_fqns"] = (f"{skipped}: these linears stay bf16 in the run; "
                                                                    "ndval prices every block linear in Float8")


def _train(out: Imported, file: str, doc: dict[str, Any]) -> None:
    training = doc.get("training", {})
    out.put("train.seq_length", as_int(file, "training.seq_len", training.get("seq_len", 2048)), "training.seq_len")
    ac = doc.get("activation_checkpoint", {})
    mode = str(ac.get("mode", "selective"))
    if mode not in ("none", "selective", "full"):
        raise bad(file, "activation_checkpoint.mode", f"{mode!r}: must be none, selective or full (memory_budget, "
                  "torch.compile's min-cut under a budget, is not modelled)")
    out.put("recompute.mode", mode, "activation_checkpoint.mode")
    if mode == "selective":
        out.put("recompute.selective_ac_option", str(ac.get("selective_ac_option", "2")),
                "activation_checkpoint.selective_ac_option")
    _float8(out, file, doc)
    if as_bool(file, "training.enable_cpu_offload", training.get("enable_cpu_offload", False)):
        raise bad(file, "training.enable_cpu_offload", "FSDP2's CPUOffloadPolicy (sharded parameters, gradients and "
                  "optimizer states in host memory, the optimizer step on the CPU) is not modelled")
    if str(training.get("dtype", "float32")) != "float32":
        raise bad(file, "training.dtype", f"{training.get('dtype')!r}: pure low-precision training (parameters, "
                  "gradients and optimizer states in that dtype, no fp32 master copy) is not modelled; float32 is")
    param = str(training.get("mixed_precision_param", "bfloat16"))
    if param not in PARAM_DTYPES:
        raise bad(file, "training.mixed_precision_param", f"{param!r}: must be bfloat16 or float32")
    out.put("precision.compute", PARAM_DTYPES[param], "training.mixed_precision_param (FSDP2 MixedPrecisionPolicy "
            "param_dtype, torchtitan default bfloat16)")
    reduce = str(training.get("mixed_precision_reduce", "float32"))
    if reduce not in REDUCE_DTYPES:
        raise bad(file, "training.mixed_precision_reduce", f"{reduce!r}: must be float32 or bfloat16")
    out.put("precision.grads", REDUCE_DTYPES[reduce], "training.mixed_precision_reduce (torchtitan default float32)")
    compile_ = doc.get("compile", {})
    key, value = (("compile.enable", compile_.get("enable", False)) if "compile" in doc
                  else ("training.compile", training.get("compile", False)))
    out.put("options.torch_compile", as_bool(file, key, value), key)


#: keys read by the mappers above, per (dotted) section
_READ = {
    "model": ("name", "flavor", "norm_type", "tokenizer_path", "converters"),
    "training": ("batch_size", "local_batch_size", "global_batch_size", "seq_len", "data_parallel_shard_degree",
                 "data_parallel_replicate_degree", "tensor_parallel_degree", "compile", "context_parallel_degree",
                 "pipeline_parallel_degree", "mixed_precision_reduce", "mixed_precision_param", "enable_cpu_offload",
                 "dtype"),
    "experimental": ("context_parallel_degree", "pipeline_parallel_degree", "enable_async_tensor_parallel"),
    "parallelism": ("context_parallel_degree", "pipeline_parallel_degree", "tensor_parallel_degree",
                    "data_parallel_shard_degree", "data_parallel_replicate_degree", "enable_async_tensor_parallel",
                    "fsdp_reshard_after_forward", "pipeline_parallel_schedule", "pipeline_parallel_microbatch_size",
                    "expert_parallel_degree", "expert_tensor_parallel_degree", "pipeline_parallel_split_points",
                    "pipeline_parallel_layers_per_stage", "module_fqns_per_model_part", "disable_loss_parallel"),
    "activation_checkpoint": ("mode", "selective_ac_option"),
    "float8": ("enable_float8_linear", "enable_fsdp_float8_all_gather", "recipe_name", "filter_fqns"),
    "quantize.linear.float8": ("enable_fsdp_float8_all_gather", "recipe_name", "filter_fqns"),
    "compile": ("enable",),
}
#: keys whose value changes neither memory nor time, with the reason
_IGNORED_KEYS = {
    "model.hf_assets_path": "where the tokenizer and weights are read from",
    "model.print_after_conversion": "logging",
    "compile.components": "which modules torch.compile compiles (the estimate's torch_compile switch is per run)",
    "compile.backend": "torch.compile's backend",
    **{f"{table}.precompute_float8_dynamic_scale_for_fsdp": "one all-reduce of amaxes per step instead of one per "
       "parameter: under 0.1 % of a step" for table in ("float8", "quantize.linear.float8")},
    **{f"{table}.emulate": "test-only emulation" for table in ("float8", "quantize.linear.float8")},
    "training.gc_debug": "Python GC debugging",
}


def _flat(doc: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """The TOML as dotted table -> its keys that are not tables (``quantize.linear.float8`` flattened; keys outside
    any table under "")."""
    out: dict[str, dict[str, Any]] = {}
    plain = {}
    for key, value in doc.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            plain[key] = value
    if plain:
        out[prefix.rstrip(".")] = plain
    return out


def _classify(out: Imported, doc: dict[str, Any]) -> None:
    unknown = []
    for section, body in _flat(doc).items():
        for key in body:
            dotted = f"{section}.{key}" if section else key
            if (section.split(".")[0] in IGNORED_SECTIONS or section == "training.dataloader"
                    or (section == "training" and key in IGNORED_TRAINING)):
                out.ignored[dotted] = "logging, checkpointing, data or optimizer schedule: no effect on memory/time"
            elif dotted in _IGNORED_KEYS:
                out.ignored[dotted] = _IGNORED_KEYS[dotted]
            elif key not in _READ.get(section, ()):
                unknown.append(dotted)
    out.unknown(unknown, "key")


def import_torchtitan(path: str | Path, *, world_size: int | None = None, hardware: Any = None) -> Imported:
    """A run configuration from a torchtitan train TOML (``world_size`` for ``data_parallel_shard_degree = -1``)."""
    path = Path(path)
    file = str(path)
    doc = _read(path)
    out = Imported(file=file)
    out.put("profile", "fsdp2", "torchtitan trains with FSDP2")
    _model(out, file, doc.get("model", {}), "parallelism" in doc)
    _train(out, file, doc)
    _batch(out, file, doc, *_parallel(out, file, doc, world_size))
    if hardware is not None:
        out.put("hardware", hardware, "given hardware")
    _classify(out, doc)
    return out
