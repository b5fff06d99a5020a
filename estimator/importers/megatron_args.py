"""Reading Megatron-LM launch arguments: a CI ``model_config.yaml`` (``MODEL_ARGS:``), a plain
argument list, or a launch script (``torchrun ... pretrain_gpt.py --num-layers 32 \\``).

Returns ``{"--flag": value}`` with value ``True`` for a bare switch and a string otherwise, plus
the launcher's world size when the script states it (``torchrun --nproc_per_node N --nnodes M``
or ``GPUS_PER_NODE=N`` / ``NPUS_PER_NODE=N`` / ``NNODES=M`` shell assignments; MindSpore ``msrun
--local_worker_num``); ``$X`` variables of the script (``GPT_ARGS="..."`` blocks too) are expanded.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from estimator.importers.common import bad
from ndval.core.yamlsrc import CaseError, parse_text, read_regular_text

#: torchrun options that are not Megatron arguments (the world size is read from two of them)
LAUNCHER_FLAGS = ("--nproc_per_node", "--nproc-per-node", "--nnodes", "--node_rank", "--node-rank",
                  "--master_addr", "--master-addr", "--master_port", "--master-port", "--rdzv_backend",
                  "--rdzv_endpoint", "--rdzv-backend", "--rdzv-endpoint", "--rdzv_id", "--standalone",
                  # MindSpore's msrun (MindSpeed-LLM on Ascend)
                  "--worker_num", "--local_worker_num", "--log_dir", "--join", "--cluster_time_out", "--bind_core")
_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s*$")


def read_arguments(path: Path) -> tuple[dict[str, Any], int | None]:
    """(arguments, world size or None) of a Megatron launch file."""
    file = str(path)
    try:
        text = read_regular_text(path)
    except OSError as exc:
        raise bad(file, "<file>", f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise bad(file, "<file>", "not UTF-8 text") from None
    except ValueError as exc:  # a FIFO, a device or a folder (never read), or over the size bound
        raise bad(file, "<file>", str(exc)) from None
    if "MODEL_ARGS:" in text:
        return _ci_yaml(file, text), None
    return _script(file, text)


def _ci_yaml(file: str, text: str) -> dict[str, Any]:
    """``MODEL_ARGS`` of a Megatron-LM CI ``model_config.yaml``."""
    try:  # the case loader's limits: aliases, depth, sizes, safe tags
        data = parse_text(text, file)
    except CaseError as exc:
        where = f" at line {exc.line}" if exc.line else ""
        raise bad(file, "<yaml>", f"malformed YAML{where}: {exc.rule}") from None
    args = data.get("MODEL_ARGS") if isinstance(data, dict) else None
    if not isinstance(args, dict):
        raise bad(file, "MODEL_ARGS", "must be a mapping of --flag: value")
    out: dict[str, Any] = {}
    for key, value in args.items():
        if not str(key).startswith("--"):
            raise bad(file, f"MODEL_ARGS.{key}", "argument names start with '--'")
        out[str(key)] = value if isinstance(value, bool) else str(value)
    return out


_BLOCK = re.compile(r'^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)="([^"]*)"', re.MULTILINE)
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def _expand_vars(text: str, assigned: dict[str, str]) -> str:
    """``$X`` / ``${X}`` replaced by the script's own assignments (a few rounds: values name others)."""
    for _ in range(4):
        text = _VAR.sub(lambda m: assigned.get(m.group(1), m.group(0)), text)
    return text


def _tokens(file: str, text: str) -> tuple[list[str], dict[str, str]]:
    """Shell words of the script with its variables expanded (``GPT_ARGS="..."`` blocks spanning lines,
    ``X=value`` lines; comments and line continuations removed) and its assignments."""
    joined = re.sub(r"\\\r?\n", " ", text)
    assigned = {m.group(1): " ".join(m.group(2).split()) for m in _BLOCK.finditer(joined)}
    joined = _BLOCK.sub("", joined)
    words: list[str] = []
    for line in joined.splitlines():
        if m := _ASSIGN.match(line.strip()):
            assigned[m.group(1)] = m.group(2).strip("\"'")
            continue
        try:
            words += shlex.split(_expand_vars(line, assigned), comments=True)
        except ValueError as exc:
            raise bad(file, "<script>", f"cannot split into shell words: {exc}") from None
    return words, assigned


def _script(file: str, text: str) -> tuple[dict[str, Any], int | None]:
    words, assigned = _tokens(file, text)
    args: dict[str, Any] = {}
    launcher: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--"):
            i += 1
            continue
        flag, _, inline = word.partition("=")
        values = [inline] if inline else []
        while not inline and i + 1 < len(words) and not words[i + 1].startswith("--") and _is_value(words[i + 1]):
            values.append(words[i + 1])
            i += 1
        value: Any = " ".join(values) if values else True
        (launcher if flag in LAUNCHER_FLAGS else args)[flag] = value
        i += 1
    if not args:
        raise bad(file, "<script>", "no --flag arguments found (expected a Megatron-LM argument list or launch script)")
    return args, _world_size(file, launcher, assigned)


def _is_value(word: str) -> bool:
    """A word after a flag is its value unless it starts the next command (a script or program)."""
    return not word.endswith((".py", ".sh")) and word not in ("torchrun", "python", "python3", "&&", ";", "|")


def _world_size(file: str, launcher: dict[str, str], assigned: dict[str, str]) -> int | None:
    per_node = (launcher.get("--nproc_per_node") or launcher.get("--nproc-per-node") or launcher.get("--local_worker_num")
                or assigned.get("GPUS_PER_NODE") or assigned.get("NPUS_PER_NODE"))
    nodes = launcher.get("--nnodes") or assigned.get("NNODES") or assigned.get("NUM_NODES") or "1"
    per, count = _expand(per_node, assigned), _expand(nodes, assigned)
    if per is None or count is None or not per.isdigit() or not count.isdigit():
        return None
    return int(per) * int(count)


def _expand(value: str | None, assigned: dict[str, str]) -> str | None:
    """``$X`` / ``${X}`` replaced by the script's own assignment (left as written otherwise)."""
    if value is None:
        return None
    return _expand_vars(value, assigned)
