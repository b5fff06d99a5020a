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
    "--torch-fsdp2-no-reshard-after-forward": "FSDP2 ZeRO-2 (no reshard after forward): import with profile fsdp2 and "
                                              "set parallel.fsdp_reshard_after_forward: false",
    "--num-distributed-optimizer-instances": "N copies of the distributed optimizer, each sharded over DP / N: priced "
                                             "sharded over the whole DP group (less optimizer memory than N > 1 holds)",
    "--fsdp-double-buffer": "Megatron-FSDP's double-buffered gather / reduce buckets: not counted",
    "--keep-fp8-transpose-cache": "Megatron-FSDP keeping the FP8 weights' transposes: not counted",
    "--reuse-grad-buf-for-mxfp8-param-ag": "the MXFP8 parameter all-gather reusing the gradient buffer: its own "
                                           "buffer is counted",
    "--output-logit-dtype": "the output layer's logits dtype: the logits are counted in the compute dtype",
    "--te-precision-config-file": "per-module precision from a TE config file: the run's recipe is priced on every "
                                  "linear",
    "--freeze-all-layers": "frozen layers (no gradients, no optimizer states): priced as trained",
    "--outer-dp-sharding-strategy": "Megatron-FSDP hybrid sharding (HSDP): not modelled",
    "--enable-full-sharding-in-hsdp": "Megatron-FSDP hybrid sharding (HSDP): not modelled",
    "--use-nccl-ub": "NCCL user buffers for the DP / FSDP collectives: their bandwidth gain is not modelled",
    "--ddp-bucket-size": "DDP bucket sizing: the DP collectives are priced per layer, as the overlap runs them",
    "--ddp-num-buckets": "DDP bucket count: the DP collectives are priced per layer, as the overlap runs them",
    "--ddp-pad-buckets-for-high-nccl-busbw": "bucket padding for NCCL bus bandwidth: not modelled",
    "--ddp-reduce-scatter-with-fp32-accumulation": "fp32 accumulation inside the reduce-scatter: not modelled",
    "--gtp-remat-nccl-ub": "a communication implementation detail: not modelled",
    "--gtp-expert-remat-nccl-ub": "a communication implementation detail: not modelled",
    "--gtp-remat-reduce-scatter-with-fp32-accumulation": "a communication implementation detail: not modelled",
    "--moe-layer-freq": "read with --num-experts only (a dense model has no MoE layers)",
    "--muon-num-ns-steps": "Muon's Newton-Schulz step count: priced at Megatron-Core's default, 5",
    "--muon-tp-mode": "Muon's TP handling: priced as Megatron-Core's default, duplicated",
    "--muon-scalar-optimizer": "the optimizer of Muon's non-matrix parameters: priced as Adam",
    "--muon-use-syrk": "Muon's symmetric-rank-k kernels: priced as its GEMMs",
    "--muon-fp32-matmul-prec": "Muon's fp32 matmul precision: priced at the compute dtype",
    "--muon-no-split-qkv": "Muon over the fused QKV weight: priced per weight as split",
    "--no-use-layer-wise-param-layout": "the layer-wise distributed optimizer's parameter layout: not modelled",
    **dict.fromkeys(("--skip-allreduce", "--skip-alltoall", "--skip-gemm", "--skip-reducescatter", "--skip-sendrecv"),
                    "a benchmarking switch that skips that work: the estimate prices it"),
}

#: flags Megatron reads only beside another one: ignored (with this reason) when that one is absent
READ_WITH: dict[str, str] = {
    **dict.fromkeys(("--q-lora-rank", "--kv-lora-rank", "--qk-head-dim", "--qk-pos-emb-head-dim", "--v-head-dim"),
                    "--multi-latent-attention"),
    **dict.fromkeys(("--fp8-param-gather", "--fp4-param-gather"), "--fp8-format / --fp4-format"),
    **dict.fromkeys(("--cuda-graph-modules", "--cuda-graph-scope"), "--cuda-graph-impl"),
    "--window-attn-skip-freq": "--window-size",
    **dict.fromkeys(("--use-torch-optimizer-for-cpu-offload", "--overlap-cpu-optimizer-d2h-h2d"),
                    "--optimizer-cpu-offload"),
    **dict.fromkeys(("--megatron-fsdp-main-params-dtype", "--megatron-fsdp-main-grads-dtype",
                     "--megatron-fsdp-grad-comm-dtype", "--megatron-fsdp-max-pool-double-buffer",
                     "--fsdp-db-use-persist-buf-on-alloc-fail"), "--use-megatron-fsdp"),
    "--mamba-training-ssm-states-dtype": "a hybrid Mamba stack (--hybrid-layer-pattern)",
    "--indexer-batch-size": "DeepSeek-V3.2's sparse attention (refused where it is set)",
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
    "--checkpoint-activations": "no longer valid in Megatron-LM (arguments.py exits: 'use --recompute-activations, "
                                "or, for more control, --recompute-granularity and --recompute-method')",
    "--heterogeneous-layers-config-path": "per-layer heterogeneous blocks (Llama-Nemotron NAS) are not modelled",
    "--heterogeneous-layers-config-encoded-json": "per-layer heterogeneous blocks (Llama-Nemotron NAS) are not "
                                                  "modelled",
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
    "--bf16", "--fp16", "--num-workers", "--no-masked-softmax",
    "--no-bias", "--swiglu", "--untie", "--kv-channels", "--micro-batch", "--dataloader",
    "--no-create-attention-mask", "--sequence-parallel", "--attention-softmax-in-fp32",
    "--accumulate-allreduce-grads-in-fp32", "--ft-", "--profile", "--nsys", "--override-opt", "--finetune",
    "--no-load", "--use-checkpoint", "--optimizer", "--use-rotary", "--initial-loss-scale",
    # inference, RL, fault tolerance, other model families' and data options of Megatron-LM@d98e8a64dd arguments.py,
    # numerics (loss scale, RoPE / YaRN, optimizer hyper-parameters): no effect on a training step's memory or time
    "--inference-", "--rl-", "--grpo-", "--inprocess-", "--fim-", "--dino-", "--one-logger", "--app-tag",
    "--bert-", "--ict-", "--retriever-", "--biencoder", "--vision-", "--swin-", "--img-", "--patch-dim",
    "--num-channels", "--num-classes", "--mask-", "--yarn-", "--rope-type", "--use-rope-scaling", "--loss-scale",
    "--min-loss-scale", "--hysteresis", "--sgd-momentum", "--lion-", "--muon-momentum", "--muon-nesterov",
    "--muon-extra-scale-factor", "--muon-scale-mode", "--muon-coefficient-type", "--warmup", "--decoupled-",
    "--head-lr-mult", "--enable-msc", "--disable-msc", "--object-storage", "--no-mmap-bin-files", "--per-split-",
    "--titles-data-path", "--evidence-data-path", "--block-data-path", "--embedding-path", "--test-data-path",
    "--train-data-path", "--valid-data-path", "--yaml-cfg", "--sft", "--short-seq-prob", "--eod-mask-loss",
    "--reset-attention-mask", "--reset-position-ids", "--iter-per-epoch", "--sample-rate", "--use-one-sent-docs",
    "--query-in-block-prob", "--classes-fraction", "--output-bert-embeddings", "--override-ckpt-iteration",
    "--no-save-", "--use-dist-ckpt", "--fake-process-group", "--enable-ft-package", "--calc-ft-timeouts",
    "--adlr-autoresume", "--allow-ambiguous-pad-tokens", "--check-for-large-grads", "--dump-param-to-param-group",
    "--max-tokens-to-oom", "--result-rejected-tracker", "--run-workload-inspector", "--no-one-logger",
    "--mid-level-dataset-surplus", "--num-dataset-builder-threads", "--per-dataset-sequences-path",
    "--no-data-sharding", "--phase-transition-iterations", "--relative-attention-", "--encoder-",
    "--decoder-seq-length", "--apply-wd-to-qk-layernorm", "--no-weight-decay-cond-type", "--onnx-safe",
    "--no-persist-layer-norm", "--no-gradient-reduce-div-fusion", "--no-align-param-gather",
    "--create-all-gather-group", "--disable-symmetric-registration", "--fsdp-manual-registration",
    "--suggested-communication-unit-size", "--refit-method", "--langrl-env-config", "--perform-rl-step",
    "--indexer-log-interval", "--use-legacy-static-engine", "--moe-upcycling-granularity", "--moe-use-upcycling",
    "--use-same-sampling-seed", "--no-pin-cpu-", "--megatron-fsdp-version", "--num-speculative-tokens",
    "--cache-mla-latents", "--decode-only-cuda-graphs", "--enable-chunked-prefill", "--enable-experimental",
    "--mamba-inference-", "--openai-gelu", "--tp-comm-overlap-cfg", "--ddp-average-in-collective",
    "--ddp-param-name-patterns-for-fp32-local-accumulation", "--spec", "--model-parallel-size",
    "--decoder-num-layers", "--no-yarn", "--batch-size",
    # MindSpeed-LLM: fused kernels and the framework switch (no effect on sizes; kernels priced per operator)
    "--ai-framework", "--use-fused-", "--use-mc2", "--use-ascend", "--no-shared-storage",
)

#: Megatron ``--recompute-modules`` names -> the estimator's (``core_attn`` is Megatron's own name too)
RECOMPUTE_MODULE_NAMES = {"core_attention": "core_attn"}
