"""The Megatron-LM flags of a recipe that the estimator prices: overlap switches, the low-precision
recipe of the linear layers, CUDA graphs, the MoE token dispatcher and the precision-aware optimizer's
dtypes (``estimator.perf.overlap``, ``estimator.inputs.recipes``, ``estimator.perf.graphs``,
``estimator.perf.comm``, ``estimator.memory.static``). A switch the chosen profile's framework does not
have is listed as not modelled (the rules refuse it in a config), never set silently.
"""

from __future__ import annotations

import re
from typing import Any, get_args

from estimator.inputs.profiles import OVERLAP_FLAGS, tp_comm_overlap_possible
from estimator.inputs.recipes import RecipeName

#: the parsed Megatron arguments: estimator.importers.megatron._Args, which imports this module (not imported here, even
#: for type checking: no import cycle)
_Args = Any


#: Megatron flag -> the ``parallel`` overlap switch of the same name
OVERLAP_SWITCHES = {"--overlap-grad-reduce": "overlap_grad_reduce", "--overlap-param-gather": "overlap_param_gather",
                    "--tp-comm-overlap": "tp_comm_overlap", "--moe-shared-expert-overlap": "moe_shared_expert_overlap",
                    "--overlap-moe-expert-parallel-comm": "overlap_moe_expert_parallel_comm"}


def overlap(a: _Args, profile: str, tp: int) -> None:
    """Each overlap flag given -> ``parallel.<switch>: true`` when the profile has the switch."""
    own = OVERLAP_FLAGS.get(profile, {})
    for flag, name in OVERLAP_SWITCHES.items():
        if not a.flag(flag):
            continue
        if name not in own:
            a.out.not_modelled[flag] = f"profile {profile!r} has no such overlap switch (estimator.inputs.profiles)"
        elif name == "tp_comm_overlap" and not tp_comm_overlap_possible(
                tp, bool(a.out.data["parallel"]["sequence_parallel"])):
            a.out.not_modelled[flag] = "inactive: TP overlap needs tp > 1 with sequence parallelism"
        else:
            a.out.put(f"parallel.{name}", True, flag)
    if a.flag("--no-overlap-p2p-communication"):  # Megatron-LM's p2p overlap is on by default (interleaved schedule)
        if "overlap_p2p_comm" in own:
            a.out.put("parallel.overlap_p2p_comm", False, "--no-overlap-p2p-communication")
        else:
            a.out.not_modelled["--no-overlap-p2p-communication"] = (
                f"profile {profile!r} has no such overlap switch (estimator.inputs.profiles)")


def linear_recipe(a: _Args) -> None:
    """``--fp8-format`` with ``--fp8-recipe`` (default delayed), or ``--fp4-format`` with ``--fp4-recipe``."""
    known = get_args(RecipeName)
    if a.has("--fp4-format"):
        recipe = a.text("--fp4-recipe", "nvfp4") or "nvfp4"
        source = "--fp4-format / --fp4-recipe (default nvfp4)"
    elif a.has("--fp8-format"):
        recipe = a.text("--fp8-recipe", "delayed") or "delayed"
        source = "--fp8-format / --fp8-recipe (Megatron default delayed)"
    else:
        return
    a.out.put("precision.fp8_linear", True, source)
    if recipe in known:
        a.out.put("precision.linear_recipe", recipe, source)
    else:
        a.out.not_modelled["--fp8-recipe"] = f"recipe {recipe!r}: priced as the profile's default recipe"
    if a.flag("--fp8-param-gather"):
        a.out.put("precision.fp8_param_gather", True, "--fp8-param-gather")
    if a.flag("--first-last-layers-bf16"):  # Megatron's defaults: 1 layer at each end
        ends = [a.integer(f"--num-layers-at-{end}-in-bf16", 1, minimum=0) for end in ("start", "end")]
        a.out.put("precision.bf16_layers_at_ends", ends,
                  "--first-last-layers-bf16 / --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16 (default 1)")


def cuda_graph(a: _Args) -> None:
    """``--cuda-graph-impl local|transformer_engine|full_iteration`` (+ ``--cuda-graph-modules``, before it the
    deprecated ``--cuda-graph-scope``), ``--enable-cuda-graph``, ``--external-cuda-graph`` -> ``train.cuda_graph``:
    ``full_iteration`` as the impl (NVIDIA/Megatron-LM@d98e8a64dd ``arguments.py``: "--cuda-graph-modules must be
    empty when --cuda-graph-impl=full_iteration") or as a scope (older releases, migrated by Megatron-Core's
    ``get_deprecated_cuda_graph_modules_migration``); per-layer graphs otherwise, of whichever modules are named."""
    impl = a.text("--cuda-graph-impl", "none") or "none"
    legacy = a.flag("--enable-cuda-graph") or a.flag("--external-cuda-graph")
    if impl == "none" and not legacy:
        return
    scope = " ".join(a.text(flag, "") or "" for flag in ("--cuda-graph-scope", "--cuda-graph-modules"))
    full = impl == "full_iteration" or "full_iteration" in re.findall(r"[a-z_]+", scope)
    a.out.put("train.cuda_graph", "full_iteration" if full else "layers",
              "--cuda-graph-impl / --cuda-graph-modules (--cuda-graph-scope) / --enable-cuda-graph")


def moe_dispatcher(a: _Args, moe: bool) -> None:
    """``--moe-token-dispatcher-type`` (Megatron-Core's default ``allgather``): ``alltoall`` and ``flex`` (DeepEP /
    HybridEP) -> ``parallel.moe_token_dispatcher``; ``allgather`` (each rank gathers its EP group's tokens) has no
    model of its own and is listed as not modelled for a MoE model."""
    kind = a.text("--moe-token-dispatcher-type", "allgather") or "allgather"
    if kind in ("alltoall", "flex"):
        a.out.put("parallel.moe_token_dispatcher", kind, "--moe-token-dispatcher-type")
    elif moe:
        a.out.not_modelled["--moe-token-dispatcher-type"] = (
            f"{kind} ({'Megatron-Core default' if not a.has('--moe-token-dispatcher-type') else 'given'}): "
            "EP traffic priced as the all-to-all dispatcher's")


#: Megatron's precision-aware optimizer dtypes the ``precision`` section can state
_STATE_DTYPES = ("fp32", "bf16", "fp16")


def optimizer_dtypes(a: _Args) -> None:
    """``--use-precision-aware-optimizer`` with ``--exp-avg-dtype`` / ``--exp-avg-sq-dtype`` (Megatron default fp32)
    -> ``precision.optimizer_states`` when both moments share a dtype the estimator has, and ``--main-grads-dtype``
    -> ``precision.grads``; other choices (fp8 moments, moments of two dtypes, ``--main-params-dtype fp16``)
    are listed as not modelled."""
    dtype_flags = ("--exp-avg-dtype", "--exp-avg-sq-dtype", "--main-grads-dtype", "--main-params-dtype")
    if not a.flag("--use-precision-aware-optimizer"):
        for flag in dtype_flags:
            if a.has(flag):
                a.out.ignored[flag] = "no effect without --use-precision-aware-optimizer"
        return
    moments = sorted({a.text(flag, "fp32") or "fp32" for flag in dtype_flags[:2]})
    source = "--use-precision-aware-optimizer / --exp-avg-dtype / --exp-avg-sq-dtype (default fp32)"
    if len(moments) == 1 and moments[0] in _STATE_DTYPES:
        a.out.put("precision.optimizer_states", moments[0], source)
    else:
        a.out.not_modelled["--exp-avg-dtype"] = (f"Adam moments in {moments}: one dtype of {_STATE_DTYPES} "
                                                 "per run is modelled (priced as fp32)")
    grads = a.text("--main-grads-dtype", "fp32") or "fp32"
    if grads != "fp32":
        a.out.put("precision.grads", grads, "--main-grads-dtype (precision-aware optimizer)")
    if (a.text("--main-params-dtype", "fp32") or "fp32") != "fp32":
        a.out.not_modelled["--main-params-dtype"] = "fp16 main params: the master copy is priced in fp32"
