"""Low-precision linear-layer recipes as data: what each one computes in, casts, and keeps.

A recipe (``precision.linear_recipe``; ``precision.fp8_linear: true`` alone = the profile's default
recipe) runs the GEMMs of the transformer layers' linear layers (attention projections, MLP / expert /
shared-expert fc1 and fc2, MLA down/up projections) on the FP8 or FP4 tensor cores. Everything else
stays in its own precision: core attention, norms, softmax, RoPE, router, embedding, output layer and
loss, and the optimizer (Megatron-Core wraps only the transformer layers' TE modules in
``fp8_autocast``; torchtitan converts every ``nn.Linear`` but ``output``).

Per linear and pass the recipe casts each GEMM operand: forward the input ``X`` and the weight ``W``,
backward the output gradient ``dY``. Each cast reads the compute-dtype tensor and writes the quantized
data (``element_bytes``) plus its scales (``scale_bytes_per_element``), row-wise and, where the
backward GEMMs need the other orientation, a column-wise (transposed) copy too
(``columnwise_copy``: one fused cast-transpose kernel). Recipes with per-tensor *current* scaling
first reduce the tensor's absolute maximum (``amax_pass``: one more read, one more kernel); delayed
scaling takes the scale from the amax history and the block-scaled recipes compute each block's
scale inside the cast kernel. Sources per recipe in :data:`RECIPES`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

#: a validated configuration: estimator.config.schema.EstimatorConfig, which imports this module (not imported here, even
#: for type checking: no import cycle)
EstimatorConfig = Any


RecipeName = Literal["delayed", "tensorwise", "blockwise", "mxfp8", "nvfp4", "torchao_tensorwise",
                     "torchao_rowwise"]

_TE_DOCS = "NVIDIA/TransformerEngine docs, 'Using FP8 with Transformer Engine' and transformer_engine/common/recipe"
_TE_FP8 = (f"{_TE_DOCS}: DelayedScaling (scale from the amax history, amax reduced inside the cast kernel); "
           "E4M3 forward / E5M2 gradients (format HYBRID); on Hopper the FP8 GEMM is TN only, so the backward "
           "needs transposed FP8 copies, written by a fused cast-transpose ('handling transposes')")
_TE_CURRENT = (f"{_TE_DOCS}: Float8CurrentScaling (Megatron --fp8-recipe tensorwise): the scale of each tensor "
               "from its own amax, computed by a separate amax reduction before the cast")
_TE_BLOCK = (f"{_TE_DOCS}: Float8BlockScaling (Megatron --fp8-recipe blockwise, DeepSeek-V3 style): 1x128 "
             "activation / 128x128 weight blocks, one fp32 scale per 128 elements, computed in the cast kernel")
_TE_MX = (f"{_TE_DOCS}: MXFP8BlockScaling (OCP MX spec v1.0): E4M3 data, one E8M0 (1 B) scale per 32 "
          "consecutive elements along the reduction dimension, so row-wise and column-wise copies are "
          "quantized separately (both written by the cast)")
_TE_NVFP4 = (f"{_TE_DOCS}: NVFP4BlockScaling: E2M1 data (0.5 B), one E4M3 (1 B) scale per 16 elements plus "
             "a per-tensor fp32 scale from the tensor's amax (an amax reduction before the cast); needs FP4 "
             "tensor cores (Blackwell)")
_TORCHAO = ("pytorch/ao torchao/float8/README.md: Float8Linear dynamic scaling, recipe 'tensorwise' (one scale "
            "per tensor from its amax: an abs-max reduction then the cast, per GEMM operand; the backward "
            "casts the transposes it needs)")
_TORCHAO_ROW = ("pytorch/ao torchao/float8/README.md: recipe 'rowwise' (one scale per row, amax per row, "
                "fp32 scales: 4 B per row of k elements, negligible)")


@dataclass(frozen=True)
class LinearRecipe:
    """One recipe's arithmetic (see the module docstring)."""

    name: str
    peak: Literal["fp8", "fp4"]  # the hardware peak (``hardware.peak_tflops`` key) its GEMMs run at
    element_bytes: float  # bytes per quantized element
    scale_bytes_per_element: float  # block scales per element (0 for per-tensor / per-row scaling)
    amax_pass: bool  # a separate amax reduction reads each tensor before its cast
    columnwise_copy: bool  # the cast also writes the transposed / column-wise copy
    source: str

    @property
    def stored_bytes(self) -> float:
        """Bytes per element of one quantized copy: data plus block scales."""
        return self.element_bytes + self.scale_bytes_per_element

    @property
    def copies(self) -> int:
        """Quantized copies one cast writes (row-wise, and column-wise where needed)."""
        return 2 if self.columnwise_copy else 1


RECIPES: dict[str, LinearRecipe] = {
    "delayed": LinearRecipe("delayed", "fp8", 1.0, 0.0, False, True, _TE_FP8),
    "tensorwise": LinearRecipe("tensorwise", "fp8", 1.0, 0.0, True, True, _TE_CURRENT),
    "blockwise": LinearRecipe("blockwise", "fp8", 1.0, 4.0 / 128.0, False, True, _TE_BLOCK),
    "mxfp8": LinearRecipe("mxfp8", "fp8", 1.0, 1.0 / 32.0, False, True, _TE_MX),
    "nvfp4": LinearRecipe("nvfp4", "fp4", 0.5, 1.0 / 16.0, True, True, _TE_NVFP4),
    "torchao_tensorwise": LinearRecipe("torchao_tensorwise", "fp8", 1.0, 0.0, True, True, _TORCHAO),
    "torchao_rowwise": LinearRecipe("torchao_rowwise", "fp8", 1.0, 0.0, True, True, _TORCHAO_ROW),
}

#: the recipe ``precision.fp8_linear: true`` means when ``precision.linear_recipe`` is not given:
#: Megatron-LM's ``--fp8-recipe`` default ``delayed`` (megatron/training/arguments.py) and torchtitan's
#: ``Float8LinearConfig`` default ``tensorwise`` (torchtitan/float8.py); the reference profile: delayed
DEFAULT_RECIPE: dict[str, str] = {"megatron": "delayed", "fsdp2": "torchao_tensorwise", "sapp-nd": "delayed"}

#: the GEMMs of a transformer layer that are linear layers a recipe quantizes (operator names of
#: :mod:`estimator.perf.operators`); router, core attention, logits and the MTP projection are not
LINEAR_GEMMS = frozenset({
    "qkv", "q_proj", "q_down", "q_up", "kv_down", "kv_up", "out_proj", "mlp_fc1", "mlp_fc2",
    "expert_fc1", "expert_fc2", "shared_fc1", "shared_fc2",
    "mamba_in_proj", "mamba_out_proj", "latent_fc1", "latent_fc2",  # TE linears of hybrid / latent-MoE layers
    "gdn_in_proj", "gdn_out_proj",  # and of Gated DeltaNet mixers
})


def recipe_of(linear_recipe: str | None, fp8_linear: bool, profile: str) -> LinearRecipe | None:
    """The recipe a precision section names: ``linear_recipe``, else the profile's default when
    ``fp8_linear``, else None (linear layers in the compute dtype)."""
    if linear_recipe is not None:
        return RECIPES[linear_recipe]
    if fp8_linear:
        return RECIPES[DEFAULT_RECIPE.get(profile, "delayed")]
    return None


#: per-tensor TE FP8 recipes: on a device with non-TN FP8 GEMMs (``hardware.fp8_gemm_any_layout``) the GEMM
#: reads their row-wise data in either orientation, so no transposed copy is written or kept
PER_TENSOR_TE = frozenset({"delayed", "tensorwise"})


def on_device(recipe: LinearRecipe, cfg: EstimatorConfig) -> LinearRecipe:
    """``recipe`` as the device runs it: a per-tensor TE FP8 recipe keeps one (row-wise) copy on
    ``hardware.fp8_gemm_any_layout`` with ``options.fused_quantize`` on (TransformerEngine
    ``transformer_engine/pytorch/utils.py`` ``is_non_tn_fp8_gemm_supported``: compute capability 10.x;
    ``transformer_engine/common/gemm/cublaslt_gemm.cu``: "Hopper only supports TN GEMMs for FP8"; TE's memory
    test: "FP8 tensor-scaling caches one byte per element" there, two on Hopper); else unchanged."""
    if recipe.name in PER_TENSOR_TE and cfg.hardware.fp8_gemm_any_layout and cfg.options.fused_quantize:
        return replace(recipe, columnwise_copy=False)
    return recipe


def stored_recipe(cfg: EstimatorConfig) -> LinearRecipe | None:
    """The recipe whose bytes memory holds: the config's recipe with ``options.low_precision_gemms`` on;
    None otherwise (then ``precision.fp8_linear`` keeps the per-tensor FP8 bytes of the model before
    recipes, which equal the ``delayed`` recipe's)."""
    if not cfg.options.low_precision_gemms:
        return None
    return recipe_of(cfg.precision.linear_recipe, cfg.precision.fp8_linear, cfg.profile)
