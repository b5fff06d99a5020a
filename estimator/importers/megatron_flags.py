"""Megatron-LM flags the importer reads but the estimator does not model, and those it ignores.

``NOT_MODELLED``: flag -> what the estimate leaves out (listed in the importer's output, so a user sees
what the number does not include). The overlap switches, the FP8 / FP4 recipe and CUDA graphs are
mapped (``estimator.importers.megatron_recipe``), and so are the MoE token dispatcher, the
precision-aware optimizer's dtypes and CPU offloading. ``IGNORED_PREFIXES``: flags that
change neither memory nor time (logging, data, checkpointing, learning-rate schedule, numerics of
init and RoPE).
"""

from __future__ import annotations

NOT_MODELLED: dict[str, str] = {
    "--overlap-param-gather-with-optimizer-step": "parameter all-gather under the optimizer step: not modelled",
    "--delay-wgrad-compute": "weight-gradient GEMMs delayed to overlap the EP all-to-all: not modelled",
    "--moe-enable-deepep": "DeepEP dispatch kernels: not modelled",
    "--moe-flex-dispatcher-backend": "the flex dispatcher's backend: not modelled",
    "--moe-permute-fusion": "fused token permutation: kernel counts not reduced",
    "--moe-router-force-load-balancing": "forced balanced routing: the estimate assumes balanced routing anyway",
    "--moe-expert-capacity-factor": "token dropping at a capacity factor: routed tokens not capped",
    "--moe-pad-expert-input-to-capacity": "padding to capacity: routed tokens not padded",
    "--deterministic-mode": "deterministic kernels: kernel choice not modelled",
    "--use-megatron-fsdp": "Megatron-FSDP sharding: import with profile fsdp2 and set parallel.fsdp_implementation: "
                           "megatron (priced here as DDP with the distributed optimizer)",
    "--use-torch-fsdp2": "torch FSDP2 sharding: import with profile fsdp2 (priced here as DDP with the distributed "
                         "optimizer)",
}

#: flags that change the architecture into one this importer does not read (or the estimator does not model):
#: refused (a ConfigError), never priced as a plain transformer
REFUSED: dict[str, str] = {
    "--num-experts-per-layer": "a different expert count per layer is not modelled",
    "--no-rope-freq": "layers without RoPE (NoPE) interleaved with RoPE layers are not modelled",
    "--enable-mhc-connections": "hyper-connections (mHC: several residual streams mixed per layer, Megatron-Core "
                                "TransformerConfig.enable_mhc_connections) are not modelled",
    "--optimizer-cpu-offload": "the optimizer states and step on the host (Megatron-Core HybridDeviceOptimizer, "
                               "--optimizer-offload-fraction) are not modelled: the estimate would hold them on the "
                               "device and price the step there",
    "--cpu-offloading-weights": "weights offloaded to host memory with the activations are not modelled (only the "
                                "activations of --cpu-offloading-num-layers are)",
}

IGNORED_PREFIXES: tuple[str, ...] = (
    "--log", "--tensorboard", "--wandb", "--save", "--load", "--ckpt", "--dist-ckpt", "--async-save",
    "--use-persistent-ckpt-worker", "--data", "--split", "--mock-data", "--tokenizer", "--vocab-file",
    "--merge-file", "--train-iters", "--train-samples", "--eval", "--exit", "--lr", "--min-lr",
    "--weight-decay", "--clip-grad", "--adam", "--init-method", "--seed", "--distributed-timeout",
    "--distributed-backend", "--timing-log", "--use-mcore-models", "--transformer-impl", "--manual-gc",
    "--no-check-for-nan", "--rotary", "--mscale", "--norm-epsilon", "--max-position-embeddings",
    "--no-rope-fusion", "--rope-scaling", "--moe-router-load-balancing-type", "--moe-router-pre-softmax",
    "--moe-aux-loss-coeff", "--moe-router-group-topk", "--moe-router-num-groups",
    "--moe-router-topk-scaling-factor", "--moe-router-score-function", "--moe-router-enable-expert-bias",
    "--moe-router-bias-update-rate", "--moe-router-dtype", "--moe-z-loss", "--mtp-loss-scaling-factor",
    "--disable-bias-linear", "--add-bias-linear", "--bf16", "--fp16", "--num-workers", "--no-masked-softmax",
    "--no-bias", "--swiglu", "--untie", "--kv-channels", "--micro-batch", "--dataloader",
    "--no-create-attention-mask", "--sequence-parallel", "--attention-softmax-in-fp32",
    "--accumulate-allreduce-grads-in-fp32", "--ft-", "--profile", "--nsys", "--override-opt", "--finetune",
    "--no-load", "--use-checkpoint", "--optimizer", "--use-rotary", "--initial-loss-scale",
    # MindSpeed-LLM: fused kernels and the framework switch (no effect on sizes; kernels priced per operator)
    "--ai-framework", "--use-fused-", "--use-mc2", "--use-ascend", "--no-shared-storage",
)

#: Megatron ``--recompute-modules`` names -> the estimator's (``core_attn`` is Megatron's own name too)
RECOMPUTE_MODULE_NAMES = {"core_attention": "core_attn"}
