"""The Hugging Face ``config.json`` reader every family mapper builds on (:mod:`estimator.importers.hf`,
:mod:`estimator.importers.hf_mamba`): the file's top-level mapping, a reader that remembers the keys it used, and
the decoder fields and MLP / expert shapes the families share (Llama's names): Llama's layers
(:func:`llama`), DeepSeek's routed + shared experts (:func:`deepseek_moe`), windows by ``layer_types``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from estimator.importers.common import Imported, as_bool, as_int, bad
from ndval.core.yamlsrc import read_regular_text


def read_json(path: Path) -> dict[str, Any]:
    """The file's top-level mapping; malformed JSON names the file, line and rule."""
    file = str(path)
    try:
        data = json.loads(read_regular_text(path))
    except OSError as exc:
        raise bad(file, "<file>", f"cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise bad(file, "<json>", f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except UnicodeDecodeError:
        raise bad(file, "<json>", "not UTF-8 text") from None
    except ValueError as exc:  # a FIFO, a device or a folder (never read), or over the size bound
        raise bad(file, "<file>", str(exc)) from None
    if not isinstance(data, dict):
        raise bad(file, "<json>", "top level must be a JSON object (a Hugging Face config.json)")
    return data


class Reader:
    """Reads keys of one config, remembering which it used."""

    def __init__(self, file: str, cfg: dict[str, Any], out: Imported) -> None:
        self.file, self.cfg, self.out = file, cfg, out
        self.used: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.used.add(key)
        return self.cfg.get(key, default)

    def integer(self, key: str, *, default: int | None = None, minimum: int = 1) -> int:
        value = self.get(key)
        if value is None:
            if default is None:
                raise bad(self.file, key, "required by this architecture and missing")
            return default
        return as_int(self.file, key, value, minimum=minimum)

    def put(self, field: str, key: str, *, default: int | None = None, minimum: int = 1) -> int:
        value = self.integer(key, default=default, minimum=minimum)
        self.out.put(f"model.{field}", value, key if key in self.cfg else f"{key} absent: default {default}")
        return value


def common(r: Reader, *, tied_default: bool, activation: bool = True) -> None:
    """The decoder fields every family shares (Llama's names)."""
    r.put("num_layers", "num_hidden_layers")
    h = r.put("hidden_size", "hidden_size")
    a = r.put("num_attention_heads", "num_attention_heads")
    g = r.put("num_kv_heads", "num_key_value_heads", default=a)
    if a % g:
        raise bad(r.file, "num_key_value_heads", f"must divide num_attention_heads ({a}); got {g}")
    r.out.put("model.attention", "gqa" if g < a else "mha", "num_key_value_heads < num_attention_heads: gqa")
    head_dim = r.get("head_dim")
    if head_dim is not None and as_int(r.file, "head_dim", head_dim) != h // a:
        r.out.put("model.head_dim", as_int(r.file, "head_dim", head_dim), "head_dim")
    r.put("vocab_size", "vocab_size")
    tied_embeddings(r, tied_default)
    if activation:  # (Gemma reads its own)
        gated_silu(r)
    r.out.put("model.norm", "rmsnorm", "the family's RMSNorm (rms_norm_eps)")
    r.out.put("model.position_embedding", "rope", "the family's rotary embeddings (rope_theta)")


def tied_embeddings(r: Reader, default: bool) -> None:
    """``tie_word_embeddings``, or the family's ``default`` when the file leaves it out."""
    tied = r.get("tie_word_embeddings")
    r.out.put("model.tied_embeddings", default if tied is None else as_bool(r.file, "tie_word_embeddings", tied),
              "tie_word_embeddings" if tied is not None else f"tie_word_embeddings absent: the family's default {default}")


def biases(r: Reader, *keys: str, default: bool = False) -> None:
    """Report each of ``keys`` (``use_bias``, ``use_qkv_bias``: linear biases) that is true as not modelled: the
    estimator counts no biases."""
    for key in keys:
        if as_bool(r.file, key, r.get(key, default)):
            r.out.not_modelled[key] = "the linear layers' biases are not counted (each under 0.1 % of its layer)"


def gated_silu(r: Reader) -> None:
    act = r.get("hidden_act", "silu")
    if act != "silu":
        raise bad(r.file, "hidden_act", f"{act!r} is not modelled for this family (its MLP is SiLU-gated: 'silu')")
    r.out.put("model.activation", "swiglu", "hidden_act 'silu' with the family's gate/up/down MLP: SwiGLU")


def squared_relu(r: Reader, key: str, family: str) -> None:
    """The family's MLP is squared ReLU (``key`` must be ``relu2``): up / down projections, no gate."""
    act = r.get(key, "relu2")
    if act != "relu2":
        raise bad(r.file, key, f"{act!r} is not modelled for {family} (its MLP is squared ReLU: 'relu2')")
    r.out.put("model.activation", "squared_relu", f"{key} 'relu2' with up / down projections")


def dense_ffn(r: Reader) -> None:
    r.put("ffn_hidden_size", "intermediate_size")


def mixtral_experts(r: Reader) -> None:
    """Mixtral's expert keys: ``num_local_experts`` routed experts of ``intermediate_size``, top
    ``num_experts_per_tok``."""
    r.put("num_experts", "num_local_experts")
    r.put("moe_topk", "num_experts_per_tok")
    r.put("moe_ffn_hidden_size", "intermediate_size")


def routed_and_shared(r: Reader, experts: str, topk: str, shared_key: str, block: str,
                      width_key: str | None = None) -> None:
    """Routed experts of ``moe_intermediate_size`` and ``shared_key`` shared ones, one MLP of n × that width, or of
    n × ``width_key`` when the file gives that key (``block``: the family's MoE block that builds it)."""
    r.put("num_experts", experts)
    r.put("moe_topk", topk)
    inter = r.put("moe_ffn_hidden_size", "moe_intermediate_size")
    shared = r.put("num_shared_experts", shared_key, default=0, minimum=0)
    width, name = inter, "moe_intermediate_size"
    if width_key is not None and r.get(width_key) is not None:
        width, name = as_int(r.file, width_key, r.get(width_key)), width_key
    if shared:
        r.out.put("model.shared_expert_ffn_hidden_size", shared * width, f"{shared_key} × {name} "
                  f"({block}: one shared MLP of that width)")


def sliding(r: Reader) -> None:
    """Mistral's ``sliding_window`` (every layer windowed when set); Qwen's ``use_sliding_window``."""
    window = r.get("sliding_window")
    use = r.get("use_sliding_window")
    if window is None or use is False:
        return
    if use is True and r.get("max_window_layers") not in (None, r.cfg.get("num_hidden_layers")):
        raise bad(r.file, "max_window_layers", "sliding window on only some of the layers (Qwen max_window_layers) "
                  "is not modelled")
    r.out.put("model.sliding_window", as_int(r.file, "sliding_window", window), "sliding_window")


def llama(r: Reader) -> None:
    """LlamaConfig's decoder (GQA, SwiGLU MLP of ``intermediate_size``, RMSNorm, RoPE, untied by default) with a
    Mistral / Qwen sliding window (:func:`sliding`): the layers most families build on."""
    common(r, tied_default=False)
    dense_ffn(r)
    r.get("sliding_window")  # Llama configs carry none; a value would be a Mistral-style window
    sliding(r)


def deepseek_moe(r: Reader) -> None:
    """DeepSeek-V2 / V3's MoE keys: ``n_routed_experts`` routed experts and ``n_shared_experts`` shared ones of
    ``moe_intermediate_size``, ``first_k_dense_replace`` leading dense layers, MoE on every layer."""
    routed_and_shared(r, "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "DeepseekV2MoE")
    r.put("num_dense_layers", "first_k_dense_replace", default=0, minimum=0)
    if as_int(r.file, "moe_layer_freq", r.get("moe_layer_freq", 1)) != 1:
        raise bad(r.file, "moe_layer_freq", "MoE on every n-th layer only is not modelled (must be 1)")


def full_every(kinds: list[Any], other: str) -> int | None:
    """n when ``layer_types`` is ``full_attention`` on every layer i with (i + 1) % n == 0 and ``other`` on the
    rest; 0 when no layer is full; None for any other pattern."""
    full = [i for i, k in enumerate(kinds) if k == "full_attention"]
    every = full[0] + 1 if full else 0
    if any(k != ("full_attention" if every and (i + 1) % every == 0 else other) for i, k in enumerate(kinds)):
        return None
    return every


def layer_types(r: Reader) -> None:
    """``layer_types`` (sliding_attention / full_attention per layer) as window + "every n-th full"."""
    kinds = r.get("layer_types")
    window = r.get("sliding_window")
    if not kinds or window is None or "sliding_attention" not in kinds:
        return
    r.out.put("model.sliding_window", as_int(r.file, "sliding_window", window), "sliding_window")
    every = full_every(kinds, "sliding_attention")
    if every is None:
        raise bad(r.file, "layer_types", "this pattern of full and sliding layers is not modelled (every n-th layer "
                  "full, the others sliding)")
    if every:
        r.out.put("model.global_attention_every", every, f"layer_types: full_attention on every layer i with (i + 1) % {every} == 0, sliding_attention elsewhere")


def window_pattern(r: Reader) -> None:
    """Local / global attention layers: ``layer_types`` (:func:`layer_types`), or ``sliding_window`` on every layer but
    each ``sliding_window_pattern``-th, the pattern an integer n (Gemma 3) or n − 1 local layers then a global one
    as letters (EXAONE 4.0: ``"LLLG"``)."""
    pattern = r.get("sliding_window_pattern")
    if r.get("layer_types"):
        layer_types(r)
        return
    if pattern is None or r.get("sliding_window") is None:
        return
    if isinstance(pattern, str) and not pattern.isdigit():
        if pattern != "L" * (len(pattern) - 1) + "G":
            raise bad(r.file, "sliding_window_pattern", f"{pattern!r}: only local layers then one global ('LLLG') "
                      "is modelled")
        every = len(pattern)
    else:
        every = as_int(r.file, "sliding_window_pattern", pattern)
    r.out.put("model.sliding_window", as_int(r.file, "sliding_window", r.get("sliding_window")), "sliding_window")
    r.out.put("model.global_attention_every", every, f"sliding_window_pattern {pattern!r}: every n-th layer full")
