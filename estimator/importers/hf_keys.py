"""The Hugging Face ``config.json`` keys the importer ignores (with the reason) and the model types it knows and
refuses (with the reason): :mod:`estimator.importers.hf` reads them."""

from __future__ import annotations

#: keys that do not change memory or time, with the reason (read, never mapped)
IGNORED: dict[str, str] = {
    **dict.fromkeys(("bos_token_id", "eos_token_id", "pad_token_id", "architectures", "auto_map",
                     "transformers_version", "torch_dtype", "dtype", "use_cache", "initializer_range",
                     "_name_or_path", "model_type"), "metadata, token ids or initialisation"),
    **dict.fromkeys(("rms_norm_eps", "rope_theta", "rope_scaling", "rope_parameters", "max_position_embeddings",
                     "pretraining_tp", "initial_context_length", "rope_interleave", "partial_rotary_factor",
                     "original_max_position_embeddings"),
                    "numerics of RoPE / norms: no effect on memory or FLOPs"),
    **dict.fromkeys(("attention_dropout", "hidden_dropout", "resid_pdrop", "embd_pdrop"), "dropout of the "
                     "released model (the run's own rate is a train field)"),
    **dict.fromkeys(("attention_bias", "mlp_bias"), "biases are not counted (each under 0.1 % of its layer)"),
    **dict.fromkeys(("router_aux_loss_coef", "output_router_logits", "norm_topk_prob", "routed_scaling_factor",
                     "scoring_func", "topk_method", "n_group", "topk_group", "aux_loss_alpha", "seq_aux",
                     "ep_size", "swiglu_limit", "experts_per_token", "use_routing_bias", "router_jitter_noise",
                     "moe_gate_act", "moe_use_aux_free", "moe_capacity"),
                    "routing policy or a duplicate of a mapped key: no effect on sizes"),
    **dict.fromkeys(("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"),
                    "μP multipliers (Granite): scale values, not sizes"),
    **dict.fromkeys(("vision_start_token_id", "vision_end_token_id", "vision_token_id", "image_token_id",
                     "video_token_id"), "multimodal token ids"),
    "attention_out_bias": "biases are not counted (each under 0.1 % of its layer)",
    "quantization_config": "how the released weights are stored (e.g. MXFP4, FP8 blocks), not the training precision",
    **dict.fromkeys(("layer_norm_epsilon", "residual_in_fp32", "rescale_prenorm_residual", "time_step_min",
                     "time_step_max", "time_step_floor", "time_step_limit", "use_mamba_kernels", "num_logits_to_keep",
                     "mamba_proj_bias", "mamba_hidden_act", "mamba_ssm_dtype", "time_step_rank"),
                    "Mamba-2 numerics, kernels or projection biases (not counted): no effect on sizes"),
    "use_conv_bias": "the Mamba-2 conv's bias is counted (Megatron-Core's conv1d has one); false is reported by mamba2",
    "use_bias": "linear-layer biases are not counted (each under 0.1 % of its layer); reported where a family reads it",
}

#: hybrid Mamba families whose layer layouts are not read: refused
HYBRID_TYPES = ("jamba", "falcon_h1", "zamba", "zamba2", "bamba", "granitemoehybrid")
#: known but refused, with the reason
REFUSED_TYPES: dict[str, str] = {
    "gemma2": "Gemma 2's logit soft-capping (attention and final) is not modelled",
    **dict.fromkeys(("llama4", "llama4_text"), "Llama 4's chunked local attention (attention_chunk_size), its "
                    "NoPE layers and MoE layers interleaved with dense ones (interleave_moe_layer_step) are not "
                    "modelled"),
    "deepseek_v32": "DeepSeek-V3.2's sparse attention (the lightning indexer and its index_topk keys per query) is "
                    "not modelled",
    "deepseek_v4": "DeepSeek-V4's hyper-connections (mHC), compressed sparse / sliding-window attention layers and "
                   "hash-routed MoE layers are not modelled",
    "glm_moe_dsa": "GLM-5's sparse attention (DSA indexer layers) is not modelled",
    **dict.fromkeys(("minimax", "minimax_text_01", "minimax_m1"), "MiniMax-Text-01 / M1's lightning (linear) "
                    "attention layers are not modelled"),
    "minimax_m3": "MiniMax-M3's vision encoder and lightning-indexer sparse attention are not modelled",
    "kimi_linear": "Kimi Linear's KDA linear-attention layers are not modelled",
    "nemotron-nas": "DeciLM / Llama-Nemotron's per-layer block configs (attention skipped or linear, FFN width per "
                    "layer, found by NAS) are not modelled",
    **dict.fromkeys(("cohere", "cohere2", "phi", "gpt_neox", "falcon"), "parallel attention and MLP blocks on one "
                    "residual (the block's saved activations and fused schedule) are not modelled"),
    "mamba": "Mamba-1's selective-scan mixer (per-channel state, dt projection of time_step_rank) is not modelled; "
             "Mamba-2 (model_type mamba2) is",
    **dict.fromkeys(HYBRID_TYPES, "hybrid Mamba / attention stacks other than Nemotron-H (and pure Mamba-2): their layer layout and "
                                  "mixer variants are not read (write model.hybrid_override_pattern and the mamba_* "
                                  "fields by hand)"),
}
