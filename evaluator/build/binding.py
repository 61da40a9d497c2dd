"""The Python binding of a raw-source extension: find `entry`, generate PYBIND11_MODULE.

A raw cpp/cuda/hip source defines `entry` (default `forward`) and may or may not carry its own
PYBIND11_MODULE. When kjudge generates the binding for a device source, it goes into a separate
host unit (g++ with the precompiled torch header) that only *declares* the entry, so nvcc never
parses pybind11. That needs the entry's signature, read here from the source; when it cannot be
read safely (templates, `static`, a namespace), the binding is appended to the source instead.
"""

from __future__ import annotations

import json
import re

from evaluator.targets.hip_on_cuda import mask_comments_and_strings

_PYBIND_MODULE = re.compile(r"\bPYBIND11_MODULE\s*\(\s*(\w+)")
_PYBIND_USE = re.compile(r"\bPYBIND11_\w+|\bpybind11\b|\bpy::|\btorch/python\.h|\btorch/all\.h")
# Headers that bring all of ATen (and torch::'s dtype names) anyway: the light header would
# only add a second definition of those names.
_FULL_TORCH_INCLUDE = re.compile(r"#\s*include\s*[<\"](torch/types\.h|torch/torch\.h|ATen/ATen\.h)[>\"]")
_LIGHT_UNSAFE = re.compile(r"\btorch::(nn|optim|data|jit|autograd|python|serialize)\b|\bat::indexing\b")


def module_name_in_source(source: str) -> str | None:
    """The name in the source's own PYBIND11_MODULE(name, m), or None if it has none."""
    match = _PYBIND_MODULE.search(mask_comments_and_strings(source))
    return match.group(1) if match else None


def has_own_module(source: str) -> bool:
    return module_name_in_source(source) is not None


def light_header_safe(source: str) -> bool:
    """Whether a device unit can be compiled against kjudge's light <torch/extension.h>."""
    code = mask_comments_and_strings(source)
    if _PYBIND_USE.search(code) is not None or _LIGHT_UNSAFE.search(code) is not None:
        return False
    return _FULL_TORCH_INCLUDE.search(source) is None  # include paths are "strings" to the mask


def defines_function(source: str, name: str) -> bool:
    """Whether `name(` appears outside comments and strings (the compiler has the final word)."""
    return re.search(rf"\b{re.escape(name)}\s*\(", mask_comments_and_strings(source)) is not None


def _match_paren(code: str, open_index: int) -> int:
    depth = 0
    for i in range(open_index, len(code)):
        if code[i] == "(":
            depth += 1
        elif code[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _brace_depths(code: str) -> list[int]:
    depths, depth = [], 0
    for ch in code:
        if ch == "{":
            depth += 1
        depths.append(depth)
        if ch == "}":
            depth -= 1
    return depths


_DECL_START = re.compile(r"[;{}]|^\s*#[^\n]*$", re.MULTILINE)
_NOT_RETURN_TYPE = re.compile(r"\b(static|template|__global__|__device__|operator|return|else|case)\b")


def entry_declaration(source: str, entry: str) -> str | None:
    """`ret entry(params)` as written at file scope in the source's definition of `entry`.

    Returns None when there is no file-scope definition whose declaration can be repeated in
    another translation unit with the same meaning.
    """
    code = mask_comments_and_strings(source)
    depths = _brace_depths(code)
    for match in re.finditer(rf"\b{re.escape(entry)}\s*\(", code):
        start = match.start()
        if depths[start] != 0:
            continue
        open_index = match.end() - 1
        close = _match_paren(code, open_index)
        if close < 0:
            return None
        after = code[close + 1 :].lstrip()
        if not after.startswith("{"):
            continue  # a declaration or a call, not the definition
        # The return type runs from the end of the previous statement, brace or directive.
        prefix_start = 0
        for m in _DECL_START.finditer(code, 0, start):
            prefix_start = m.end()
        # From the masked text: a comment above the definition is not part of its return type.
        return_type = " ".join(code[prefix_start:start].split())
        if not return_type or _NOT_RETURN_TYPE.search(return_type) or "extern" in return_type:
            return None
        return_type = re.sub(r"\b(inline|__host__|__forceinline__)\b", " ", return_type)
        return_type = " ".join(return_type.split())
        # Masked text drops comments between parameters; with a string default it would also
        # blank the string, so then the source's own text is kept.
        masked = code[open_index + 1 : close]
        params = " ".join(
            (source[open_index + 1 : close] if '"' in masked or "'" in masked else masked).split()
        )
        return f"{return_type} {entry}({params})"
    return None


def file_scope_usings(source: str) -> list[str]:
    """`using …;` / `typedef …;` statements at file scope, so a declared signature still parses."""
    code = mask_comments_and_strings(source)
    depths = _brace_depths(code)
    found = []
    for m in re.finditer(r"\b(using|typedef)\b[^;{}]*;", code):
        if depths[m.start()] == 0:
            found.append(" ".join(source[m.start() : m.end()].split()))
    return found


def module_definition(functions: dict[str, str], *, wrap_errors: bool = True) -> str:
    """PYBIND11_MODULE binding `functions` (name -> docstring), as load_inline generates it."""
    lines = ["PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"]
    for name, doc in functions.items():
        target = f"torch::wrap_pybind_function({name})" if wrap_errors else name
        lines.append(f'  m.def("{name}", {target}, {json.dumps(doc)});')
    lines.append("}")
    return "\n".join(lines) + "\n"


def binding_unit_source(declarations: list[str], usings: list[str], functions: dict[str, str]) -> str:
    """A host unit that declares the functions and binds them (the definitions live elsewhere)."""
    parts = ["#include <torch/extension.h>", *usings, *[f"{d};" for d in declarations]]
    return "\n".join(parts) + "\n" + module_definition(functions)
