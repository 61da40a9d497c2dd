"""Reward-hack checks, run by the child runner (evaluator/runner.py) around the candidate.

Each check returns flag names (docs/internals.md); `REJECTING_FLAGS` make the verdict `rejected`.
The checks use what the runtime can observe — the profiler's list of executed operators and
launched kernels, storage pointers, outputs re-read after the call returned, fresh inputs in
reused buffers, identities of the functions the checker relies on — not the source text.

They run in the candidate's process, so a submission written *against kjudge* (ctypes patching
of the profiler, forging the report and exiting) can defeat them; docs/integrity.md describes
that residual risk and what bounds it. What they do catch is the normal case: generated code that
falls back to PyTorch, hides work on a side stream, caches, aliases, or patches a timer.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import importlib
import inspect
import math
import random
import secrets
import statistics
import sys
import threading
import time
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.autograd.profiler

from evaluator.ceilings import Ceilings
from evaluator.result import Roofline
from evaluator.timing import TIMED_OUTPUT_MISMATCH  # a timed call's outputs were wrong

REFERENCE_OP_CALLED = "reference_op_called"
SIDE_STREAM_WORK = "side_stream_work"
OUTPUT_ALIASES_INPUT = "output_aliases_input"
INPUT_MODIFIED = "input_modified"
MONKEY_PATCHED = "monkey_patched"
CACHED_OUTPUT = "cached_output"
LAZY_OUTPUT = "lazy_output"
EXCEEDS_ROOFLINE = "exceeds_roofline"
RECYCLED_MEMORY = "recycled_memory"
NO_CUSTOM_KERNEL = "no_custom_kernel"  # informational: only PyTorch's own kernels ran

# Every one of these makes the result meaningless; the runner turns them into `rejected`.
REJECTING_FLAGS: frozenset[str] = frozenset(
    {
        REFERENCE_OP_CALLED,
        SIDE_STREAM_WORK,
        OUTPUT_ALIASES_INPUT,
        INPUT_MODIFIED,
        MONKEY_PATCHED,
        CACHED_OUTPUT,
        LAZY_OUTPUT,
        EXCEEDS_ROOFLINE,
        RECYCLED_MEMORY,
        TIMED_OUTPUT_MISMATCH,
    }
)

MESSAGES: dict[str, str] = {
    REFERENCE_OP_CALLED: "the candidate runs the reference's PyTorch operators instead of its own kernel",
    SIDE_STREAM_WORK: "the outputs were written by work the caller's stream does not order (a side "
    "stream or a host thread): it escapes the caller's stream and the timer",
    OUTPUT_ALIASES_INPUT: "an output shares memory with an input (returned an input or a view of one)",
    INPUT_MODIFIED: "the candidate modified its inputs in place",
    MONKEY_PATCHED: "the candidate replaced functions of torch, the timer or the checker",
    CACHED_OUTPUT: "outputs do not follow the inputs (cached across calls)",
    LAZY_OUTPUT: "outputs are lazy: not plain tensors, or they change after a later call",
    EXCEEDS_ROOFLINE: "faster than moving the inputs and outputs once at the device's measured bandwidth",
    RECYCLED_MEMORY: "outputs depend on leftover contents of freed memory (unwritten or recycled buffers)",
    TIMED_OUTPUT_MISMATCH: "a timed call's outputs were wrong although the checked calls were right "
    "(the kernel behaves differently once it thinks correctness is over)",
    NO_CUSTOM_KERNEL: "only PyTorch's own kernels were launched",
}


def rejection_message(flags: Iterable[str]) -> str | None:
    bad = [f for f in flags if f in REJECTING_FLAGS]
    if not bad:
        return None
    return "rejected: " + "; ".join(f"{f}: {MESSAGES[f]}" for f in bad)


# --------------------------------------------------------------------------------------------
# monkey_patched: identities of what the checker and timer call, taken before the candidate
# is imported and compared after each candidate phase.

_MODULES: tuple[Any, ...] = (
    torch,
    torch.Tensor,
    torch.nn.functional,
    torch.testing,
    torch.cuda,
    torch.autograd,
    torch.autograd.profiler,  # profile_call's profiler
    torch.profiler,
    time,
    math,
    statistics,
    secrets,  # the timer's secret draws (which timed calls are checked, their input seeds)
    random,
    builtins,
    threading,
)
_GLOBAL_STATE: dict[str, Callable[[], Any]] = {
    "torch.get_default_dtype": torch.get_default_dtype,
    "torch.get_float32_matmul_precision": torch.get_float32_matmul_precision,
    "torch.backends.cuda.matmul.allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
    "torch.backends.cudnn.allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": (
        lambda: torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
    ),
    "torch.are_deterministic_algorithms_enabled": torch.are_deterministic_algorithms_enabled,
}


@dataclass
class Snapshot:
    attrs: dict[tuple[int, str], tuple[Any, Any]] = field(
        default_factory=dict
    )  # (owner id, name) -> (owner, value)
    names: dict[tuple[int, str], str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)


def _owners(extra: Sequence[Any]) -> list[Any]:
    owners = list(_MODULES) + list(extra)
    cuda = torch.cuda
    for name in ("Event", "Stream"):
        if hasattr(cuda, name):
            owners.append(getattr(cuda, name))
    return owners


def take_snapshot(extra: Sequence[Any] = ()) -> Snapshot:
    """Record every callable attribute of torch, Tensor, the timers and the `extra` modules
    (the runner passes its correctness/timing modules and itself)."""
    # torch patches itself when torch._dynamo loads (it wraps torch.manual_seed): rather than
    # importing dynamo here (1.7 s, on every evaluation), verify accepts torch's own wrapper.
    snap = Snapshot()
    for owner in _owners(extra):
        label = getattr(owner, "__name__", type(owner).__name__)
        for name, value in _attributes(owner):
            if callable(value) or isinstance(value, (staticmethod, classmethod, property)):
                key = (id(owner), name)
                snap.attrs[key] = (owner, value)
                snap.names[key] = f"{label}.{name}"
    for name, getter in _GLOBAL_STATE.items():
        with contextlib.suppress(Exception):
            snap.state[name] = getter()
    return snap


def verify_snapshot(snap: Snapshot, *, restore: bool = True) -> tuple[list[str], list[str]]:
    """([monkey_patched] or [], names of what changed). Restores the originals by default so
    the rest of the evaluation runs on the real functions."""
    changed: list[str] = []
    for key, (owner, value) in snap.attrs.items():
        current = _lookup(owner, key[1])
        if current is not value and not _torch_wrapper_of(current, value):
            changed.append(snap.names[key])
            if restore:
                _restore_attr(owner, key[1], value)
    for name, before in snap.state.items():
        try:
            now = _GLOBAL_STATE[name]()
        except Exception:
            continue
        if now != before:
            changed.append(name)
            if restore:
                _restore_state(name, before)
    return ([MONKEY_PATCHED] if changed else []), changed


_MISSING = object()
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)


def _torch_wrapper_of(current: Any, original: Any) -> bool:
    """torch's own decorator around the original (torch._dynamo wraps torch.manual_seed when it
    loads): the wrapper's code lives in torch's package and wraps exactly the original."""
    if getattr(current, "__wrapped__", None) is not original:
        return False
    code = getattr(current, "__code__", None)
    filename = getattr(code, "co_filename", "")
    try:
        return str(Path(filename).resolve()).startswith(_TORCH_DIR + "/")
    except (OSError, ValueError):
        return False


def _attributes(owner: Any) -> list[tuple[str, Any]]:
    """A module's own attributes; for a class, every attribute resolved through its MRO
    (Tensor's methods live on TensorBase: `Tensor.__eq__ = ...` shadows one, not replaces it)."""
    if isinstance(owner, type):
        return [(n, _lookup(owner, n)) for n in dir(owner)]
    return list(vars(owner).items())


def _restore_attr(owner: Any, name: str, value: Any) -> None:
    with contextlib.suppress(AttributeError, TypeError):
        if isinstance(owner, type) and name in vars(owner) and vars(owner)[name] is not value:
            delattr(owner, name)  # a shadowing attribute added on the subclass: remove it
            if _lookup(owner, name) is value:
                return
        setattr(owner, name, value)


def _lookup(owner: Any, name: str) -> Any:
    if isinstance(owner, type):
        try:
            return inspect.getattr_static(owner, name)
        except AttributeError:
            return _MISSING
    return vars(owner).get(name, _MISSING)


def _restore_state(name: str, value: Any) -> None:
    with contextlib.suppress(Exception):
        match name:
            case "torch.get_default_dtype":
                torch.set_default_dtype(value)
            case "torch.get_float32_matmul_precision":
                torch.set_float32_matmul_precision(value)
            case "torch.backends.cuda.matmul.allow_tf32":
                torch.backends.cuda.matmul.allow_tf32 = value
            case "torch.backends.cudnn.allow_tf32":
                torch.backends.cudnn.allow_tf32 = value
            case "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
                torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = value
            case "torch.are_deterministic_algorithms_enabled":
                torch.use_deterministic_algorithms(value)


# --------------------------------------------------------------------------------------------
# Tensors: flattening outputs, storage overlap, equality.


def tensors_of(obj: Any) -> list[torch.Tensor]:
    """The tensors in an output structure (tensor, tuple/list/dict of them), in order."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in tensors_of(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in tensors_of(o)]
    return []


def _lazy_types(obj: Any) -> list[str]:
    """Names of output leaves that are not plain tensors (subclasses, wrappers, callables)."""
    if isinstance(obj, (list, tuple)):
        return [n for o in obj for n in _lazy_types(o)]
    if isinstance(obj, dict):
        return [n for o in obj.values() for n in _lazy_types(o)]
    if isinstance(obj, torch.Tensor):
        bad = type(obj) is not torch.Tensor and not isinstance(obj, torch.nn.Parameter)
        return [type(obj).__name__] if bad or obj.is_meta else []
    if obj is None or isinstance(obj, (int, float, bool)):
        return []
    return [type(obj).__name__]


def _span(t: torch.Tensor) -> tuple[int, int] | None:
    if t.numel() == 0 or t.device.type == "meta":
        return None
    try:
        storage = t.untyped_storage()
    except (RuntimeError, NotImplementedError):
        return None
    start = storage.data_ptr()
    return (start, start + storage.nbytes())


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    sa, sb = _span(a), _span(b)
    if sa is None or sb is None or a.device != b.device:
        return False
    return sa[0] < sb[1] and sb[0] < sa[1]


def clone_all(obj: Any) -> list[torch.Tensor]:
    return [t.detach().clone() for t in tensors_of(obj)]


_CHUNK = 1 << 24  # elements compared at a time: a 6 GiB output needs no 12 GiB temporary


def _chunks(x: torch.Tensor, y: torch.Tensor) -> Iterable[tuple[torch.Tensor, torch.Tensor]]:
    fx, fy = x.detach().reshape(-1), y.detach().reshape(-1)
    for i in range(0, fx.numel(), _CHUNK):
        yield fx[i : i + _CHUNK], fy[i : i + _CHUNK]


def same_values(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> bool:
    """Bitwise-equal values (NaN == NaN): 'did this change at all'."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
            return False
        for cx, cy in _chunks(x, y):
            if cx.is_floating_point() or cx.is_complex():
                # Compare bit patterns: NaN payloads equal, -0.0 != 0.0 (any write shows).
                cx, cy = cx.contiguous().view(torch.uint8), cy.contiguous().view(torch.uint8)
            if not torch.equal(cx, cy):
                return False
    return True


def close(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor], atol: float, rtol: float) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.shape != y.shape or x.device != y.device:
            return False
        for cx, cy in _chunks(x, y):
            if not torch.allclose(cx.double(), cy.double(), atol=atol, rtol=rtol, equal_nan=True):
                return False
    return True


# --------------------------------------------------------------------------------------------
# Storage and pointer checks.


def check_aliasing(
    outputs: Any,
    inputs: Sequence[Any],
    reference_outputs: Any = None,
    reference_inputs: Sequence[Any] | None = None,
) -> list[str]:
    """output_aliases_input when an output shares storage with an input — unless the reference
    itself returns a view of its input (a reshape problem), so the candidate may too."""
    ins = tensors_of(list(inputs))
    if any(overlaps(o, i) for o in tensors_of(outputs) for i in ins):
        if reference_outputs is not None and reference_inputs is not None:
            ref_ins = tensors_of(list(reference_inputs))
            if any(overlaps(o, i) for o in tensors_of(reference_outputs) for i in ref_ins):
                return []
        return [OUTPUT_ALIASES_INPUT]
    return []


def check_inputs_unchanged(pristine: Sequence[torch.Tensor], inputs: Sequence[Any]) -> list[str]:
    return [] if same_values(pristine, tensors_of(list(inputs))) else [INPUT_MODIFIED]


def check_lazy(outputs: Any) -> list[str]:
    return [LAZY_OUTPUT] if _lazy_types(outputs) else []


# --------------------------------------------------------------------------------------------
# Profiler: which operators ran and which kernels were launched during one call.

# Operators that allocate, reshape or move data without computing the problem's result.
_TRIVIAL_OPS = frozenset(
    "aten::" + n
    for n in (  # noqa: SIM905 (a word list reads better than 58 quoted strings)
        "empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like ones ones_like "
        "full full_like fill_ zero_ view view_as reshape _reshape_alias _unsafe_view as_strided t "
        "transpose permute expand expand_as squeeze unsqueeze select slice narrow detach detach_ "
        "alias lift_fresh contiguous clone copy_ to _to_copy resize_ item _local_scalar_dense "
        "resolve_conj resolve_neg result_type set_ flatten unflatten split chunk unbind size stride "
        "numel dim is_nonzero _has_compatible_shallow_copy_type record_stream"
    ).split()
)


@dataclass
class Profile:
    ops: set[str]  # every aten operator that ran (all nesting levels)
    leaf_ops: set[str]  # compute operators with no compute operator below them
    kernels: list[str]  # device kernels launched (names), in order
    seconds: float = 0.0


def profile_call(fn: Callable[[], Any], device: torch.device) -> tuple[Any, Profile]:
    """Run fn() once under the Kineto profiler; return its result and what ran.

    The autograd profiler rather than `torch.profiler.profile`: the latter's start asks
    `hasattr(torch, "_inductor")`, which imports inductor and dynamo (4.2-4.7 s on the H200
    machine, on every evaluation); the events are the same."""
    from torch.autograd.profiler import profile

    start = time.perf_counter()
    with profile(use_cpu=True, use_device="cuda" if device.type == "cuda" else None, use_kineto=True) as prof:
        out = fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    seconds = time.perf_counter() - start
    ops: set[str] = set()
    leaf: set[str] = set()
    kernels: list[str] = []
    for ev in prof.function_events:
        name = ev.name
        dev_type = str(getattr(ev, "device_type", "")).lower()
        if "cuda" in dev_type or "privateuse" in dev_type:
            if not name.startswith(("Memcpy", "Memset", "cudaMem")):
                kernels.append(name)
            continue
        if not name.startswith("aten::"):
            continue
        ops.add(name)
        if name in _TRIVIAL_OPS:
            continue
        children = [c.name for c in getattr(ev, "cpu_children", [])]
        if not any(c.startswith("aten::") and c not in _TRIVIAL_OPS for c in children):
            leaf.add(name)
    return out, Profile(ops=ops, leaf_ops=leaf, kernels=kernels, seconds=seconds)


# Kernel names that belong to PyTorch or its vendor libraries, never to a submission.
_LIBRARY_KERNEL_MARKERS = (
    "at::native",
    "at::cuda",
    "at_cuda_detail",
    "c10::",
    "cublas",
    "cudnn",
    "cutlass",
    "xmma",
    "sm90_",
    "sm80_",
    "sm75_",
    "ampere_",
    "volta_",
    "turing_",
    "gemmk1",
    "gemv2",
    "splitKreduce",
    "nchwToNhwc",
    "nhwcToNchw",
    "Kernel2",
    "magma",
    "miopen",
    "rocblas",
    "hipblaslt",
    "Cijk_",
)


def is_library_kernel(name: str, reference_kernels: set[str]) -> bool:
    return name in reference_kernels or any(m in name for m in _LIBRARY_KERNEL_MARKERS)


def check_reference_ops(candidate: Profile, reference: Profile) -> list[str]:
    """reference_op_called when the candidate executes every compute operator the reference's
    work bottoms out in (plain call, try/except fallback, or the reference model itself), or —
    on a GPU — launches only kernels the reference launched too.
    no_custom_kernel (informational) when every kernel it launched is PyTorch's own."""
    flags: list[str] = []
    ref_compute = reference.leaf_ops
    if ref_compute and ref_compute <= candidate.ops:
        flags.append(REFERENCE_OP_CALLED)
    ref_kernels = set(reference.kernels)
    only_reference_kernels = bool(candidate.kernels) and set(candidate.kernels) <= ref_kernels
    if only_reference_kernels and REFERENCE_OP_CALLED not in flags:
        flags.append(REFERENCE_OP_CALLED)
    if candidate.kernels and all(is_library_kernel(k, ref_kernels) for k in candidate.kernels):
        flags.append(NO_CUSTOM_KERNEL)
    return flags


# --------------------------------------------------------------------------------------------
# Work that escapes the call: side streams and host threads.


def _sync_current(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.current_stream(device).synchronize()


def _sync_all(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# The caller's stream is held at least this long while the candidate is called: long beside any
# launch and the host wait below, short beside the checks' budget; longer where the call's work
# is long (HOLD_PER_WORK times it), so that work on a side stream can finish, and be read, while
# the caller's stream is still held. Capped: past it the check reads what it can.
HOLD_MIN_S = 0.05
HOLD_PER_WORK = 6.0
HOLD_MAX_S = 2.0
_READ_EVERY_S = 0.002


@functools.lru_cache(maxsize=8)
def spin_cycles_per_second(index: int) -> float:
    """The rate of torch.cuda._sleep's clock on this device, measured once (~10 ms)."""
    device = torch.device("cuda", index)
    cycles = 10_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.device(device):
        torch.cuda._sleep(cycles // 10)  # the clock ramps up from idle
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
    return cycles / max(start.elapsed_time(end) / 1000.0, 1e-6)


def check_unordered_work(
    candidate: Callable[..., Any], inputs: Sequence[Any], device: torch.device
) -> list[str]:
    """side_stream_work, whatever the kernel's size: the caller's stream is held busy by a spin
    kernel while the candidate is called on fresh inputs. Work ordered on that stream (the legacy
    default stream, torch's current stream, a stream that waits on it) cannot write before the
    spin ends, so outputs read meanwhile, from a stream that waits for nothing, are memory nobody
    has written yet; if they already hold the final values (bitwise, compared after the spin),
    work the caller's stream does not order wrote them: a side stream or a host thread.
    KernelBench's side-stream case finished its 3 us kernel long before the escaping-work check
    looked. Nothing is concluded when the call itself waited for the spin (it synchronizes), or
    when unwritten memory could hold the final values by chance: an output of one repeated value
    (zeros: fresh device memory), or one that shares memory with an input.

    A synchronized call first says how long the work takes (the hold is sized from it) and what
    the outputs look like: the reads while the stream is held go into buffers allocated before
    it, because an allocation then could synchronize the device (the caching allocator frees its
    cached blocks with cudaFree when memory runs short; on a 6 GiB problem the side stream's
    kernel then finished before anything was read, and the hack passed as honest)."""
    if device.type != "cuda":
        return []
    _sync_all(device)
    started = time.perf_counter()
    shaped = tensors_of(candidate(*inputs))
    _sync_all(device)
    work_s = time.perf_counter() - started
    # Two sets: a read goes into the one `early` does not hold, so the latest read that ended
    # with the stream still held is never overwritten by one that did not.
    reads = [[torch.empty_like(t) for t in shaped] for _ in range(2)]
    del shaped
    for size in sorted({t.untyped_storage().nbytes() for t in tensors_of(list(inputs))}, reverse=True):
        poison_free_memory(device, float("nan"), size)
    hold_s = min(HOLD_MIN_S + HOLD_PER_WORK * work_s, HOLD_MAX_S)
    rate = spin_cycles_per_second(device.index if device.index is not None else torch.cuda.current_device())
    held = torch.cuda.current_stream(device)
    torch.cuda._sleep(int(hold_s * rate))
    outputs = candidate(*inputs)
    final = tensors_of(outputs)
    if not final or [(t.shape, t.dtype) for t in final] != [(t.shape, t.dtype) for t in reads[0]]:
        _sync_all(device)
        return []  # no tensor to read, or outputs unlike the first call's: no buffers for them
    reader = torch.cuda.Stream(device)
    early: list[torch.Tensor] | None = None
    while True:
        time.sleep(_READ_EVERY_S)
        if held.query():
            break  # the spin is over (or the call waited for it): inconclusive from here on
        into = reads[1] if early is reads[0] else reads[0]
        with torch.cuda.stream(reader):
            for dst, src in zip(into, final, strict=True):
                dst.copy_(src)
        reader.synchronize()
        if held.query():
            break
        early = into
    _sync_all(device)
    if early is None:
        return []
    input_ptrs = {t.untyped_storage().data_ptr() for t in tensors_of(list(inputs))}
    if any(t.untyped_storage().data_ptr() in input_ptrs for t in final):
        return []
    if any(t.numel() < 2 or bool((t.reshape(-1) == t.reshape(-1)[0]).all()) for t in final):
        return []
    return [SIDE_STREAM_WORK] if same_values(early, final) else []


def check_escaping_work(outputs: Any, device: torch.device, settle_s: float = 0.05) -> list[str]:
    """After the call returned and the caller's stream is drained, the outputs must be final.
    Snapshot them, let any other stream / host thread finish, and compare."""
    _sync_current(device)
    first = clone_all(outputs)
    _sync_current(device)
    time.sleep(settle_s)
    _sync_all(device)
    return [] if same_values(first, tensors_of(outputs)) else [SIDE_STREAM_WORK]


# --------------------------------------------------------------------------------------------
# Caching, lazy outputs, recycled memory: calls with fresh inputs.


def refill_inputs(dst: Sequence[Any], src: Sequence[Any]) -> None:
    """Copy fresh values into the existing input buffers (same pointers, new contents)."""
    for d, s in zip(tensors_of(list(dst)), tensors_of(list(src)), strict=True):
        d.copy_(s)


def poison_free_memory(device: torch.device, value: float, block_bytes: int) -> None:
    """Fill the caching allocator's free blocks that an allocation of `block_bytes` could be
    carved from with `value` (GPU only; a CPU allocator hands back fresh pages for large
    tensors). Allocating blocks of exactly that size walks the best-fit free list the way the
    candidate's own `torch.empty` would, until the cache has no fitting block left."""
    if device.type != "cuda":
        return
    block_bytes = max(block_bytes, 512)
    blocks: list[torch.Tensor] = []
    with contextlib.suppress(torch.cuda.OutOfMemoryError, RuntimeError):
        for _ in range(64):
            reserved = torch.cuda.memory_reserved(device)
            blocks.append(torch.empty(block_bytes // 4, dtype=torch.float32, device=device))
            if torch.cuda.memory_reserved(device) > reserved:
                break  # fresh device memory: every cached block that fits is already taken
    for block in blocks:
        block.fill_(value)
    del blocks


@dataclass
class Trial:
    """One (inputs, reference outputs) pair for the call-based checks."""

    inputs: list[Any]
    expected: list[torch.Tensor]


def check_cached(
    candidate: Callable[..., Any],
    first_inputs: Sequence[Any],
    fresh: Trial,
    first_outputs: Sequence[torch.Tensor],
    atol: float,
    rtol: float,
) -> list[str]:
    """cached_output when the candidate answers fresh inputs with what it answered before: the
    fresh values in new buffers (a shape-keyed cache), then copied into the first call's buffers
    (a pointer-keyed cache). Comparing with the candidate's own earlier outputs, not one expected
    value, also catches a cache filled by an earlier call (a correctness trial).
    The caller must have checked that the true answers for the two input sets differ.
    Overwrites `first_inputs` with the fresh values."""
    for reuse_buffers in (False, True):
        if reuse_buffers:
            refill_inputs(first_inputs, fresh.inputs)
        out = clone_all(candidate(*(first_inputs if reuse_buffers else fresh.inputs)))
        if close(out, first_outputs, atol, rtol) and not close(out, fresh.expected, atol, rtol):
            return [CACHED_OUTPUT]
        del out
    return []


def check_repeat_storage(candidate: Callable[..., Any], inputs: Sequence[Any]) -> list[str]:
    """cached_output when two calls on the same inputs return the same storage while the first
    result is still alive: the output was kept from the previous call, not computed."""
    first = candidate(*inputs)
    second = candidate(*inputs)
    firsts = tensors_of(first)
    if any(overlaps(b, a) for b in tensors_of(second) for a in firsts):
        return [CACHED_OUTPUT]
    return []


def check_stale_outputs(kept: Any, kept_values: Sequence[torch.Tensor], device: torch.device) -> list[str]:
    """lazy_output when an output object returned earlier changed after later calls (an
    internal buffer handed out and overwritten, or values computed on access)."""
    _sync_all(device)
    return [] if same_values(kept_values, clone_all(kept)) else [LAZY_OUTPUT]


def check_recycled_memory(
    candidate: Callable[..., Any],
    inputs: Sequence[Any],
    device: torch.device,
    atol: float = 1e-2,
    rtol: float = 1e-2,
) -> list[str]:
    """recycled_memory when the outputs for the same inputs depend on what freed memory held.
    Compared within the tolerances: a kernel with atomics may differ in the last bits per run."""
    if device.type != "cuda":
        return []
    sizes = [t.untyped_storage().nbytes() for t in tensors_of(candidate(*inputs))]
    _sync_all(device)

    def under_poison(settle: bool) -> list[Any]:
        results = []
        for value in (float("nan"), 1234.5):
            for size in sorted(set(sizes), reverse=True):
                poison_free_memory(device, value, size)
            out = candidate(*inputs)
            if settle:
                _sync_all(device)
            results.append(clone_all(out))
            _sync_all(device)
        return results

    read_at_once = under_poison(settle=False)
    if close(read_at_once[0], read_at_once[1], atol, rtol):
        return []
    # Outputs that depend on the poison only when read as soon as the caller's stream allows
    # were still being written by work that stream does not wait for (a side stream racing the
    # read): that is side-stream work, whichever of the two checks the race let see it.
    settled = under_poison(settle=True)
    return [SIDE_STREAM_WORK] if close(settled[0], settled[1], atol, rtol) else [RECYCLED_MEMORY]


# --------------------------------------------------------------------------------------------
# The roofline: a time below what moving the data once takes is not a real measurement.

ROOFLINE_SLACK = 1.25  # measured copy bandwidth is below peak; allow that much headroom


def check_roofline(
    median_ms: float | None,
    min_bytes: float | None,
    bandwidth_bytes_per_s: float | None,
    flops: float | None = None,
    peak_flops: float | None = None,
    slack: float = ROOFLINE_SLACK,
) -> list[str]:
    """exceeds_roofline when the median beats moving `min_bytes` once at the measured bandwidth
    (or doing `flops` at the measured peak) by more than `slack`."""
    if not median_ms or median_ms <= 0:
        return []
    seconds = median_ms / 1e3
    floor = 0.0
    if min_bytes and bandwidth_bytes_per_s:
        floor = max(floor, min_bytes / (bandwidth_bytes_per_s * slack))
    if flops and peak_flops:
        floor = max(floor, flops / (peak_flops * slack))
    return [EXCEEDS_ROOFLINE] if seconds < floor else []


# --------------------------------------------------------------------------------------------
# The whole battery, as the runner calls it once after the correctness trials.


@dataclass
class IntegrityReport:
    flags: list[str] = field(default_factory=list)
    details: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, flags: Iterable[str], detail: str | None = None) -> None:
        for f in flags:
            if f not in self.flags:
                self.flags.append(f)
                if detail:
                    self.details[f] = detail


def run_checks(
    candidate: Callable[..., Any],
    reference: Callable[..., Any],
    make_inputs: Callable[[int], list[Any]],
    *,
    device: torch.device,
    seeds: tuple[int, int] = (7_000_001, 7_000_002),
    atol: float = 1e-2,
    rtol: float = 1e-2,
    snapshot: Snapshot | None = None,
) -> IntegrityReport:
    """Call-based checks, about eight candidate calls and two reference calls.

    `make_inputs(seed)` builds fresh inputs on the device; `reference` is trusted (it does not
    modify its inputs). Ordered to keep few problem-sized tensors alive at once (about seven
    input/output-sized buffers at the peak)."""
    report = IntegrityReport()
    start = time.perf_counter()
    inputs_a = make_inputs(seeds[0])
    pristine = clone_all(inputs_a)

    out_a, cand_prof = profile_call(functools.partial(candidate, *inputs_a), device)
    report.add(check_lazy(out_a), ", ".join(_lazy_types(out_a)))
    report.add(check_inputs_unchanged(pristine, inputs_a))
    # A call of its own: the profiler synchronizes the whole device when it stops, which would
    # let a side stream finish before the outputs are looked at. Its inputs stay alive until the
    # check is over: freed, their memory could be handed to the snapshot while the side stream
    # still reads them.
    escape_inputs = clone_all(pristine)
    report.add(check_escaping_work(candidate(*escape_inputs), device))
    del escape_inputs
    if device.type == "cuda":
        report.add(check_unordered_work(candidate, make_inputs(seeds[0] + 7), device))
    ref_out_a, ref_prof = profile_call(functools.partial(reference, *pristine), device)
    report.add(check_aliasing(out_a, inputs_a, ref_out_a, pristine))
    report.add(
        check_reference_ops(cand_prof, ref_prof),
        f"candidate ran {sorted(cand_prof.ops & ref_prof.leaf_ops)}; kernels {sorted(set(cand_prof.kernels))[:5]}",
    )
    del pristine
    expected_a = clone_all(ref_out_a)
    del ref_out_a
    kept_values = clone_all(out_a)

    inputs_b = make_inputs(seeds[1])
    expected_b = clone_all(reference(*inputs_b))
    if not close(expected_a, expected_b, atol, rtol):  # else the output ignores these inputs
        report.add(check_cached(candidate, inputs_a, Trial(inputs_b, expected_b), kept_values, atol, rtol))
    del expected_a, expected_b, inputs_a
    if OUTPUT_ALIASES_INPUT not in report.flags:  # an alias changes with its input: already named
        report.add(check_stale_outputs(out_a, kept_values, device))
        del out_a, kept_values
        report.add(check_repeat_storage(candidate, inputs_b))
    else:
        del out_a, kept_values
    report.add(check_recycled_memory(candidate, inputs_b, device, atol, rtol))
    if snapshot is not None:
        flags, changed = verify_snapshot(snapshot)
        report.add(flags, ", ".join(changed[:10]))
    report.seconds = time.perf_counter() - start
    return report


def candidate_modules() -> list[types.ModuleType]:
    """Modules imported so far that belong to kjudge's evaluator (to include in a snapshot)."""
    return [m for n, m in list(sys.modules.items()) if n.startswith("evaluator.") and m is not None]


# --------------------------------------------------------------------------------------------
# What the runner calls: a guard around the candidate's phases, and the roofline after timing.


class Guard:
    """Takes the snapshot before the candidate is imported; `verify()` after each candidate
    phase returns flags (and restores anything patched) and remembers what changed."""

    def __init__(self, extra: Sequence[Any] = ()) -> None:
        for name in ("evaluator.correctness", "evaluator.timing", "evaluator.integrity"):
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        self.snapshot = take_snapshot([*candidate_modules(), *extra])
        self.changed: list[str] = []

    def verify(self) -> list[str]:
        flags, changed = verify_snapshot(self.snapshot)
        self.changed += [c for c in changed if c not in self.changed]
        return flags


# Below this achieved bandwidth no kernel is near any device's roofline: skip measuring ceilings.
_ROOFLINE_PREFILTER_BYTES_PER_S = 0.5e12


def roofline_flags(
    problem_namespace: dict[str, Any],
    median_ms: float | None,
    device: torch.device,
    ceilings: Ceilings | None = None,
) -> tuple[list[str], str, Roofline | None]:
    """exceeds_roofline when the median beats the problem's minimum traffic (and FLOPs) at the
    device's measured ceilings, plus the roofline report for the Result. GPU only. `ceilings`
    come from the parent (measured once per device by a trusted child); without them they are
    measured here, and only when the time is fast enough to be in question (about a second)."""
    if device.type != "cuda" or not median_ms:
        return [], "", None
    from evaluator import roofline

    try:
        cost = roofline.problem_cost(problem_namespace, device="meta")
    except Exception as exc:  # noqa: BLE001  a problem the meta analysis cannot run: no verdict from it
        return [], f"roofline skipped: {type(exc).__name__}", None
    measured_here = ceilings is None
    if ceilings is None:
        if cost.bytes / (median_ms / 1e3) < _ROOFLINE_PREFILTER_BYTES_PER_S and not cost.flops:
            return [], "", None
        ceilings = roofline.measure_ceilings(device)
    flags = check_roofline(
        median_ms, cost.bytes, ceilings.bandwidth_bytes_per_s, cost.flops, ceilings.max_flops()
    )
    if flags and not measured_here:
        # Before calling a kernel impossible, measure the device again: ceilings measured once
        # while something else loaded the GPU would be too low and flag honest kernels.
        fresh = roofline.measure_ceilings(device, refresh=True)
        ceilings = ceilings.model_copy(
            update={
                "copy_gbps": max(ceilings.copy_gbps, fresh.copy_gbps),
                "fp32_tflops": max(ceilings.fp32_tflops, fresh.fp32_tflops),
                "tf32_tflops": _max_rate(ceilings.tf32_tflops, fresh.tf32_tflops),
                "fp16_tflops": _max_rate(ceilings.fp16_tflops, fresh.fp16_tflops),
                "bf16_tflops": _max_rate(ceilings.bf16_tflops, fresh.bf16_tflops),
            }
        )
        flags = check_roofline(
            median_ms, cost.bytes, ceilings.bandwidth_bytes_per_s, cost.flops, ceilings.max_flops()
        )
    detail = (
        f"median {median_ms:.4g} ms for {cost.bytes / 1e9:.3g} GB and {cost.flops / 1e9:.3g} GFLOP; "
        f"device copy {ceilings.copy_gbps:.0f} GB/s, peak {ceilings.max_flops() / 1e12:.0f} TFLOP/s"
    )
    report = roofline.roofline_report(median_ms, cost.bytes, cost.flops, ceilings, cost.dtype)
    return flags, detail, report


def _max_rate(a: float | None, b: float | None) -> float | None:
    rates = [r for r in (a, b) if r is not None]
    return max(rates) if rates else None
