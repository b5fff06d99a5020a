"""The ``options`` section of the estimator configuration (spec §5): the seed's fixes as switches, the time
model's knobs and the off-switch of every issue-26 mechanism. Split from :mod:`estimator.config.sections`
(which re-exports it) to keep each module within the size limit.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from estimator.config.errors import config_rule, did_you_mean
from estimator.config.sections import PERF_PART_NAMES, StrictSection
from estimator.inputs.runtime_buffer import SEED_SAFETY_BUFFER_MB


class OptionsConfig(StrictSection):
    """The seed's fixes as options (spec §5) and the time model's knobs.

    Defaults are the seed's (= ``presets.fixed()``), except ``tp_shardable_overhead_mb`` whose
    None means the profile's default (``SEED_TP_SHARDABLE_OVERHEAD_MB`` = 2676 under ``sapp-nd``, 0
    otherwise; spec §5; ``estimator.inputs.runtime_buffer``).
    """

    safety_buffer_mb: float = Field(default=SEED_SAFETY_BUFFER_MB, ge=0, description="P1: safety buffer (MiB), /tp when scaled")
    tp_scaled_buffers: bool = Field(default=True, description="P1: false keeps the safety buffer flat")
    tp_shardable_overhead_mb: float | None = Field(
        default=None, ge=0, description="P1: runtime overhead (MiB) /tp; None = profile default"
    )
    ep_bubble_overlap_ratio: float = Field(default=1.0, ge=0, le=1, description="P3: EP comm hidden in bubble")
    ep_comm_overlap: float = Field(default=0.0, ge=0, le=1, description="P4: overlap of EP comm time")
    convert_ep_comm_to_time: bool = Field(default=True, description="P4: EP bytes -> seconds")
    dp_comm_zero_hack: bool = Field(default=False, description="P3/P4: reference's comm[DP] = 0")
    tp_comm_half_hack: bool = Field(default=False, description="P3/P4: reference's comm[TP] /= 2")
    perf_mode: Literal["time", "score"] = "time"
    compute_efficiency: float = Field(
        default=1.0, gt=0, le=1,
        description="derating of the compute passes: time / eff (raw peak model: achieved share of peak FLOP/s)",
    )
    operator_roofline: bool = Field(
        default=True,
        description="price each operator on the hardware's sourced efficiencies (estimator.perf.roofline); "
                    "off: GEMM FLOPs at raw peak (legacy())",
    )
    host_launch_overhead: bool = Field(
        default=True,
        description="stage pass time ≥ host kernel-launch time (kernels × profile per-launch cost); off in legacy()",
    )
    host_launch_cost_us: float | None = Field(
        default=None, gt=0, allow_inf_nan=False,
        description="host µs per launched kernel; None = the profile's sourced value (estimator.inputs.profiles); "
                    "set it from a profile of your own run (analyzer indicator host_us_per_launch)",
    )
    comm_overlap: bool = Field(
        default=True,
        description="overlap mechanisms (estimator.perf.overlap): the framework's overlap switches "
                    "(parallel.overlap_grad_reduce ...) and the overlap its implementation always has (CP ring "
                    "under attention blocks); false: every collective fully exposed (the model before them)",
    )
    dp_comm_overlap: float = Field(default=0.0, ge=0, le=1, description="share of DP comm hidden by compute")
    tp_comm_overlap: float = Field(default=0.0, ge=0, le=1, description="share of TP comm hidden by compute")
    cp_comm_overlap: float = Field(default=0.0, ge=0, le=1, description="share of CP comm hidden by compute")
    part_coefficients: dict[str, float] | None = Field(
        default=None, description="optional per-part multipliers (calibration), keys = PerfParts names")
    ep_tokens_per_expert: list[float] | None = Field(
        default=None, description="routed tokens per expert (any scale, length num_experts); None = balanced")
    torch_compile: bool = Field(
        default=False,
        description="torch.compile of each block (torchtitan): in time, the element-wise ops of train.eager_ops "
                    "blocks are fused again (estimator.perf.eager); no memory effect modelled: no published source "
                    "states one (estimator.memory.fsdp2.TORCH_COMPILE_MEMORY)",
    )
    async_tp_patterns: bool = Field(
        default=True,
        description="torchtitan's async TP hides only the collectives torch's micro-pipeline pass fuses (the "
                    "backward reduce-scatters of summed input gradients stay exposed, estimator.perf.overlap."
                    "async_tp_exposed); off: both sides as rings in every pass (the model before)")
    expert_bias: bool = Field(
        default=True,
        description="model.linear_bias under Megatron-Core: the routed experts' fc2 bias added per local expert, "
                    "weighted by the routing probabilities (estimator.perf.expert_bias); off: not priced, as before")
    moe_probs_in_activation: bool = Field(
        default=True,
        description="Megatron-Core (since core 0.13) multiplies the routing probabilities inside the experts' weighted "
                    "activation, so un-permuting the experts' output saves nothing (estimator.memory.activation."
                    "unpermute_saves_output); off: the un-permuted output T·k·h is kept, as before")
    loss_parallel_memory: bool = Field(
        default=True,
        description="torch's loss_parallel backward (torchtitan with TP > 1) holds three fp32 logits-sized tensors "
                    "beside the saved log-probabilities (estimator.memory.activation.torch_loss_parallel); off: the "
                    "profile's two, as the unsharded loss (the model before)")
    eager_kernels: bool = Field(
        default=True,
        description="price train.eager_ops' norms, RoPE and SwiGLU as their PyTorch eager decompositions "
                    "(estimator.perf.eager); off: one fused kernel each (the model before it)")
    expandable_segments: bool = Field(
        default=False, description="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: no idle-block reserve terms")
    low_precision_gemms: bool = Field(
        default=True,
        description="price the GEMMs of the linear layers at the recipe's FP8 / FP4 peak with its cast kernels and "
                    "keep the recipe's bytes in memory (estimator.perf.lowp); off: every GEMM at the compute "
                    "dtype's peak and precision.fp8_linear's per-tensor FP8 memory (the model before recipes)",
    )
    fused_quantize: bool = Field(default=True, description="TE's fused norm + cast, no transposed FP8 copy on "
                                 "hardware.fp8_gemm_any_layout (estimator.perf.lowp); off: as before")
    quantized_tp_gather: bool = Field(default=True, description="TE's quantized sequence-parallel all-gathers "
                                      "(estimator.perf.lowp); off: compute-dtype all-gathers as before")
    cast_kernel_latency: bool = Field(default=True, description="a cast kernel's fixed time is the hardware's "
                                      "cast_kernel_latency_us (estimator.perf.efficiency); off: kernel_latency_us")
    measured_gemm_rate: bool = Field(default=True, description="GEMM factors times the hardware's measured "
                                     "efficiency.gemm_rate (estimator.inputs.gemm_rates, estimator.perf.efficiency); "
                                     "off: the GEMM factors alone, as before")
    ssd_scan_memory: bool = Field(default=True, description="the Mamba-2 SSD scan at the hardware's measured "
                                  "efficiency.ssd_scan_memory (estimator.inputs.ssd_scan); off: the memory table, as "
                                  "before")
    main_grad_add: bool = Field(default=True, description="train.gradient_accumulation_fusion false: Megatron's "
                                "main_grad add per micro-batch (operators.main_grad_add_op); off: not priced")
    cuda_graphs: bool = Field(
        default=True,
        description="train.cuda_graph bounds the host by one launch per captured graph instead of one per kernel "
                    "(estimator.perf.graphs); off: every kernel launched (the model before CUDA graphs)",
    )
    #: MoE mechanisms (issue 26, each off: the model before it): the experts' activation one kernel over all
    #: local experts (TEGroupedMLP, estimator.perf.operators.grouped_experts); grouped GEMMs by tokens per expert
    #: (the hardware's measured table); train.te_op_fuser's grouped casts and GEMMs (operators.fused_grouped_experts);
    #: the flex dispatcher's one copy per destination EP rank (estimator.perf.comm.ep_dispatch_tokens_flex)
    grouped_expert_activation: bool = Field(default=True, description="one activation kernel for the local experts")
    grouped_gemm_by_tokens: bool = Field(default=True, description="grouped GEMM efficiency by tokens per expert")
    grouped_op_fuser: bool = Field(default=True, description="train.te_op_fuser: one grouped kernel per cast / GEMM")
    flex_dispatch_per_rank: bool = Field(default=True, description="flex dispatcher: one copy per destination rank")
    flex_dispatch_per_node: bool = Field(default=True, description="flex dispatcher over NVLink domains: one copy per domain")
    attention_head_dim: bool = Field(default=True, description="flash attention by head dim (HEAD_DIM_EFFICIENCY)")
    fp8_attention: bool = Field(default=True, description="precision.fp8_attention: attention at the FP8 peak")
    fsdp2_copies: bool = Field(default=True, description="FSDP2's all-gather copy-out and reduce-scatter copy-in "
                               "on the compute stream (operators.fsdp2_copy_op)")
    sfu_softmax: bool = Field(default=True, description="flash attention's softmax exponentials at the device's SFU "
                              "rate where it differs from the attention factors' device (roofline.sfu_adjusted_s)")
    muon: bool = Field(default=True, description="train.optimizer muon: one momentum per 2-D weight and the "
                       "Newton-Schulz GEMMs of its step (estimator.perf.muon); off: priced as Adam, as before")
    a2a_unpaired_steps: bool = Field(
        default=True,
        description="parallel.overlap_moe_expert_parallel_comm: the steps Megatron's combined 1F1B runs alone "
                    "(first forward / last backward, warm-up and cool-down) keep their EP all-to-alls exposed "
                    "(estimator.perf.overlap.a2a_unpaired_share); off: the window (m-1)/m of the compute as before",
    )
    offload_copies: bool = Field(
        default=True,
        description="train.cpu_offloading_num_layers: TE's copies of the offloaded layers' activations to and from "
                    "host memory over hardware.host_link_gb_s, the stalls of its default schedule added to the "
                    "passes (estimator.perf.offload); off: memory only, as before",
    )
    cp_gather_memory: bool = Field(
        default=True,
        description="parallel.cp_comm_type allgather (megatron / fsdp2 profiles): the whole sequence's K and V that "
                    "TE gathers, and their gradients, held in one layer's attention backward "
                    "(estimator.memory.activation.cp_allgather_kv_bytes); off: not counted, as before",
    )
    per_layer_recompute: bool = Field(
        default=True,
        description="recompute.method block and torchtitan's layer-level SAC (selective_ac_option <n>) re-run only "
                    "their chosen layers, the others none (estimator.inputs.derive.recomputed_layers); off: block "
                    "re-runs every layer and layer-level SAC's step time prices Megatron's core_attn set (the model "
                    "before it; memory keeps its per-layer layer-level SAC)",
    )
    op_sac_recompute: bool = Field(
        default=True,
        description="recompute.selective_ac_option op re-runs what torchtitan's op-level policy recomputes (the "
                    "even mms, every non-matmul op, not SDPA: estimator.perf.sac); off: Megatron's default "
                    "selective set core_attn (the model before it)",
    )
    adapters: bool = Field(
        default=True,
        description="adapter.kind lora prices frozen base weights and the adapters (estimator.inputs.adapters); "
                    "off: full fine-tuning numbers (the model before adapters)",
    )

    @field_validator("part_coefficients")
    @classmethod
    def _known_parts(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        for key, coef in (value or {}).items():
            if key not in PERF_PART_NAMES:
                hint = did_you_mean(key, PERF_PART_NAMES)
                raise config_rule(
                    f"options.part_coefficients.{key}",
                    f"unknown part; known: {', '.join(PERF_PART_NAMES)}" + (f" ({hint})" if hint else ""),
                )
            if coef < 0:
                raise config_rule(f"options.part_coefficients.{key}", "must be ≥ 0")
        return value
