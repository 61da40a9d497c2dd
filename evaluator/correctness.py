"""Comparing a candidate's outputs with the reference's, and the memory hygiene around it.

Correct means (DESIGN.md): same structure, shapes and dtypes; NaN/Inf only where the reference
has them; every element within `atol + rtol * |ref|`. Max abs/rel errors are always reported.
Big outputs are compared in chunks so that checking a 6 GB output does not need 3 more of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

CHUNK_ELEMENTS = 1 << 26  # 64 Mi elements: 256 MB of float32 temporaries per chunk at most
# 0xFF bytes read as NaN in every floating dtype (all-ones exponent, non-zero mantissa).
POISON_BYTE = 0xFF


@dataclass
class Comparison:
    ok: bool
    max_abs_err: float = 0.0
    max_rel_err: float = 0.0
    message: str | None = None


@dataclass
class _Leaf:
    path: str
    value: Any


@dataclass
class _Acc:
    max_abs: float = 0.0
    max_rel: float = 0.0
    bad: int = 0
    first_bad: str | None = None


def _leaves(value: Any, path: str, out: list[_Leaf]) -> None:
    """Flatten (nested) tuples/lists of outputs, naming each leaf by its position."""
    if isinstance(value, tuple | list):
        for i, item in enumerate(value):
            _leaves(item, f"{path}[{i}]", out)
    else:
        out.append(_Leaf(path, value))


def _structure(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, tuple | list):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


def _same_structure(out: Any, ref: Any, path: str) -> str | None:
    if isinstance(ref, tuple | list):
        if not isinstance(out, tuple | list) or len(out) != len(ref):
            return (
                f"{path or 'the output'} is a {_structure(out)} but the reference returns a {_structure(ref)}"
            )
        for i, (o, r) in enumerate(zip(out, ref, strict=True)):
            problem = _same_structure(o, r, f"{path}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(ref, torch.Tensor) and not isinstance(out, torch.Tensor):
        return f"{path or 'the output'} is a {_structure(out)} but the reference returns a tensor"
    return None


def compare(out: Any, ref: Any, atol: float, rtol: float) -> Comparison:
    problem = _same_structure(out, ref, "")
    if problem:
        return Comparison(ok=False, message=problem)
    outs: list[_Leaf] = []
    refs: list[_Leaf] = []
    _leaves(out, "output", outs)
    _leaves(ref, "output", refs)
    acc = _Acc()
    for o, r in zip(outs, refs, strict=True):
        message = _compare_leaf(o.value, r.value, o.path, atol, rtol, acc)
        if message:
            return Comparison(ok=False, max_abs_err=acc.max_abs, max_rel_err=acc.max_rel, message=message)
    if acc.bad:
        return Comparison(
            ok=False,
            max_abs_err=acc.max_abs,
            max_rel_err=acc.max_rel,
            message=f"{acc.bad} element(s) outside atol={atol:g}, rtol={rtol:g}; first: {acc.first_bad}",
        )
    return Comparison(ok=True, max_abs_err=acc.max_abs, max_rel_err=acc.max_rel)


def _compare_leaf(o: Any, r: Any, path: str, atol: float, rtol: float, acc: _Acc) -> str | None:
    """Returns a message for a mismatch that is not about values (shape, dtype, type)."""
    if not isinstance(r, torch.Tensor):
        if isinstance(r, bool | int | float) and isinstance(o, bool | int | float):
            o, r = torch.tensor(o), torch.tensor(r)
        elif o == r:
            return None
        else:
            return f"{path} is {o!r} but the reference returns {r!r}"
    if o.shape != r.shape:
        return f"{path} has shape {tuple(o.shape)} but the reference has {tuple(r.shape)}"
    if o.dtype != r.dtype:
        return f"{path} has dtype {o.dtype} but the reference has {r.dtype}"
    if o.device != r.device:
        return f"{path} is on {o.device} but the reference output is on {r.device}"
    if o.layout != torch.strided:
        return f"{path} has layout {o.layout}; return a dense (strided) tensor"
    if o.numel() == 0:
        return None
    if r.is_complex():
        # Compare real and imaginary parts as a trailing dimension of 2.
        o, r = torch.view_as_real(o.resolve_conj()), torch.view_as_real(r.resolve_conj())
    of, rf = o.reshape(-1), r.reshape(-1)
    exact = not r.is_floating_point()
    for start in range(0, of.numel(), CHUNK_ELEMENTS):
        _compare_chunk(
            of[start : start + CHUNK_ELEMENTS],
            rf[start : start + CHUNK_ELEMENTS],
            start,
            r.shape,
            path,
            atol,
            rtol,
            exact,
            acc,
        )
    return None


def _index(flat: int, shape: Sequence[int]) -> tuple[int, ...]:
    idx = []
    for dim in reversed(shape):
        idx.append(flat % dim)
        flat //= dim
    return tuple(reversed(idx))


def _compare_chunk(
    o: torch.Tensor,
    r: torch.Tensor,
    offset: int,
    shape: torch.Size,
    path: str,
    atol: float,
    rtol: float,
    exact: bool,
    acc: _Acc,
) -> None:
    if exact:
        bad = o != r
        diff = (o.double() - r.double()).abs()
        abs_ref = r.double().abs()
    else:
        work = torch.float64 if r.dtype == torch.float64 else torch.float32
        of, rf = o.to(work), r.to(work)
        o_nan, r_nan = torch.isnan(of), torch.isnan(rf)
        both_finite = torch.isfinite(of) & torch.isfinite(rf)
        diff = (of - rf).abs_()
        abs_ref = rf.abs()
        within = diff <= atol + rtol * abs_ref
        # Non-finite values must match exactly: NaN where the reference is NaN, same-signed Inf.
        same_special = (o_nan & r_nan) | (~both_finite & ~o_nan & ~r_nan & (of == rf))
        bad = ~(same_special | (both_finite & within))
        diff = torch.where(both_finite, diff, torch.zeros_like(diff))
    chunk_max = float(diff.max()) if diff.numel() else 0.0
    acc.max_abs = max(acc.max_abs, chunk_max)
    # Relative error where it means something: where |ref| is above atol (below it the
    # absolute tolerance governs and ratios explode near zero).
    rel = torch.where(abs_ref > max(atol, 1e-30), diff / abs_ref.clamp_min(1e-30), torch.zeros_like(diff))
    if rel.numel():
        acc.max_rel = max(acc.max_rel, float(rel.max()))
    n_bad = int(bad.sum())
    if n_bad:
        if acc.first_bad is None:
            first = int(bad.nonzero()[0, 0])
            index = _index(offset + first, shape)
            acc.first_bad = f"{path}{list(index)} = {o[first].item()!r}, expected {r[first].item()!r}"
        acc.bad += n_bad


def finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


# ---------------------------------------------------------------------------------------------
# Memory hygiene


def tensors_in(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for item in value for t in tensors_in(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in tensors_in(item)]
    return []


def clone_tree(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, tuple | list):
        return type(value)(clone_tree(v) for v in value)
    return value


_SAME_SIZE_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns as integers (a view: no copy, NaN compares equal to itself)."""
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.view(_SAME_SIZE_INT[t.element_size()]) if t.dtype != torch.bool else t


def same_values(a: Any, b: Any) -> bool:
    """Bitwise equality of two input trees, for detecting in-place modification. Works on bit
    patterns so that a 6 GB input needs no temporary copies."""
    ta, tb = tensors_in(a), tensors_in(b)
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb, strict=True):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if not torch.equal(_bits(x.detach()), _bits(y.detach())):
            return False
    return True


def scrub(value: Any) -> None:
    """Overwrite reference outputs before freeing them, so that a candidate that later receives
    the same memory (torch.empty) cannot read a previous trial's answer."""
    for t in tensors_in(value):
        if t.is_floating_point() or t.is_complex():
            t.detach().fill_(float("nan"))
        else:
            t.detach().fill_(0)


SMALL_BLOCK = 1 << 20  # the caching allocator serves requests up to 1 MiB from a separate small pool
SMALL_POOL_POISON = 64 << 20


def poison_free_memory(device: str, hint_bytes: int) -> None:
    """Fill the CUDA caching allocator's free memory with NaN bytes, so outputs the candidate
    allocates with torch.empty and never writes read back as NaN and fail the comparison.

    Large pool: one block of max(cached free bytes, hint) is allocated (hint: about twice the
    inputs, so the first trial's outputs, which would come from fresh device memory, land in
    poisoned memory too), filled, and freed back to the cache, where the candidate's allocations
    are carved from it. Capped at half the device's free memory. Small pool (requests of up to
    1 MiB live in separate 2 MiB segments): up to 64 MiB of 1 MiB blocks, filled and freed.
    On CPU this is a no-op: the host allocator returns fresh pages or memory the process wrote.
    """
    if device == "cpu" or not torch.cuda.is_available():
        return
    cached_free = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()
    free_device, _ = torch.cuda.mem_get_info()
    size = min(max(cached_free, hint_bytes), (free_device + cached_free) // 2)
    blocks: list[torch.Tensor] = []
    try:
        if size > SMALL_BLOCK:
            blocks.append(torch.empty(size, dtype=torch.uint8, device=device))
        for _ in range(min(hint_bytes, SMALL_POOL_POISON) // SMALL_BLOCK):
            blocks.append(torch.empty(SMALL_BLOCK, dtype=torch.uint8, device=device))
    except torch.OutOfMemoryError:
        pass
    for block in blocks:
        block.fill_(POISON_BYTE)
    del blocks
