"""torchtitan job TOML -> a run configuration (profile ``fsdp2``).

Read: ``[model] name, flavor`` (dimensions from the flavour table torchtitan ships,
:data:`FLAVORS`), ``[training] batch_size, seq_len, data_parallel_shard_degree,
data_parallel_replicate_degree, tensor_parallel_degree, compile``, ``[experimental]`` (or
``[parallelism]``) ``context_parallel_degree, pipeline_parallel_degree, enable_async_tensor_parallel``, ``[activation_checkpoint]
mode, selective_ac_option`` and ``[float8] enable_float8_linear, enable_fsdp_float8_all_gather,
recipe_name``.
Every other key is ignored with a reason or reported as unknown.
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
#: sections whose keys never change memory or time (logging, checkpointing, data, optimizer schedule)
IGNORED_SECTIONS = ("job", "profiling", "metrics", "checkpoint", "optimizer", "comm", "memory_estimation",
                    "lr_scheduler", "validation", "fault_tolerance")
IGNORED_TRAINING = ("warmup_steps", "max_norm", "steps", "dataset", "dataset_path", "seed", "deterministic",
                    "gc_freq")
#: FSDP2 parameter dtype (torchtitan ``training.mixed_precision_param``, default bfloat16) -> precision.compute
PARAM_DTYPES = {"bfloat16": "bf16", "float32": "fp32"}
#: torchtitan ``float8.recipe_name`` -> precision.linear_recipe (torchao recipes)
FLOAT8_RECIPES = {"tensorwise": "torchao_tensorwise", "rowwise": "torchao_rowwise"}
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


def _model(out: Imported, file: str, model: dict[str, Any]) -> None:
    name, flavor = str(model.get("name", "llama3")), str(model.get("flavor", ""))
    if (name, flavor) not in FLAVORS:
        known = ", ".join(f"{n} {f}" for n, f in FLAVORS)
        raise bad(file, "model.flavor", f"unknown model {name!r} flavour {flavor!r}; known: {known}")
    dim, layers, heads, kv, mult, multiple = FLAVORS[(name, flavor)]
    src = f"[model] {name} {flavor}: torchtitan@9dec370 llama3_configs"
    for field, value in (("name", f"{name}-{flavor.lower()}"), ("num_layers", layers), ("hidden_size", dim),
                         ("num_attention_heads", heads), ("num_kv_heads", kv), ("head_dim", dim // heads),
                         ("attention", "gqa"),
                         ("ffn_hidden_size", llama_ffn(dim, mult, multiple)), ("vocab_size", LLAMA3_VOCAB),
                         ("tied_embeddings", False), ("activation", "swiglu"), ("norm", "rmsnorm"),
                         ("position_embedding", "rope")):
        out.put(f"model.{field}", value, src)
    norm = model.get("norm_type", "rmsnorm")
    if norm not in ("rmsnorm", "fused_rmsnorm"):
        raise bad(file, "model.norm_type", f"{norm!r} is not modelled for llama3 (rmsnorm, fused_rmsnorm)")


def _degree(file: str, section: dict[str, Any], key: str, where: str) -> int:
    return as_int(file, f"{where}.{key}", section.get(key, 1))


def _parallel(out: Imported, file: str, doc: dict[str, Any], world: int | None) -> None:
    training = doc.get("training", {})
    par = {**doc.get("experimental", {}), **doc.get("parallelism", {}), **training}
    tp = _degree(file, par, "tensor_parallel_degree", "training")
    cp = _degree(file, par, "context_parallel_degree", "experimental")
    pp = _degree(file, par, "pipeline_parallel_degree", "experimental")
    replicate = _degree(file, par, "data_parallel_replicate_degree", "training")
    if replicate != 1:
        raise bad(file, "training.data_parallel_replicate_degree", "HSDP (replicate > 1) is not modelled: must be 1")
    shard = as_int(file, "training.data_parallel_shard_degree", par.get("data_parallel_shard_degree", -1), minimum=-1)
    if shard == -1:
        if world is None:
            raise bad(file, "training.data_parallel_shard_degree", "-1 (the rest of the GPUs) needs the world "
                      "size: pass it (ndval import --world-size N)")
        if world % (tp * cp * pp):
            raise bad(file, "world size", f"{world} GPUs is not a multiple of tp·cp·pp = {tp * cp * pp}")
        shard = world // (tp * cp * pp)
    elif shard == 0:
        raise bad(file, "training.data_parallel_shard_degree", "must be -1 or ≥ 1")
    for field, value, key in (("tp", tp, "tensor_parallel_degree"), ("pp", pp, "pipeline_parallel_degree"),
                              ("cp", cp, "context_parallel_degree"), ("dp", shard, "data_parallel_shard_degree")):
        out.put(f"parallel.{field}", value, key)
    out.put("parallel.distributed_optimizer", True, "FSDP2 shards parameters, gradients and optimizer states")
    if "enable_async_tensor_parallel" in par:
        out.put("parallel.enable_async_tensor_parallel", as_bool(file, "parallelism.enable_async_tensor_parallel",
                par["enable_async_tensor_parallel"]), "enable_async_tensor_parallel")


def _train(out: Imported, file: str, doc: dict[str, Any]) -> None:
    training = doc.get("training", {})
    out.put("train.seq_length", as_int(file, "training.seq_len", training.get("seq_len", 2048)), "training.seq_len")
    out.put("train.micro_batch_size", as_int(file, "training.batch_size", training.get("batch_size", 8)),
            "training.batch_size (local batch; no gradient accumulation)")
    out.put("train.num_micro_batches", 1, "torchtitan@9dec370: one micro-batch per step without PP")
    ac = doc.get("activation_checkpoint", {})
    mode = str(ac.get("mode", "selective"))
    if mode not in ("none", "selective", "full"):
        raise bad(file, "activation_checkpoint.mode", f"{mode!r}: must be none, selective or full")
    out.put("recompute.mode", mode, "activation_checkpoint.mode")
    if mode == "selective":
        out.put("recompute.selective_ac_option", str(ac.get("selective_ac_option", "2")),
                "activation_checkpoint.selective_ac_option")
    f8 = doc.get("float8", {})
    fp8 = as_bool(file, "float8.enable_float8_linear", f8.get("enable_float8_linear", False))
    out.put("precision.fp8_linear", fp8, "float8.enable_float8_linear")
    recipe = f8.get("recipe_name")
    if fp8 and recipe is not None:
        if recipe not in FLOAT8_RECIPES:
            raise bad(file, "float8.recipe_name", f"{recipe!r} is not modelled ({', '.join(FLOAT8_RECIPES)})")
        out.put("precision.linear_recipe", FLOAT8_RECIPES[recipe], "float8.recipe_name (torchao Float8LinearConfig)")
    if fp8:
        out.put("precision.fsdp_float8_all_gather", as_bool(
            file, "float8.enable_fsdp_float8_all_gather", f8.get("enable_fsdp_float8_all_gather", False)),
            "float8.enable_fsdp_float8_all_gather")
    if as_bool(file, "training.enable_cpu_offload", training.get("enable_cpu_offload", False)):
        raise bad(file, "training.enable_cpu_offload", "FSDP2's CPUOffloadPolicy (sharded parameters, gradients and "
                  "optimizer states in host memory, the optimizer step on the CPU) is not modelled")
    param = str(training.get("mixed_precision_param", "bfloat16"))
    if param not in PARAM_DTYPES:
        raise bad(file, "training.mixed_precision_param", f"{param!r}: must be bfloat16 or float32")
    out.put("precision.compute", PARAM_DTYPES[param], "training.mixed_precision_param (FSDP2 MixedPrecisionPolicy "
            "param_dtype, torchtitan default bfloat16)")
    reduce = str(training.get("mixed_precision_reduce", "float32"))
    if reduce not in REDUCE_DTYPES:
        raise bad(file, "training.mixed_precision_reduce", f"{reduce!r}: must be float32 or bfloat16")
    out.put("precision.grads", REDUCE_DTYPES[reduce], "training.mixed_precision_reduce (torchtitan default float32)")
    out.put("options.torch_compile", as_bool(file, "training.compile", training.get("compile", False)),
            "training.compile")


#: keys read by the mappers above, per section
_READ = {
    "model": ("name", "flavor", "norm_type", "tokenizer_path"),
    "training": ("batch_size", "seq_len", "data_parallel_shard_degree", "data_parallel_replicate_degree",
                 "tensor_parallel_degree", "compile", "context_parallel_degree", "pipeline_parallel_degree",
                 "mixed_precision_reduce", "mixed_precision_param", "enable_cpu_offload"),
    "experimental": ("context_parallel_degree", "pipeline_parallel_degree", "enable_async_tensor_parallel"),
    "parallelism": ("context_parallel_degree", "pipeline_parallel_degree", "tensor_parallel_degree",
                    "data_parallel_shard_degree", "data_parallel_replicate_degree", "enable_async_tensor_parallel"),
    "activation_checkpoint": ("mode", "selective_ac_option"),
    "float8": ("enable_float8_linear", "enable_fsdp_float8_all_gather", "recipe_name"),
}


def _classify(out: Imported, doc: dict[str, Any]) -> None:
    unknown = []
    for section, body in doc.items():
        keys = body if isinstance(body, dict) else {section: body}
        for key in keys:
            dotted = f"{section}.{key}"
            if section in IGNORED_SECTIONS or (section == "training" and key in IGNORED_TRAINING):
                out.ignored[dotted] = "logging, checkpointing, data or optimizer schedule: no effect on memory/time"
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
    _model(out, file, doc.get("model", {}))
    _train(out, file, doc)
    _parallel(out, file, doc, world_size)
    if hardware is not None:
        out.put("hardware", hardware, "given hardware")
    _classify(out, doc)
    return out
