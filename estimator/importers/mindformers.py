"""MindFormers YAML (``parallel_config``, ``recompute_config``, ``model.model_config``) -> a run
configuration with the ``sapp-nd`` profile (MindSpore on Ascend, SAPP-ND's users).

Read (MindFormers' LlamaConfig and TransformerOpParallelConfig names): ``parallel_config.data_parallel,
model_parallel, pipeline_stage, context_parallel, expert_parallel, micro_batch_num, use_seq_parallel``,
``runner_config.batch_size``, ``recompute_config.recompute, select_recompute``,
``parallel.enable_parallel_optimizer`` and the Llama-family ``model_config`` dimensions
(``hidden_size, num_layers, num_heads, n_kv_heads, intermediate_size`` or ``multiple_of`` /
``ffn_dim_multiplier``, ``vocab_size, seq_length, use_flash_attention, compute_dtype``). Top-level
sections that never change the estimate (runner, callbacks, optimizer, data) are ignored by name;
an unknown ``model_config`` key is a warning. MindSpeed-LLM launches Megatron-LM arguments: use
``--from-megatron`` with ``--profile sapp-nd`` for those.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from estimator.importers.common import Imported, as_bool, as_int, bad
from estimator.importers.torchtitan import llama_ffn
from ndval.core.yamlsrc import CaseError, read_plain

#: model_config types the importer maps (decoder-only Llama family)
MODEL_TYPES = ("LlamaConfig",)
#: model_config keys without effect on memory or time
IGNORED_MODEL_KEYS = frozenset((
    "type", "batch_size", "rms_norm_eps", "bos_token_id", "eos_token_id", "pad_token_id", "ignore_token_id",
    "layernorm_compute_type", "softmax_compute_type", "rotary_dtype", "param_init_type", "use_past",
    "pretrain_seqlen", "extend_method", "offset", "checkpoint_name_or_path", "repetition_penalty",
    "max_decode_length", "top_k", "top_p", "do_sample", "theta", "scaling_factor", "fine_grain_interleave",
    "use_past_shard", "is_dynamic", "qkv_concat", "use_rope_slice", "block_size", "num_blocks", "parallel_config",
    "embedding_init_type",
))
_MODEL_READ = frozenset(("hidden_size", "num_layers", "num_heads", "n_kv_heads", "intermediate_size", "multiple_of",
                         "ffn_dim_multiplier", "vocab_size", "seq_length", "use_flash_attention", "compute_dtype"))
_DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def _read(path: Path) -> dict[str, Any]:
    file = str(path)
    if not path.is_file():
        raise bad(file, "<file>", "cannot read: not a regular file or missing")
    try:  # the case loader's limits: aliases, depth, sizes, safe tags, a regular file
        data = read_plain(path)
    except CaseError as exc:
        if exc.rule.startswith("cannot read"):
            raise bad(file, "<file>", exc.rule) from None
        raise bad(file, "<yaml>", "malformed YAML" + (f" at line {exc.line}" if exc.line else "") + f": {exc.rule}") from None
    if not isinstance(data, dict) or not isinstance(data.get("parallel_config"), dict):
        raise bad(file, "parallel_config", "a MindFormers YAML needs a parallel_config mapping")
    return data


def _model(out: Imported, file: str, cfg: dict[str, Any]) -> int:
    kind = cfg.get("type")
    if kind not in MODEL_TYPES:
        raise bad(file, "model.model_config.type", f"{kind!r} is not mapped; known: {', '.join(MODEL_TYPES)}")
    h, layers = as_int(file, "model_config.hidden_size", cfg.get("hidden_size")), cfg.get("num_layers")
    heads = as_int(file, "model_config.num_heads", cfg.get("num_heads"))
    kv = as_int(file, "model_config.n_kv_heads", cfg.get("n_kv_heads") or heads)
    ffn = cfg.get("intermediate_size") or llama_ffn(h, float(cfg.get("ffn_dim_multiplier") or 1.0),
                                                    as_int(file, "model_config.multiple_of", cfg.get("multiple_of", 256)))
    for field, value, src in (
        ("num_layers", as_int(file, "model_config.num_layers", layers), "model_config.num_layers"),
        ("hidden_size", h, "model_config.hidden_size"), ("num_attention_heads", heads, "model_config.num_heads"),
        ("num_kv_heads", kv, "model_config.n_kv_heads (default num_heads)"),
        ("attention", "gqa" if kv < heads else "mha", "n_kv_heads < num_heads: gqa"),
        ("ffn_hidden_size", as_int(file, "model_config.intermediate_size", ffn),
         "model_config.intermediate_size, or Llama's rule from multiple_of / ffn_dim_multiplier"),
        ("vocab_size", as_int(file, "model_config.vocab_size", cfg.get("vocab_size")), "model_config.vocab_size"),
        ("tied_embeddings", False, "LlamaForCausalLM: untied lm_head"), ("activation", "swiglu", "Llama MLP"),
        ("norm", "rmsnorm", "Llama RMSNorm"), ("position_embedding", "rope", "Llama rotary embeddings"),
    ):
        out.put(f"model.{field}", value, src)
    out.unknown(sorted(k for k in cfg if k not in _MODEL_READ and k not in IGNORED_MODEL_KEYS), "model_config key")
    return as_int(file, "model_config.seq_length", cfg.get("seq_length"))


def _parallel(out: Imported, file: str, doc: dict[str, Any]) -> None:
    par = doc["parallel_config"]
    for field, key in (("dp", "data_parallel"), ("tp", "model_parallel"), ("pp", "pipeline_stage"),
                       ("cp", "context_parallel"), ("ep", "expert_parallel")):
        out.put(f"parallel.{field}", as_int(file, f"parallel_config.{key}", par.get(key, 1)), f"parallel_config.{key}")
    out.put("parallel.sequence_parallel", as_bool(file, "parallel_config.use_seq_parallel",
                                                  par.get("use_seq_parallel", False)), "parallel_config.use_seq_parallel")
    optimizer = (doc.get("parallel") or {}).get("enable_parallel_optimizer", False)
    out.put("parallel.distributed_optimizer", as_bool(file, "parallel.enable_parallel_optimizer", optimizer),
            "parallel.enable_parallel_optimizer (optimizer states sharded over dp)")
    out.put("train.num_micro_batches", as_int(file, "parallel_config.micro_batch_num", par.get("micro_batch_num", 1)),
            "parallel_config.micro_batch_num")


def _recompute(out: Imported, file: str, doc: dict[str, Any]) -> None:
    rc = doc.get("recompute_config") or {}
    full = rc.get("recompute", False)
    selective = rc.get("select_recompute", False)
    if isinstance(full, list) or isinstance(selective, list):
        out.not_modelled["recompute_config"] = "per-stage layer counts: priced as the whole-model mode"
    mode = "full" if full is True or isinstance(full, list) else (
        "selective" if selective is True or isinstance(selective, list) else "none")
    out.put("recompute.mode", mode, "recompute_config.recompute / select_recompute")
    for key in ("recompute", "select_recompute"):
        if key in rc and not isinstance(rc[key], list):
            as_bool(file, f"recompute_config.{key}", rc[key])


def import_mindformers(path: str | Path, *, hardware: Any = None) -> Imported:
    """A run configuration from a MindFormers training YAML (profile ``sapp-nd``)."""
    path = Path(path)
    file = str(path)
    doc = _read(path)
    out = Imported(file=file)
    out.put("profile", "sapp-nd", "MindFormers on Ascend: the SAPP-ND profile")
    model_cfg = ((doc.get("model") or {}).get("model_config")) or {}
    if "moe_config" in doc or "moe_config" in model_cfg:
        raise bad(file, "moe_config", "MindFormers MoE configs are not mapped by the importer; write the model YAML "
                  "(docs/model-files.md) and give the parallel sizes in the run")
    out.put("model.name", path.stem, "the file name")
    seq = _model(out, file, model_cfg)
    out.put("train.seq_length", seq, "model_config.seq_length")
    batch = (doc.get("runner_config") or {}).get("batch_size", model_cfg.get("batch_size", 1))
    out.put("train.micro_batch_size", as_int(file, "runner_config.batch_size", batch), "runner_config.batch_size")
    out.put("train.flash_attention", as_bool(file, "model_config.use_flash_attention",
                                             model_cfg.get("use_flash_attention", False)), "model_config.use_flash_attention")
    dtype = str(model_cfg.get("compute_dtype", "float16"))
    if dtype not in _DTYPES:
        raise bad(file, "model_config.compute_dtype", f"{dtype!r}: must be float16, bfloat16 or float32")
    out.put("precision.compute", _DTYPES[dtype], "model_config.compute_dtype")
    _parallel(out, file, doc)
    _recompute(out, file, doc)
    if hardware is not None:
        out.put("hardware", hardware, "given hardware")
    read = {"parallel_config", "recompute_config", "model", "runner_config", "parallel"}
    for key in doc:
        if key not in read:
            out.ignored[key] = "run, data, optimizer, callback or context settings: no effect on memory/time"
    return out
