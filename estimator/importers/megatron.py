"""Megatron-LM / Megatron-Core launch arguments -> a whole run configuration (profile ``megatron``).

Arguments are read by :mod:`estimator.importers.megatron_args`. Flags absent from the file take
Megatron's defaults (NVIDIA/Megatron-LM@d98e8a64dd megatron/training/arguments.py): ffn 4h, GeLU,
LayerNorm, learned absolute positions, tied embeddings, dropout 0.1, vocabulary padded to a
multiple of 128·tp, no distributed optimizer, attention backend ``auto``, main gradients in fp32.
Every flag is mapped, ignored with a reason, listed as not modelled (:data:`NOT_MODELLED`) or
reported as unknown. MindSpeed-LLM launches Megatron with the same flags (``profile sapp-nd``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from estimator.experiments.measured import megatron_padded_vocab
from estimator.importers.common import Imported, as_bool, as_int, bad
from estimator.importers.megatron_args import read_arguments
from estimator.importers.megatron_flags import (
    IGNORED_PREFIXES,
    NOT_MODELLED,
    READ_WITH,
    RECOMPUTE_MODULE_NAMES,
    REFUSED,
)
from estimator.importers.megatron_recipe import (
    cuda_graph,
    linear_recipe,
    moe_dispatcher,
    optimizer_dtypes,
    overlap,
)
from estimator.inputs import gdn, hybrid

#: Megatron's defaults used when a flag is absent (megatron/training/arguments.py)
DEFAULT_DIVISIBLE_BY = 128
DEFAULT_DROPOUT = 0.1
#: GPT-2 BPE vocabulary size (the tokenizer Megatron's --vocab-file/--merge-file examples load)
GPT2_VOCAB = 50257


class _Args:
    """The flags of one launch, remembering which were read."""

    def __init__(self, file: str, args: dict[str, Any], out: Imported) -> None:
        self.file, self.args, self.out = file, args, out
        self.used: set[str] = set()

    def has(self, flag: str) -> bool:
        self.used.add(flag)
        return flag in self.args

    def flag(self, flag: str) -> bool:
        return self.has(flag) and as_bool(self.file, flag, self.args[flag])

    def text(self, flag: str, default: str | None = None) -> str | None:
        return str(self.args[flag]) if self.has(flag) else default

    def integer(self, flag: str, default: int | None = None, *, minimum: int = 1) -> int | None:
        if not self.has(flag):
            return default
        return as_int(self.file, flag, self.args[flag], minimum=minimum)

    def need(self, flag: str) -> int:
        value = self.integer(flag)
        if value is None:
            raise bad(self.file, flag, "required (the run's size cannot be estimated without it)")
        return value

    def put(self, field: str, flag: str, default: int | None = None, *, minimum: int = 1) -> int | None:
        value = self.integer(flag, default, minimum=minimum)
        self.out.put(field, value, flag if flag in self.args else f"{flag} absent: Megatron default {default}")
        return value

    def rate(self, field: str, flag: str, default: float) -> None:
        """A probability in [0, 1) (dropout)."""
        raw = self.args.get(flag, default) if self.has(flag) else default
        try:
            value = float(str(raw))
        except ValueError:
            raise bad(self.file, flag, f"expected a number in [0, 1), got {raw!r}") from None
        if not 0 <= value < 1:
            raise bad(self.file, flag, f"must be in [0, 1); got {raw!r}")
        self.out.put(field, value, flag if flag in self.args else f"{flag} absent: Megatron default {default}")


#: the hybrid pattern's flag: ``--hybrid-override-pattern``, renamed ``--hybrid-layer-pattern`` by later Megatron-LM
#: (NVIDIA/Megatron-LM@d98e8a64dd examples/post_training/modelopt/conf/nvidia/*Nemotron-3*.sh), where the layer
#: count follows from the pattern
PATTERN_FLAGS = ("--hybrid-override-pattern", "--hybrid-layer-pattern")


def _pattern(a: _Args) -> tuple[str, str] | None:
    """(flag, value) of the hybrid layer pattern, or None."""
    return next(((flag, value) for flag in PATTERN_FLAGS if (value := a.text(flag)) is not None), None)


def _dims(a: _Args) -> None:
    pattern = _pattern(a)
    if pattern is not None and not a.has("--num-layers"):
        layers = len(pattern[1].split("/")[0])
        a.out.put("model.num_layers", layers, f"{pattern[0]}: one symbol per layer")
    else:
        layers = a.need("--num-layers")
    h = a.need("--hidden-size")
    heads = a.need("--num-attention-heads")
    if pattern is None or a.has("--num-layers"):
        a.out.put("model.num_layers", layers, "--num-layers")
    a.out.put("model.hidden_size", h, "--hidden-size")
    a.out.put("model.num_attention_heads", heads, "--num-attention-heads")
    a.put("model.ffn_hidden_size", "--ffn-hidden-size", 4 * h)
    gqa = a.flag("--group-query-attention")
    groups = a.integer("--num-query-groups", heads) if gqa else heads
    a.out.put("model.num_kv_heads", groups, "--num-query-groups (with --group-query-attention)" if gqa
              else "no --group-query-attention: one KV head per query head")
    if a.flag("--multi-latent-attention"):
        _mla(a)
    else:
        a.out.put("model.attention", "gqa" if (groups or heads) < heads else "mha", "--group-query-attention")
        a.put("model.head_dim", "--kv-channels", h // heads)
    _activation_and_norm(a)
    _attention_variants(a)


def _attention_variants(a: _Args) -> None:
    """``--window-size (left, right)`` (sliding-window attention, ``model.sliding_window`` = left) with
    ``--window-attn-skip-freq N`` (every N-th layer full attention, ``model.global_attention_every``; a list
    pattern is refused) and ``--softmax-type learnable`` (one sink logit per head, ``model.attention_sinks``;
    ``off-by-one`` is refused) as Megatron-Core's ``TransformerConfig`` reads them."""
    if a.has("--window-size"):
        sizes = [int(v) for v in re.findall(r"-?\d+", str(a.args["--window-size"]))]
        if len(sizes) != 2 or sizes[0] < 1 or sizes[1] != 0:
            raise bad(a.file, "--window-size", f"{a.args['--window-size']!r}: a causal window (left, 0) with left ≥ 1 "
                      "is modelled (Megatron-Core window_size = (left, right))")
        a.out.put("model.sliding_window", sizes[0], "--window-size (left, right): the left window")
        every = a.text("--window-attn-skip-freq") or ""
        if every and not every.isdigit():
            raise bad(a.file, "--window-attn-skip-freq", f"{every!r}: a per-layer list pattern is not modelled (an "
                      "integer N, every N-th layer full attention, is)")
        if every:
            a.out.put("model.global_attention_every", int(every), "--window-attn-skip-freq: every N-th layer full")
    softmax = a.text("--softmax-type", "vanilla")
    if softmax not in ("vanilla", "learnable"):
        raise bad(a.file, "--softmax-type", f"{softmax!r} is not modelled (vanilla, learnable)")
    if softmax == "learnable":
        a.out.put("model.attention_sinks", True, "--softmax-type learnable: one sink logit per head")
    if a.flag("--attention-output-gate"):
        a.out.put("model.attention_output_gate", True, "--attention-output-gate: a sigmoid gate on each head's output")
    _gated_delta_net(a)


#: the GDN fields and their Megatron flags, with Megatron-Core's defaults (estimator.inputs.gdn)
_GDN_FLAGS = (("gdn_num_key_heads", "--linear-num-key-heads", gdn.GDN_DEFAULT_NUM_KEY_HEADS),
              ("gdn_num_value_heads", "--linear-num-value-heads", gdn.GDN_DEFAULT_NUM_VALUE_HEADS),
              ("gdn_key_head_dim", "--linear-key-head-dim", gdn.GDN_DEFAULT_KEY_HEAD_DIM),
              ("gdn_value_head_dim", "--linear-value-head-dim", gdn.GDN_DEFAULT_VALUE_HEAD_DIM),
              ("gdn_conv_kernel", "--linear-conv-kernel-dim", gdn.GDN_DEFAULT_CONV_KERNEL))


def _gated_delta_net(a: _Args) -> None:
    """``--experimental-attention-variant gated_delta_net`` (or ``gdn``) with ``--linear-attention-freq N``: a GDN
    layer wherever (i + 1) % N ≠ 0 (Megatron-Core ``get_linear_attention_pattern``), its shape from the
    ``--linear-*`` flags; other variants (``gdn2``, DSA sparse attention ...) and a list pattern are refused."""
    variant = a.text("--experimental-attention-variant")
    freq = a.text("--linear-attention-freq")
    if variant is None:
        if freq is not None:
            raise bad(a.file, "--linear-attention-freq", "needs --experimental-attention-variant gated_delta_net "
                      "(Megatron-Core reads it for linear-attention variants only)")
        return
    if variant not in ("gated_delta_net", "gdn"):
        raise bad(a.file, "--experimental-attention-variant", f"{variant!r} is not modelled (gated_delta_net / gdn is)")
    if freq is None or not freq.isdigit():
        raise bad(a.file, "--linear-attention-freq", f"{freq!r}: an integer N (every N-th layer full attention) is "
                  "modelled; Megatron-Core requires it for gated_delta_net (a per-layer list is not modelled)")
    a.out.put("model.linear_attention_freq", int(freq), "--linear-attention-freq: layer i is full attention when "
              "(i + 1) % N == 0, Gated DeltaNet elsewhere")
    for field, flag, default in _GDN_FLAGS:
        a.put(f"model.{field}", flag, default)


def _mla(a: _Args) -> None:
    a.out.put("model.attention", "mla", "--multi-latent-attention")
    if a.integer("--q-lora-rank") is not None:
        a.put("model.q_lora_rank", "--q-lora-rank")
    a.put("model.kv_lora_rank", "--kv-lora-rank", 32)
    a.put("model.qk_head_dim", "--qk-head-dim", 128)
    a.put("model.qk_rope_head_dim", "--qk-pos-emb-head-dim", 64, minimum=0)
    a.put("model.v_head_dim", "--v-head-dim", 128)
    a.has("--kv-channels")  # MLA sizes its heads by the qk / v head dims above
    a.has("--qk-layernorm")  # MLA: the q/kv latent norms, part of attention: mla


def _activation_and_norm(a: _Args) -> None:
    act = next((name for flag, name in (("--swiglu", "swiglu"), ("--quick-geglu", "quick_geglu"),
                                        ("--squared-relu", "squared_relu")) if a.flag(flag)), "gelu")
    a.out.put("model.activation", act, f"--{act.replace('_', '-')}" if act != "gelu" else "Megatron default GeLU")
    norm = (a.text("--normalization", "LayerNorm") or "").lower()
    if norm not in ("layernorm", "rmsnorm"):
        raise bad(a.file, "--normalization", f"{norm!r} is not modelled (LayerNorm, RMSNorm)")
    a.out.put("model.norm", norm, "--normalization" if a.has("--normalization") else "Megatron default LayerNorm")
    pos = "none" if a.flag("--no-position-embedding") else a.text("--position-embedding-type", "learned_absolute")
    if pos not in ("learned_absolute", "rope", "none"):
        raise bad(a.file, "--position-embedding-type", f"{pos!r} is not modelled (learned_absolute, rope, none)")
    a.out.put("model.position_embedding", {"rope": "rope", "none": "none"}.get(pos or "", "learned"),
              "--position-embedding-type" if a.has("--position-embedding-type") else "Megatron default learned_absolute")
    a.out.put("model.tied_embeddings", not a.flag("--untie-embeddings-and-output-weights"),
              "--untie-embeddings-and-output-weights (Megatron ties by default)")
    if a.flag("--qk-layernorm") and a.out.data["model"]["attention"] != "mla":
        a.out.put("model.qk_norm", True, "--qk-layernorm")
    disabled, added = a.flag("--disable-bias-linear"), a.flag("--add-bias-linear")  # Megatron's default: biases on
    a.out.put("model.linear_bias", not disabled, "--disable-bias-linear" if disabled else
              "--add-bias-linear" if added else "Megatron default add_bias_linear true")


def _moe(a: _Args) -> None:
    experts = a.integer("--num-experts", 0, minimum=0) or 0
    if experts <= 1:
        return
    a.out.put("model.num_experts", experts, "--num-experts")
    a.put("model.moe_topk", "--moe-router-topk", 2)
    a.put("model.moe_ffn_hidden_size", "--moe-ffn-hidden-size", a.out.data["model"]["ffn_hidden_size"])
    shared = a.integer("--moe-shared-expert-intermediate-size")
    if shared:
        a.out.put("model.num_shared_experts", 1, "--moe-shared-expert-intermediate-size: one shared-expert MLP")
        a.out.put("model.shared_expert_ffn_hidden_size", shared, "--moe-shared-expert-intermediate-size")
        if a.flag("--moe-shared-expert-gate"):
            a.out.put("model.shared_expert_gate", True, "--moe-shared-expert-gate: the shared experts' sigmoid gate")
    a.out.put("model.num_dense_layers", 0 if _pattern(a) is not None else _leading_dense(a),
              "--moe-layer-freq (leading dense layers; a hybrid pattern places its E layers itself)")
    a.put("model.mtp_layers", "--mtp-num-layers", 0, minimum=0)
    if a.has("--moe-latent-size"):
        a.put("model.moe_latent_size", "--moe-latent-size")


def _hybrid(a: _Args) -> None:
    """A hybrid stack (``MambaModel``): ``--hybrid-override-pattern`` (its ``/``-separated MTP part must be ``*E``
    per depth), the Mamba-2 dims at Megatron-Core's defaults unless given, ``--mtp-use-repeated-layer``."""
    found = _pattern(a)
    a.flag("--is-hybrid-model")
    if found is None:
        return
    flag, raw = found
    main, *mtp = raw.split("/")
    mtp += [part for part in [a.text("--mtp-hybrid-override-pattern")] if part is not None]
    if any(part != "*E" for part in mtp):
        raise bad(a.file, flag, f"MTP pattern(s) {'/'.join(mtp)!r}: only '*E' (attention + "
                  "MoE) MTP layers are modelled")
    a.out.put("model.hybrid_override_pattern", main, flag)
    if a.has("--mamba-num-heads"):
        a.put("model.mamba_num_heads", "--mamba-num-heads")
    for field, flag, default in (("mamba_head_dim", "--mamba-head-dim", hybrid.MAMBA_DEFAULT_HEAD_DIM),
                                 ("mamba_state_dim", "--mamba-state-dim", hybrid.MAMBA_DEFAULT_STATE_DIM),
                                 ("mamba_num_groups", "--mamba-num-groups", hybrid.MAMBA_DEFAULT_NUM_GROUPS)):
        a.put(f"model.{field}", flag, default)
    if a.flag("--mtp-use-repeated-layer"):
        a.out.put("model.mtp_repeated_layer", True, "--mtp-use-repeated-layer")


def _leading_dense(a: _Args) -> int:
    """``--moe-layer-freq``: 1, or a pattern ``([0]*k+[1]*n)`` / ``[0,0,1,...]`` with the dense layers first."""
    raw = a.text("--moe-layer-freq", "1") or "1"
    if raw.strip().isdigit():
        if int(raw) != 1:
            raise bad(a.file, "--moe-layer-freq", "MoE on every n-th layer only is not modelled (1 or a pattern)")
        return 0
    terms = re.findall(r"\[([01])\]\s*\*\s*(\d+)", raw)
    pattern = [int(v) for v, n in terms for _ in range(int(n))] if terms else [
        int(x) for x in re.findall(r"[01]", raw)]
    if not pattern or pattern != sorted(pattern):
        raise bad(a.file, "--moe-layer-freq", f"pattern {raw!r}: only leading dense layers then MoE layers are modelled")
    return pattern.count(0)


def _vocab(a: _Args, tp: int, given: int | None) -> None:
    vocab = a.integer("--vocab-size")
    if vocab is not None:
        a.out.put("model.vocab_size", vocab, "--vocab-size")
    elif given is not None:
        a.out.put("model.vocab_size", given, "given vocabulary size (the tokenizer is not read offline)")
    elif a.has("--vocab-file") and a.has("--merge-file") and not a.has("--tokenizer-type"):
        a.out.put("model.vocab_size", GPT2_VOCAB, "--vocab-file/--merge-file: GPT-2 BPE (50257 entries; "
                  "the file itself is not read)")
        a.out.data["model"].setdefault("assumed", {})["vocab_size"] = "GPT-2 BPE vocab file: 50257 entries assumed"
    else:
        raise bad(a.file, "--vocab-size", "not given and the tokenizer's vocabulary cannot be read offline; pass "
                  "the vocabulary size (ndval import --vocab-size N)")
    divisible = a.integer("--make-vocab-size-divisible-by", DEFAULT_DIVISIBLE_BY) or DEFAULT_DIVISIBLE_BY
    padded = megatron_padded_vocab(a.out.data["model"]["vocab_size"], divisible, tp)
    a.out.put("model.padded_vocab_size", padded, f"ceil(V / ({divisible}·tp))·{divisible}·tp "
              "(--make-vocab-size-divisible-by, Megatron's padding)")


def _train(a: _Args) -> None:
    a.out.put("train.seq_length", a.need("--seq-length"), "--seq-length")
    a.put("train.micro_batch_size", "--micro-batch-size", 1)
    if a.integer("--global-batch-size") is not None:
        a.put("train.global_batch_size", "--global-batch-size")
    backend = a.text("--attention-backend", "auto")
    use_flash = a.flag("--use-flash-attn")  # MindSpeed-LLM / older Megatron switch
    flash = backend != "unfused" or use_flash
    a.out.put("train.flash_attention", flash, "--attention-backend / --use-flash-attn" if a.has("--attention-backend")
              else "Megatron default auto (a fused kernel)")
    a.rate("train.attention_dropout", "--attention-dropout", DEFAULT_DROPOUT)
    a.rate("train.hidden_dropout", "--hidden-dropout", DEFAULT_DROPOUT)
    a.out.put("train.gradient_accumulation_fusion", not a.flag("--no-gradient-accumulation-fusion"),
              "--no-gradient-accumulation-fusion (Megatron default on)")
    a.out.put("train.moe_grouped_gemm", a.flag("--moe-grouped-gemm"), "--moe-grouped-gemm")
    fusion = a.text("--cross-entropy-fusion-impl", "native") if a.flag("--cross-entropy-loss-fusion") else "none"
    a.out.put("train.cross_entropy_fusion", fusion, "--cross-entropy-loss-fusion / --cross-entropy-fusion-impl")
    if a.flag("--cpu-offloading"):  # Megatron's default: 1 layer
        a.put("train.cpu_offloading_num_layers", "--cpu-offloading-num-layers", 1)


def _parallel(a: _Args, world: int | None) -> int:
    tp = a.put("parallel.tp", "--tensor-model-parallel-size", 1) or 1
    pp = a.put("parallel.pp", "--pipeline-model-parallel-size", 1) or 1
    cp = a.put("parallel.cp", "--context-parallel-size", 1) or 1
    a.put("parallel.ep", "--expert-model-parallel-size", 1)
    if a.integer("--expert-tensor-parallel-size") is not None:
        a.put("parallel.etp", "--expert-tensor-parallel-size")
    if world is None:
        raise bad(a.file, "world size", "not in the arguments (torchrun --nproc_per_node/--nnodes or GPUS_PER_NODE/"
                  "NNODES): pass the world size (ndval import --world-size N)")
    if world % (tp * pp * cp):
        raise bad(a.file, "world size", f"{world} GPUs is not a multiple of tp·pp·cp = {tp * pp * cp}")
    a.out.put("parallel.dp", world // (tp * pp * cp), f"world size {world} / (tp·pp·cp)")
    a.out.put("parallel.sequence_parallel", a.flag("--sequence-parallel") and tp > 1,
              "--sequence-parallel (effective only with tp > 1)")
    a.out.put("parallel.distributed_optimizer", a.flag("--use-distributed-optimizer"), "--use-distributed-optimizer")
    _pipeline(a, pp)
    return tp


def _pipeline(a: _Args, pp: int) -> None:
    layers = a.out.data["model"]["num_layers"]
    vpp = a.integer("--num-virtual-stages-per-pipeline-rank")
    per_stage = a.integer("--num-layers-per-virtual-pipeline-stage")
    layout = a.text("--pipeline-model-parallel-layout")
    if layout is not None:
        a.out.put("parallel.pipeline_layout", layout, "--pipeline-model-parallel-layout")
        vpp = vpp or max(1, _layout_stages(layout) // pp)
    elif per_stage is not None:
        vpp = layers // (pp * per_stage)
    vpp = vpp or 1
    a.out.put("parallel.vpp", vpp, "--num-virtual-stages-per-pipeline-rank / --num-layers-per-virtual-pipeline-stage"
              " / the layout's stages ÷ pp")
    a.out.put("parallel.schedule", "interleaved" if vpp > 1 else "1f1b", "vpp > 1: Megatron's interleaved 1F1B")
    for flag in ("--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"):
        if a.integer(flag, minimum=0) is not None:
            a.put(f"parallel.{flag[2:].replace('-', '_')}", flag, minimum=0)
    for flag in ("--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"):
        if a.flag(flag):
            a.out.put(f"parallel.{flag[2:].replace('-', '_')}", True, flag)
    if a.has("--cp-comm-type"):
        a.out.put("parallel.cp_comm_type", a.text("--cp-comm-type"), "--cp-comm-type")


def _layout_stages(layout: str) -> int:
    """Virtual stages of a ``--pipeline-model-parallel-layout`` string (``(tt|)*6`` repeats expanded)."""
    expanded = re.sub(r"\(([^()]*)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), layout)
    return expanded.count("|") + 1


def _recompute_and_precision(a: _Args) -> None:
    # --recompute-activations: Megatron's alias of selective (arguments.py validate_args sets the granularity)
    mode = a.text("--recompute-granularity", "selective" if a.flag("--recompute-activations") else "none") or "none"
    if mode not in ("none", "selective", "full"):
        raise bad(a.file, "--recompute-granularity", f"{mode!r}: must be selective or full")
    a.out.put("recompute.mode", mode, "--recompute-granularity")
    raw = a.text("--recompute-modules")
    if mode == "selective" and raw:
        names = [RECOMPUTE_MODULE_NAMES.get(n, n) for n in re.findall(r"[A-Za-z_]+", raw)]
        a.out.put("recompute.modules", names, "--recompute-modules")
    method = a.text("--recompute-method")
    layers = a.integer("--recompute-num-layers", minimum=0)
    if mode == "full":  # (selective: Megatron-Core refuses a layer count; the rules name the field)
        if method is not None:
            if method not in ("uniform", "block"):
                raise bad(a.file, "--recompute-method", f"{method!r}: must be uniform or block")
            a.out.put("recompute.method", method, "--recompute-method")
        if layers is not None:
            a.out.put("recompute.num_layers", layers, "--recompute-num-layers")
    else:
        for flag in ("--recompute-method", "--recompute-num-layers"):
            if flag in a.args:
                a.out.ignored[flag] = "read with --recompute-granularity full only (Megatron-Core): no effect here"
    compute = "fp16" if a.flag("--fp16") else "bf16"
    a.out.put("precision.compute", compute, "--fp16 / --bf16")
    a.out.put("precision.grads", "bf16" if a.flag("--grad-reduce-in-bf16") else "fp32",
              "Megatron's fp32 main gradients (--grad-reduce-in-bf16 for bf16)")
    linear_recipe(a)


def import_megatron(path: str | Path, *, world_size: int | None = None, profile: str = "megatron",
                    hardware: Any = None, vocab_size: int | None = None) -> Imported:
    """A run configuration from Megatron-LM arguments (``world_size`` / ``vocab_size`` when the file does
    not state them)."""
    path = Path(path)
    file = str(path)
    args, launched = read_arguments(path)
    out = Imported(file=file)
    out.put("profile", profile, "given profile" if profile != "megatron" else "Megatron-LM arguments")
    stem = path.name.removesuffix(".yaml").removesuffix(".sh").removesuffix(".model_config")
    out.put("model.name", path.parent.name if path.name == "model_config.yaml" else stem, "the file name")
    a = _Args(file, args, out)
    for flag in args:
        if flag in REFUSED:
            raise bad(file, flag, REFUSED[flag])
    _dims(a)
    _moe(a)
    _hybrid(a)
    _train(a)
    tp = _parallel(a, world_size or launched)
    _vocab(a, tp, vocab_size)
    _recompute_and_precision(a)
    overlap(a, profile, tp)
    cuda_graph(a)
    moe_dispatcher(a, bool(a.out.data["model"].get("num_experts")))
    optimizer_dtypes(a)
    _optimizer(a)
    _lora(a)
    if hardware is not None:
        out.put("hardware", hardware, "given hardware")
    _classify_rest(a)
    return out


#: LoRA target names of MindSpeed-LLM's ``--lora-target-modules`` -> the adapter's (``adapter.target_modules``):
#: Megatron-Core names as they are, the legacy Megatron names mapped
LORA_TARGETS = {"linear_qkv": "linear_qkv", "linear_proj": "linear_proj", "linear_fc1": "linear_fc1",
                "linear_fc2": "linear_fc2", "query_key_value": "linear_qkv", "dense": "linear_proj",
                "dense_h_to_4h": "linear_fc1", "dense_4h_to_h": "linear_fc2"}
#: MindSpeed-LLM's ``--lora-r`` default (``_add_lora_args``: ``default=16``)
MINDSPEED_LORA_R = 16


def _lora(a: _Args) -> None:
    """MindSpeed-LLM LoRA (``--lora-target-modules`` turns it on; ``--lora-r``, or ``--lora-rank``, its rank, default
    16) -> ``adapter: {kind: lora, rank, target_modules}``; a target the estimator does not know is refused."""
    raw = a.text("--lora-target-modules")
    rank = a.integer("--lora-r") or a.integer("--lora-rank")
    if not raw:
        if rank is not None:
            a.out.ignored["--lora-r"] = "no --lora-target-modules: MindSpeed-LLM applies no LoRA"
        return
    names = re.findall(r"[A-Za-z_0-9]+", raw)
    unknown = [n for n in names if n not in LORA_TARGETS]
    if unknown:
        raise bad(a.file, "--lora-target-modules", f"{', '.join(unknown)}: not a linear the adapters model "
                  f"(known: {', '.join(LORA_TARGETS)})")
    a.out.put("adapter.kind", "lora", "--lora-target-modules")
    a.out.put("adapter.rank", rank or MINDSPEED_LORA_R, "--lora-r" if rank else "--lora-r absent: MindSpeed-LLM default 16")
    a.out.put("adapter.target_modules", sorted({LORA_TARGETS[n] for n in names}), "--lora-target-modules")
    a.has("--lora-alpha")  # the update's scale: no effect on sizes


def _optimizer(a: _Args) -> None:
    """``--optimizer``: ``adam`` (Megatron's default), ``muon`` (``dist_muon``, or with
    ``--use-layer-wise-distributed-optimizer``: layer-wise distributed) -> ``train.optimizer``; another
    optimizer is listed as not modelled (priced as Adam)."""
    name = (a.text("--optimizer", "adam") or "adam").lower()
    layer_wise = a.flag("--use-layer-wise-distributed-optimizer")
    if name in ("adam", "muon", "dist_muon"):
        value = "dist_muon" if name == "muon" and layer_wise else name
        a.out.put("train.optimizer", value, "--optimizer" + (" with --use-layer-wise-distributed-optimizer"
                                                            if layer_wise and name == "muon" else ""))
    else:
        a.out.not_modelled["--optimizer"] = f"{name!r}: priced as Adam (adam, muon and dist_muon are modelled)"


def _classify_rest(a: _Args) -> None:
    """Every flag not read: not modelled (named), ignored (no effect on the estimate) or unknown."""
    unknown = []
    for flag in a.args:
        if flag in a.used:
            continue
        if flag in NOT_MODELLED:
            a.out.not_modelled[flag] = NOT_MODELLED[flag]
        elif flag in READ_WITH:
            a.out.ignored[flag] = f"Megatron reads it with {READ_WITH[flag]} only: no effect here"
        elif flag.startswith(IGNORED_PREFIXES):
            a.out.ignored[flag] = "logging, data, checkpointing, optimizer schedule or numerics: no effect on memory/time"
        else:
            unknown.append(flag)
    a.out.unknown(unknown, "flag")
