"""The built-in device presets as data: every number with its source (datasheet, published
benchmark, the reference tool, or a stated assumption) in the preset's ``provenance`` or its levels'
and efficiencies' ``sources``. :mod:`estimator.inputs.hardware` validates them as
:class:`~estimator.inputs.hardware.HardwareSpec`; the Blackwell systems beyond DGX B200 (B300, GB200
NVL72, GB300 NVL72) are in :mod:`estimator.inputs.blackwell`.

Peaks are dense (no structured sparsity) tensor-core TFLOP/s per GPU; ``fp8`` is the FP8 (E4M3/E5M2,
also MXFP8) peak and ``fp4`` the NVFP4 / MXFP4 peak, present only where the device has FP4 tensor
cores (Blackwell); a recipe that needs a peak the preset lacks is refused
(:mod:`estimator.config.rules`).
"""

from __future__ import annotations

from typing import Any

from estimator.inputs.ssd_scan import with_ssd_scan


def _lv(name: str, max_devices: int | None, bw: float, eff: float, lat: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "max_devices": max_devices, "bandwidth_gb_s": bw, "efficiency": eff, "latency_us": lat,
            **extra}


#: efficiency / latency defaults shared by presets: the reference tool's helper constants
#: (reference §3.3: level efficiency 0.7 node / 0.9 cluster, latency 1e-5 / 2e-5 s).
_REF_NET = "efficiency and latency: SAPP-ND comm_time helper constants (reference §3.3); assumption"
_ASSUMED_EFF = "SAPP-ND comm_time helper constant (reference §3.3); assumption"

#: NCCL's own latency model: a ring collective costs baseLat + nsteps·hwLat[link][Ring][protocol], the
#: Simple protocol being the one of large messages: per ring step 3.4 µs over NVLink, 9.6 µs over the
#: network (the per-step latency of estimator.perf.network)
_NCCL_LAT = ("NVIDIA/nccl@01afd20a77 src/graph/tuning.cc hwLat[{}][Ring][Simple] = {} us per ring step "
             "(latency = baseLat + nsteps * hwLat)")
_NVLINK_LAT_US, _NET_LAT_US = 3.4, 9.6
#: NCCL's baseLat[Ring][Simple]: the fixed latency of one ring collective call
_NCCL_BASE_LAT_US = 8.4
_NCCL_BASE = "NVIDIA/nccl@01afd20a77 src/graph/tuning.cc baseLat[Ring][Simple] = 8.4 us per ring collective call"
_SIMUMAX_A100_NET = "MooreThreads/SimuMax@2127d7d919 configs/system/a100_bf16.json: networks.{}.bandwidth.efficient_factor"
_H100_EFF = ("SAPP-ND helper constant (reference §3.3); assumption - SimuMax's h100_nvlink.json factors (0.50-0.60) "
             "are against 900 GB/s (bidirectional NVLink4) and exceed 1 against the 450 GB/s per direction priced here")
#: B200 intra-node factors measured by SimuMax, per collective kind (its all2all is ndval's all_to_all)
_SIMUMAX_B200_OP = ("MooreThreads/SimuMax@e691807a7e configs/system/b200_bf16_ceperm.json: "
                    "networks.high_intra_node.op.{}.efficient_factor (measured)")


def _level(name: str, max_devices: int | None, bw: float, latency_us: float, efficiency: float,
           sources: dict[str, str], collectives: dict[str, float] | None = None) -> dict[str, Any]:
    """A sourced network level: NCCL's per-step latency for its link type (every kind) and base latency
    per ring collective call, the level's efficiency and per-kind efficiencies; ``sources`` names where each efficiency comes from."""
    link = "NVLINK" if max_devices is not None else "NET"
    per_kind = {kind: {"efficiency": eff, "latency_us": latency_us} for kind, eff in (collectives or {}).items()}
    return _lv(name, max_devices, bw, efficiency, latency_us, collectives=per_kind, call_latency_us=_NCCL_BASE_LAT_US,
               sources={"latency_us": _NCCL_LAT.format(link, latency_us), "call_latency_us": _NCCL_BASE, **sources})


_NVIDIA_NET = ("efficiency and latency per level and collective kind with their sources in levels[].sources "
               "(NCCL's per-step latencies; SimuMax's efficiencies where published)")
#: NVLink inside a node of 8 and InfiniBand between nodes of the NVIDIA presets, each number sourced
NVIDIA_LEVELS: dict[str, list[dict[str, Any]]] = {
    "a100-80g": [
        _level("nvlink3", 8, 300.0, _NVLINK_LAT_US, 0.7, {"efficiency": _SIMUMAX_A100_NET.format("high_intra_node")}),
        _level("ib-hdr", None, 25.0, _NET_LAT_US, 0.6, {"efficiency": _SIMUMAX_A100_NET.format("inter_node")}),
    ],
    "h100-80g": [
        _level("nvlink4", 8, 450.0, _NVLINK_LAT_US, 0.7, {"efficiency": _H100_EFF}),
        _level("ib-ndr", None, 50.0, _NET_LAT_US, 0.9, {"efficiency": _ASSUMED_EFF}),
    ],
    "b200": [
        _level("nvlink5", 8, 900.0, _NVLINK_LAT_US, 0.7,
               {"efficiency": _ASSUMED_EFF + " (p2p only: SimuMax's measured p2p factor 1.45 exceeds 1 against the "
                                             "900 GB/s per direction)",
                **{f"collectives.{kind}": _SIMUMAX_B200_OP.format(op) for kind, op in (
                    ("all_reduce", "all_reduce"), ("all_gather", "all_gather"), ("reduce_scatter", "reduce_scatter"),
                    ("all_to_all", "all2all"))}},
               {"all_reduce": 0.7424, "all_gather": 0.6735, "reduce_scatter": 0.6731, "all_to_all": 0.5968}),
        _level("ib-ndr", None, 50.0, _NET_LAT_US, 0.9, {"efficiency": _ASSUMED_EFF}),
    ],
}

#: SimuMax's published system files (MooreThreads/SimuMax configs/system/): per op class an efficient_factor
#: against the datasheet peak, an HBM efficient_factor and a latency_us added to every operator's memory-access
#: time (simumax/core/config.py compute_mem_access_time), each cited at a commit that holds the file
#: (a100_bf16.json was removed in 3005b17 and h100_nvlink.json after 160921c; the others are at 4dcaae513b)
_SIMUMAX_AT = {"a100_bf16.json": "95a0211dda", "h100_nvlink.json": "160921ca96"}
_SIMUMAX = "MooreThreads/SimuMax@{} configs/system/{}"
#: SimuMax's own note on its H100 file (``_notes`` of h100_nvlink.json at 160921ca96)
_H100_STARTER = ("; SimuMax's note on this file: 'Spec-based starter config ... Compute efficiencies are population "
                 "averages, NOT shape-calibrated ... Expect 10-20% error on iter time'")


def simumax_file(file: str) -> str:
    """``owner/repo@commit path`` of one SimuMax system file, at a commit that holds it."""
    return _SIMUMAX.format(_SIMUMAX_AT.get(file, "4dcaae513b"), file)


#: a near-empty kernel's device time (µs): ``ndval calibrate --from-profile`` on the shared HTA control trace
#: (kineto/hta-trace-diff/control.json.gz, 8 NVIDIA A100-PG509-200 ranks' rank 0): the 10th percentile of its
#: 6,078 element-wise kernel durations, 3.00 µs (tests/estimator/test_cast_latency.py re-derives it)
CAST_KERNEL_LATENCY_US = 3.0
CAST_LATENCY_SOURCE = ("ndval calibrate --from-profile kineto/hta-trace-diff/control.json.gz (HTA's test data, NVIDIA "
                       "A100-PG509-200): p10 duration of 6,078 element-wise kernels = 3.00 us, a near-empty kernel's "
                       "time; applied to every NVIDIA device (assumption: no per-device figure)")


def _simumax_eff(file: str, hbm_gb_s: float, hbm_source: str, matmul: float, sdp_fwd: float, sdp_bwd: float,
                 mem: float, latency_us: float, moe: tuple[str, float, float, float] | None = None,
                 fp8: tuple[float, float] | None = None, note: str = "") -> dict[str, Any]:
    """A :class:`DeviceEfficiency` mapping from one SimuMax system file (flat tables: one size row);
    ``moe``: (``owner/repo@commit`` of the file read, group_matmul, permute_fwd, permute_bwd factors);
    ``fp8``: its (fp8_matmul, fp8_group_matmul) factors against the FP8 peak; ``note``: appended to every
    factor's source (what the file says of itself)."""
    src = simumax_file(file)
    extra: dict[str, Any] = {}
    if fp8 is not None:
        extra = {"fp8_matmul": fp8[0], "fp8_grouped_matmul": fp8[1]}
    if moe is not None:
        at, grouped, perm_fwd, perm_bwd = moe
        extra |= {"grouped_matmul": grouped, "permute_memory_fwd": perm_fwd, "permute_memory_bwd": perm_bwd}
        moe_src = f"{at} configs/system/{file}"
        extra_sources = {"grouped_matmul": f"{moe_src}: accelerator.op.group_matmul.efficient_factor",
                         "permute_memory_fwd": f"{moe_src}: accelerator.bandwidth.permute_fwd.efficient_factor",
                         "permute_memory_bwd": f"{moe_src}: accelerator.bandwidth.permute_bwd.efficient_factor"}
    factors = {
        "matmul": f"{src}: accelerator.op.matmul.efficient_factor",
        "attention_fwd": f"{src}: accelerator.op.sdp_fwd.efficient_factor",
        "attention_bwd": f"{src}: accelerator.op.sdp_bwd.efficient_factor",
        "memory": f"{src}: accelerator.bandwidth efficient_factor",
        "kernel_latency_us": f"{src}: accelerator.bandwidth latency_us (added per operator memory access)",
        **(extra_sources if moe is not None else {}),
        **({"fp8_matmul": f"{src}: accelerator.op.fp8_matmul.efficient_factor (against the FP8 peak)",
            "fp8_grouped_matmul": f"{src}: accelerator.op.fp8_group_matmul.efficient_factor (against the FP8 peak)"}
           if fp8 is not None else {}),
    }
    return extra | {
        "hbm_gb_s": hbm_gb_s, "matmul": [(0.0, matmul)], "attention_fwd": sdp_fwd, "attention_bwd": sdp_bwd,
        "memory": [(0.0, mem)], "kernel_latency_us": latency_us, "cast_kernel_latency_us": CAST_KERNEL_LATENCY_US,
        "sources": {"cast_kernel_latency_us": CAST_LATENCY_SOURCE, "hbm_gb_s": hbm_source,
                    **{k: v + note for k, v in factors.items()}},
    }


#: SimuMax's measured B200 grouped-GEMM table (``group_matmul.accurate_efficient_factor`` of
#: b200_bf16_ceperm.json: 108 measurements of ``ng`` experts × ``M`` tokens each on the DeepSeek-V2 / V3
#: expert shapes): per power-of-two bin of ``M`` (154 and 128 → the first row, 256 / 308 → 256, 512 / 616
#: → 512, 1024 / 1232 → 1024, 2460 → 2048, 9832 → 8192) the median over the shapes of the ``fwd``
#: entries (forward) and of the ``bwd_grad_act`` + ``bwd_grad_w`` entries (backward), 4 digits
_B200_GROUPED_BY_TOKENS = {
    "grouped_matmul_fwd_by_tokens": [(0.0, 0.1915), (256.0, 0.2889), (512.0, 0.3799), (1024.0, 0.4262),
                                     (2048.0, 0.4913), (8192.0, 0.4597)],
    "grouped_matmul_bwd_by_tokens": [(0.0, 0.1415), (256.0, 0.2381), (512.0, 0.2917), (1024.0, 0.3815),
                                     (2048.0, 0.4343), (8192.0, 0.4410)],
}
_B200_GROUPED_SOURCE = (f"{simumax_file('b200_bf16_ceperm.json')}: accelerator.op.group_matmul."
                        "accurate_efficient_factor, median per power-of-two bin of tokens per expert "
                        "(estimator.inputs.device_presets._B200_GROUPED_BY_TOKENS)")


def _with_grouped_table(eff: dict[str, Any]) -> dict[str, Any]:
    """``eff`` with SimuMax's measured B200 grouped-GEMM efficiency by tokens per expert."""
    sources = {**eff["sources"], **{k: _B200_GROUPED_SOURCE for k in _B200_GROUPED_BY_TOKENS}}
    return {**eff, **_B200_GROUPED_BY_TOKENS, "sources": sources}


#: softmax exponential throughput (SFU ``MUFU.EX2``) per GPU of the Blackwell (B200, GB200) and Blackwell
#: Ultra (B300, GB300) parts, exponentials per second, with their sources
BLACKWELL_SFU_EXP_PER_S = 5.0e12
BLACKWELL_ULTRA_SFU_EXP_PER_S = 10.7e12
SFU_SOURCE = ("per-GPU 'Attention acceleration (SFU EX2)': Blackwell (B200, GB200) 5 TeraExponentials/s, "
              "Blackwell Ultra (B300, GB300) 10.7 TeraExponentials/s (NVIDIA's Blackwell Ultra figures as tabled "
              "in verda.com/blog/gb300-nvl72-architecture); NVIDIA Technical Blog 'Inside NVIDIA Blackwell Ultra: "
              "The Chip Powering the AI Factory Era' (2x attention-layer acceleration) and 'Making Softmax More "
              "Efficient with NVIDIA Blackwell Ultra' (SFU MUFU.EX2 throughput doubled; on GB200 the second "
              "attention GEMM waits for the softmax)")


def _with_sfu(eff: dict[str, Any], device_exp_per_s: float) -> dict[str, Any]:
    """``eff`` (attention factors measured on a B200) with the B200's and this device's SFU rates."""
    sources = {**eff["sources"], "sfu_exp_per_s": SFU_SOURCE,
               "attention_sfu_exp_per_s": SFU_SOURCE + "; the attention factors were measured on a B200"}
    return {**eff, "sfu_exp_per_s": device_exp_per_s, "attention_sfu_exp_per_s": BLACKWELL_SFU_EXP_PER_S,
            "sources": sources}


#: the torchtitan H100 benchmark's hardware section (Grand Teton hosts)
_TITAN_H100 = "pytorch/torchtitan@b5bcd76c66 benchmarks/llama3_h100_202412_torchtitan.md 'Hardware'"
#: SimuMax's H100 file (h100_nvlink.json, read at 160921ca96): group_matmul 0.60, permute_fwd / _bwd 0.25
_SIMUMAX_H100_MOE = ("MooreThreads/SimuMax@160921ca96", 0.60, 0.25, 0.25)
#: the same file's FP8 factors against the 1,979 TFLOPS FP8 peak: fp8_matmul 0.65, fp8_group_matmul 0.58
_SIMUMAX_H100_FP8 = (0.65, 0.58)

#: the source of ``fp8_gemm_any_layout`` (compute capability 10.x: B200, B300, GB200, GB300)
FP8_ANY_LAYOUT = ("NVIDIA/TransformerEngine transformer_engine/pytorch/utils.py is_non_tn_fp8_gemm_supported(): "
                  "compute capability 10.0 to < 12.0 (or >= 13.0); transformer_engine/common/gemm/cublaslt_gemm.cu: "
                  "per-tensor FP8 operands read row-wise in either orientation there ('Hopper only supports TN "
                  "GEMMs for FP8')")
#: the source of ``mxfp8_gemm`` (compute capability 10.x: B200, B300, GB200, GB300)
MXFP8_GEMM = ("NVIDIA/TransformerEngine@d0067d0da transformer_engine/pytorch/quantization.py _compute_mxfp8_support(): "
              "'Device compute capability 10.0 or higher required for MXFP8 execution', and not on 12.0+ ('MXFP8 "
              "(for all gemm layouts) is not supported on 12.0+ architectures yet'); check_recipe_support() raises "
              "for MXFP8BlockScaling elsewhere")

PRESETS: dict[str, dict[str, Any]] = {
    "ascend-910b": {
        "name": "ascend-910b",
        "hbm_gib": 64.0,
        "peak_tflops": {"bf16": 313.0, "fp16": 313.0, "fp32": 78.0},
        "devices_per_node": 8,
        "levels": [_lv("hccs", 8, 50.0, 0.7, 10.0), _lv("roce", None, 10.0, 0.9, 20.0)],
        "provenance": {
            "hbm_gib": "Atlas 800T A2 (910B) 64 GB HBM per NPU, vendor material",
            "peak_tflops": "approximate vendor figure for 910B (fp16/bf16 ~313 TFLOPS); fp32 assumed 1/4",
            "levels": "SAPP-ND A2 device: bounds [8, inf], bandwidth [50, 10] GB/s (reference §3.3)",
            "network": _REF_NET,
        },
    },
    "ascend-910c": {
        "name": "ascend-910c",
        "hbm_gib": 64.0,
        "peak_tflops": {"bf16": 376.0, "fp16": 376.0, "fp32": 94.0},
        "devices_per_node": 16,
        "levels": [
            _lv("hccs", 16, 200.0, 0.7, 10.0),
            _lv("supernode", 24, 25.0, 0.9, 20.0),
            _lv("roce", None, 10.0, 0.9, 20.0),
        ],
        "provenance": {
            "hbm_gib": "A3 (910C) per die as a device: 64 GB (128 GB per two-die package); assumption",
            "peak_tflops": "approximate per-die figure; assumption",
            "levels": "SAPP-ND A3 device: bounds [16, 24, inf], bandwidth [200, 25, 10] GB/s (reference §3.3)",
            "network": _REF_NET,
        },
    },
    "a100-80g": {
        "name": "a100-80g",
        "hbm_gib": 80.0,
        "peak_tflops": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5},
        "devices_per_node": 8,
        "levels": NVIDIA_LEVELS["a100-80g"],
        "efficiency": _simumax_eff("a100_bf16.json", 2039.0, "NVIDIA A100 80GB SXM datasheet: 2,039 GB/s",
                                   0.75, 0.75, 0.75, 0.7, 40.0),
        "provenance": {
            "hbm_gib": "NVIDIA A100 80GB datasheet (81920 MiB)",
            "peak_tflops": "NVIDIA A100 datasheet, dense (no sparsity); fp32 non-tensor-core",
            "levels": "NVLink3 600 GB/s bidirectional = 300 GB/s per direction; HDR InfiniBand 200 Gb/s per GPU",
            "network": _NVIDIA_NET,
        },
    },
    "h100-80g": {
        "name": "h100-80g",
        "hbm_gib": 80.0,
        "peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0, "fp8": 1979.0},
        "devices_per_node": 8,
        "levels": NVIDIA_LEVELS["h100-80g"],
        "efficiency": _simumax_eff("h100_nvlink.json", 3350.0, "NVIDIA H100 SXM5 datasheet: 3.35 TB/s",
                                   0.70, 0.72, 0.55, 0.85, 20.0, moe=_SIMUMAX_H100_MOE,
                                   fp8=_SIMUMAX_H100_FP8, note=_H100_STARTER),
        "provenance": {
            "hbm_gib": "NVIDIA H100 SXM5 80GB datasheet",
            "peak_tflops": "NVIDIA H100 SXM5 datasheet, dense (no sparsity)",
            "levels": "NVLink4 900 GB/s bidirectional = 450 per direction; NDR InfiniBand 400 Gb/s per GPU",
            "network": _NVIDIA_NET,
        },
    },
    "h100-sxm-96g-hbm2e": {
        "name": "h100-sxm-96g-hbm2e",
        "hbm_gib": 96.0,
        "peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0, "fp8": 1979.0},
        "devices_per_node": 8,
        "levels": NVIDIA_LEVELS["h100-80g"],
        "efficiency": _simumax_eff("h100_nvlink.json", 2400.0, _TITAN_H100 + ": 96GB HBM2e with 2.4 TB/sec peak "
                                   "memory bandwidth", 0.70, 0.72, 0.55, 0.85, 20.0, moe=_SIMUMAX_H100_MOE,
                                   fp8=_SIMUMAX_H100_FP8, note=_H100_STARTER),
        "provenance": {
            "hbm_gib": _TITAN_H100 + ": 96GB HBM2e (taken as GiB like the 80 GB H100 preset; only the fits check "
                       "reads it)",
            "peak_tflops": "NVIDIA H100 SXM5 datasheet, dense: an upper bound here. " + _TITAN_H100 + " footnote 2: "
                           "'HBM2e-based SXM H100 with lower TDP, the actual peak TFLOPs number is between SXM and "
                           "NVL, and we don't know its exact value' (H100 NVL datasheet: 835 BF16 / 1670 FP8 dense); "
                           "the 500 W power limit's clocks are not modelled",
            "efficiency": "SimuMax's H100 factors (a spec-based starter file for the 700 W H100 SXM5 80GB, not "
                          "shape-calibrated) against this HBM bandwidth",
            "levels": _TITAN_H100 + ": 8 H100 per host fully connected with NVLink (NVLink4 450 GB/s per "
                      "direction), 400 Gb/s RDMA per GPU",
            "network": _NVIDIA_NET,
        },
    },
    "h200": {
        "name": "h200",
        "hbm_gib": 140.0,
        "peak_tflops": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0, "fp8": 1979.0},
        "devices_per_node": 8,
        "levels": NVIDIA_LEVELS["h100-80g"],
        "efficiency": _simumax_eff("h100_nvlink.json", 4800.0, "NVIDIA H200 SXM datasheet: 4.8 TB/s; the "
                                   "efficiencies are SimuMax's H100 file (same tensor cores; assumption)",
                                   0.70, 0.72, 0.55, 0.85, 20.0, moe=_SIMUMAX_H100_MOE,
                                   fp8=_SIMUMAX_H100_FP8, note=_H100_STARTER),
        "provenance": {
            "hbm_gib": "NVIDIA H200 SXM 141 GB (decimal) datasheet; ~140 GiB usable, rounded",
            "peak_tflops": "NVIDIA H200 SXM datasheet, dense (same tensor cores as H100)",
            "levels": "NVLink4 900 GB/s bidirectional; NDR InfiniBand 400 Gb/s per GPU",
            "network": _NVIDIA_NET,
        },
    },
    "b200": {
        "name": "b200",
        "hbm_gib": 180.0,
        "peak_tflops": {"bf16": 2250.0, "fp16": 2250.0, "fp32": 80.0, "fp8": 4500.0, "fp4": 9000.0},
        "devices_per_node": 8,
        "levels": NVIDIA_LEVELS["b200"],
        "fp8_gemm_any_layout": True,
        "mxfp8_gemm": True,
        "efficiency": with_ssd_scan(_with_sfu(_with_grouped_table(_simumax_eff(
            "b200_bf16_ceperm.json", 8000.0, "NVIDIA DGX B200 datasheet: 64 TB/s HBM3e for 8 GPUs = 8 TB/s per GPU",
            0.48780765792034037, 0.7059717796465379, 0.6943225842672003, 0.666, 30.0,
            moe=("MooreThreads/SimuMax@4dcaae513b", 0.30199308868813257, 0.5008136513816437, 0.5108178337365621))),
            BLACKWELL_SFU_EXP_PER_S)),
        "provenance": {
            "hbm_gib": "DGX B200: 1,440 GB HBM3e for 8 GPUs = 180 GB per GPU (decimal); rounded",
            "peak_tflops": "NVIDIA DGX B200 datasheet per GPU, dense (no sparsity): 72 PFLOPS FP8 training and "
                           "144 PFLOPS FP4 inference for 8 GPUs are sparse figures, halved dense: fp8 4.5, fp4 9 "
                           "PFLOPS per GPU; bf16 2.25 PFLOPS; fp32 approximate",
            "levels": "NVLink5 1.8 TB/s bidirectional = 900 GB/s per direction; 400 Gb/s InfiniBand per GPU",
            "network": _NVIDIA_NET,
            "fp8_gemm_any_layout": FP8_ANY_LAYOUT,
            "mxfp8_gemm": MXFP8_GEMM,
        },
    },
}

#: short names accepted for the presets
ALIASES: dict[str, str] = {
    "a2": "ascend-910b",
    "910b": "ascend-910b",
    "a3": "ascend-910c",
    "910c": "ascend-910c",
    "a100": "a100-80g",
    "h100": "h100-80g",
    "h200-141g": "h200",
    "b200-180g": "b200",
}


