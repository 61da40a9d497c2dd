"""Checking that a problem module is a usable KernelBench problem, and measuring its roofline.

`analyse_source` executes the problem's code, so outside the built-in library it runs only in
the sandboxed child (problems/probe.py). Every refusal names the rule it broke (`RULES`).

Order of work: the reference runs on meta tensors first (full size, no memory, seconds at most),
which gives the roofline and the memory check. Then a real CPU run: at the problem's
KJUDGE_SMALL sizes when it declares them, else at full size only when that is small; a problem
whose operators have no meta kernels falls back to a full-size CPU run under the memory limit.
"""

from __future__ import annotations

import math
import os
import traceback
from typing import Any

import torch
from pydantic import BaseModel, Field

from evaluator.problem import Problem, ProblemError
from evaluator.roofline import ProblemCost, cast_floating, flatten_tensors, input_read_fraction, measure_cost
from problems.loader import ProblemLoadError, declared_tags, load_namespace, small_sizes

GiB = 1 << 30
DEFAULT_MAX_TOTAL_BYTES = 4 * GiB
# A problem without KJUDGE_SMALL is also run for real on CPU when it is this small anyway.
REAL_RUN_MAX_BYTES = 64 << 20
REAL_RUN_MAX_FLOPS = 20e9

RULES: dict[str, str] = {
    "settings": "the source must parse, define Model, get_inputs and get_init_inputs, and any "
    "KJUDGE settings must be a valid literal dict",
    "import": "the module's top-level code must run without error",
    "definitions": "Model must be an nn.Module subclass; get_inputs and get_init_inputs functions",
    "init_inputs": "get_init_inputs() must return a list and Model(*get_init_inputs()) must succeed",
    "inputs_are_tensors": "get_inputs() must return a non-empty list of tensors",
    "forward": "Model(...)(*get_inputs()) must run and return a tensor or a tuple of tensors",
    "memory": "inputs, parameters and outputs together must fit the memory limit",
    "small_sizes": "KJUDGE_SMALL must name top-level numeric constants, and the problem must run "
    "on CPU at those sizes",
    "timeout": "loading and running the problem must finish within the time limit",
}


class RuleBroken(Exception):
    """The problem broke `rule` (a key of RULES); `message` says what to fix."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"[{rule}] {message}")
        self.rule = rule
        self.message = message


class Analysis(BaseModel):
    name: str
    settings: dict[str, Any]
    tags: list[str]
    roofline: dict[str, Any]
    small: dict[str, int | float] | None = None
    real_run: str | None = Field(default=None, description="'small', 'full' or None (meta only)")


# aten operator → tag, for problems that do not declare KJUDGE_TAGS.
_OP_TAGS: dict[str, str] = {
    "mm": "matmul", "addmm": "matmul", "bmm": "matmul", "baddbmm": "matmul", "mv": "matmul",
    "dot": "matmul", "addmv": "matmul", "convolution": "conv", "_convolution": "conv",
    "_scaled_dot_product_flash_attention": "attention",
    "_scaled_dot_product_efficient_attention": "attention",
    "_scaled_dot_product_cudnn_attention": "attention", "_safe_softmax": "attention",
    "_softmax": "softmax", "_log_softmax": "softmax",
    "native_layer_norm": "normalization", "native_group_norm": "normalization",
    "native_batch_norm": "normalization", "_native_batch_norm_legit": "normalization",
    "_native_batch_norm_legit_no_training": "normalization", "rsqrt": "normalization",
    "sum": "reduction", "mean": "reduction", "amax": "reduction", "amin": "reduction",
    "max": "reduction", "min": "reduction", "argmax": "reduction", "argmin": "reduction",
    "prod": "reduction", "linalg_vector_norm": "reduction", "norm": "reduction", "var": "reduction",
    "std": "reduction", "var_mean": "reduction", "logsumexp": "reduction",
    "cumsum": "scan", "cumprod": "scan", "cummax": "scan", "cummin": "scan",
    "max_pool1d": "pooling", "max_pool2d_with_indices": "pooling", "max_pool3d_with_indices": "pooling",
    "avg_pool1d": "pooling", "avg_pool2d": "pooling", "avg_pool3d": "pooling",
    "_adaptive_avg_pool2d": "pooling", "_adaptive_avg_pool3d": "pooling", "adaptive_max_pool2d": "pooling",
    "relu": "activation", "gelu": "activation", "silu": "activation", "sigmoid": "activation",
    "tanh": "activation", "elu": "activation", "leaky_relu": "activation", "hardtanh": "activation",
    "softplus": "activation", "hardswish": "activation", "hardsigmoid": "activation", "mish": "activation",
    "selu": "activation", "celu": "activation", "softsign": "activation",
    "mse_loss": "loss", "nll_loss_forward": "loss", "nll_loss2d_forward": "loss", "smooth_l1_loss": "loss",
    "huber_loss": "loss", "kl_div": "loss", "binary_cross_entropy": "loss", "l1_loss": "loss",
}  # fmt: skip
_DTYPE_TAGS = {"float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def _fmt(exc: BaseException) -> str:
    """The problem's own frames only: the last frame in the problem file and the message."""
    # Problem code is compiled with a bare "<name>.py" file name; library frames are absolute.
    own = [f for f in traceback.extract_tb(exc.__traceback__) if not os.path.isabs(f.filename)]
    where = ""
    if own:
        where = f" (line {own[-1].lineno})"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}{where}: {text}" if text else f"{type(exc).__name__}{where}"


def _is_oom(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or "can't allocate memory" in text or "out of memory" in text


def infer_tags(cost: ProblemCost, level: int | None) -> list[str]:
    tags = {_OP_TAGS[op] for op in cost.ops if op in _OP_TAGS}
    if "attention" in tags:
        tags.discard("softmax")
    if not tags and cost.ops:
        tags.add("elementwise")
    if level is not None and level >= 2 and len(tags) > 1:
        tags.add("fused")
    return sorted(tags)


def _build(ns: dict[str, Any], device: str, dtype: torch.dtype | None) -> tuple[torch.nn.Module, list[Any]]:
    model_cls = ns.get("Model")
    if not (isinstance(model_cls, type) and issubclass(model_cls, torch.nn.Module)):
        raise RuleBroken("definitions", "Model must be a class deriving from torch.nn.Module")
    for fn in ("get_inputs", "get_init_inputs"):
        if not callable(ns.get(fn)):
            raise RuleBroken("definitions", f"{fn} must be a function returning a list")
    with torch.device(device):
        try:
            init = ns["get_init_inputs"]()
        except Exception as exc:
            raise RuleBroken("init_inputs", f"get_init_inputs() raised {_fmt(exc)}") from exc
        if not isinstance(init, list | tuple):
            raise RuleBroken("init_inputs", f"get_init_inputs() returned {type(init).__name__}, not a list")
        try:
            model = model_cls(*init)
        except Exception as exc:
            if _is_oom(exc):
                raise RuleBroken("memory", f"building Model ran out of memory: {_fmt(exc)}") from exc
            raise RuleBroken("init_inputs", f"Model(*get_init_inputs()) raised {_fmt(exc)}") from exc
        try:
            inputs = ns["get_inputs"]()
        except Exception as exc:
            if _is_oom(exc):
                raise RuleBroken("memory", f"get_inputs() ran out of memory: {_fmt(exc)}") from exc
            raise RuleBroken("inputs_are_tensors", f"get_inputs() raised {_fmt(exc)}") from exc
    if not isinstance(inputs, list | tuple) or not inputs:
        raise RuleBroken("inputs_are_tensors", "get_inputs() must return a non-empty list of tensors")
    bad = [f"#{i} is {type(v).__name__}" for i, v in enumerate(inputs) if not isinstance(v, torch.Tensor)]
    if bad:
        raise RuleBroken("inputs_are_tensors", f"every input must be a tensor; input {', '.join(bad)}")
    model = model.to(device)
    inputs = list(inputs)
    if dtype is not None:
        model = model.to(dtype)
        inputs = cast_floating(inputs, dtype)
    return model, inputs


def _run(ns: dict[str, Any], device: str, dtype: torch.dtype | None, max_total_bytes: int) -> ProblemCost:
    model, inputs = _build(ns, device, dtype)
    resident = sum(t.numel() * t.element_size() for t in flatten_tensors(inputs))
    resident += sum(t.numel() * t.element_size() for t in model.state_dict().values())
    if resident > max_total_bytes:
        raise RuleBroken("memory", f"inputs and parameters take {resident / GiB:.2f} GiB; the limit is "
                         f"{max_total_bytes / GiB:.2f} GiB in all: reduce the sizes")  # fmt: skip
    try:
        cost = measure_cost(model, inputs, input_read_fraction(ns))
    except Exception as exc:
        if _is_oom(exc):
            raise RuleBroken("memory", f"forward ran out of memory: {_fmt(exc)}") from exc
        raise RuleBroken("forward", f"forward raised {_fmt(exc)}") from exc
    if not cost.output_shapes:
        raise RuleBroken("forward", "forward returned no tensor")
    if cost.bytes > max_total_bytes:
        raise RuleBroken("memory", f"inputs, parameters and outputs take {cost.bytes / GiB:.2f} GiB; the "
                         f"limit is {max_total_bytes / GiB:.2f} GiB: reduce the sizes")  # fmt: skip
    return cost


def _check_finite_where_reference(ns: dict[str, Any], dtype: torch.dtype | None) -> None:
    """A real small run: the outputs must be tensors; NaN everywhere means a broken reference."""
    model, inputs = _build(ns, "cpu", dtype)
    try:
        with torch.no_grad():
            out = model(*inputs)
    except Exception as exc:
        raise RuleBroken("small_sizes", f"forward on CPU at KJUDGE_SMALL sizes raised {_fmt(exc)}") from exc
    outs = flatten_tensors(out)
    if not outs:
        raise RuleBroken("forward", "forward returned no tensor")
    for t in outs:
        if t.is_floating_point() and t.numel() and bool(torch.isnan(t).all()):
            raise RuleBroken("forward", "the reference output is NaN everywhere at KJUDGE_SMALL sizes")


def analyse_source(
    source: str,
    name: str = "problem",
    *,
    level: int | None = None,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
) -> Analysis:
    """Runs every check on `source` in this process; raises RuleBroken on the first failure."""
    try:
        problem = Problem.from_source(source, name=name)
    except ProblemError as exc:
        raise RuleBroken("settings", str(exc)) from None
    try:
        small = small_sizes(source)
        tags = declared_tags(source)
    except ProblemLoadError as exc:
        raise RuleBroken("small_sizes" if "SMALL" in str(exc) else "settings", str(exc)) from None
    dtype = getattr(torch, problem.settings.dtype) if problem.settings.dtype else None
    torch.manual_seed(0)
    try:
        ns = load_namespace(source, name)
    except ProblemLoadError as exc:
        raise RuleBroken("import", str(exc)) from None
    except Exception as exc:
        raise RuleBroken("import", f"the module raised {_fmt(exc)} while importing") from exc

    real_run: str | None = None
    try:
        cost = _run(ns, "meta", dtype, max_total_bytes)
    except RuleBroken as meta_error:
        if meta_error.rule in ("definitions", "inputs_are_tensors", "memory"):
            raise  # structural: a real run would break the same rule
        # Some operators have no meta kernel (or the problem reads tensor values while
        # building): the CPU decides, at full size, under the child's memory limit.
        cost = _run(ns, "cpu", dtype, max_total_bytes)
        real_run = "full"

    if real_run is None:
        if small is not None:
            try:
                small_ns = load_namespace(source, name, small=True)
            except ProblemLoadError as exc:
                raise RuleBroken("small_sizes", str(exc)) from None
            except Exception as exc:
                raise RuleBroken(
                    "small_sizes", f"the module raised {_fmt(exc)} at KJUDGE_SMALL sizes"
                ) from exc
            _check_finite_where_reference(small_ns, dtype)
            real_run = "small"
        elif cost.bytes <= REAL_RUN_MAX_BYTES and cost.flops <= REAL_RUN_MAX_FLOPS:
            _run(ns, "cpu", dtype, max_total_bytes)
            real_run = "full"

    all_tags = set(tags if tags is not None else infer_tags(cost, level))
    if cost.dtype in _DTYPE_TAGS:
        all_tags.add(_DTYPE_TAGS[cost.dtype])
    roofline = cost.to_roofline_dict()
    if not math.isfinite(roofline["intensity"]):
        roofline["intensity"] = 0.0
    return Analysis(
        name=name,
        settings=problem.settings.model_dump(mode="json"),
        tags=sorted(all_tags),
        roofline=roofline,
        small=small,
        real_run=real_run,
    )
