"""The candidate stream of bench/throughput.py: distinct kernels made from kjudge's own references.

Each candidate is a reference kernel from problems/kernels/<problem>/ (or, for the CPU target, a
small C++ loop) with a variant constant in its code, so its content hash — and so its build — is
new, in one of four GPU languages: `cuda`, `hip` (HIP on CUDA on NVIDIA), `triton`, `kernelbench`
(the CUDA reference inside KernelBench's load_inline module). About one in ten is made incorrect
(a wrapper that returns zeros, or scales the output) and one in twenty fails to compile.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KERNELS = REPO / "problems" / "kernels"
GPU_LANGUAGES = ("cuda", "hip", "triton", "kernelbench")
# Problems whose reference kernels cover the most languages (cuda.cu is what kernelbench wraps).
GPU_PROBLEMS = ("relu", "softmax", "swiglu", "rms_norm", "layer_norm", "gelu", "silu", "leaky_relu")
_FORWARD = re.compile(r"torch::Tensor\s+forward\s*\(([^)]*)\)")


@dataclass(frozen=True)
class Candidate:
    problem: str
    language: str
    kind: str  # correct | incorrect | compile_error: what kjudge should answer
    source: str

    @property
    def expected(self) -> str:
        return self.kind


def kind_of(index: int) -> str:
    """~5 % compile errors, ~10 % incorrect, spread evenly through the stream."""
    if index % 20 == 7:
        return "compile_error"
    if index % 10 == 3:
        return "incorrect"
    return "correct"


# ---------------------------------------------------------------- native (cuda, hip, cpp)


def native_variant(source: str, n: int) -> str:
    """Code, not a comment: a new constant the compiler sees (a normalizing cache cannot fold it)."""
    return f"{source}\nnamespace {{ [[maybe_unused]] constexpr int kjudge_variant_{n} = {n}; }}\n"


def _forward_params(source: str) -> tuple[str, list[str]]:
    match = _FORWARD.search(source)
    if match is None:
        raise ValueError("no `torch::Tensor forward(...)` in the reference")
    params = match.group(1)
    names = [p.strip().split()[-1].lstrip("&*") for p in params.split(",") if p.strip()]
    return params, names


def native_incorrect(source: str, n: int) -> str:
    """The real kernel runs, but forward answers zeros of its shape."""
    params, names = _forward_params(source)
    renamed = _FORWARD.sub(lambda m: f"torch::Tensor kjudge_forward_impl({m.group(1)})", source, count=1)
    wrapper = (
        f"\ntorch::Tensor forward({params}) {{\n"
        f"    auto kjudge_out = kjudge_forward_impl({', '.join(names)});\n"
        "    return torch::zeros_like(kjudge_out);\n}\n"
    )
    return native_variant(renamed + wrapper, n)


def native_compile_error(source: str, n: int) -> str:
    return f"{source}\nstatic int kjudge_broken_{n} = kjudge_undeclared_{n};\n"


# ---------------------------------------------------------------- python (triton, kernelbench)


def triton_variant(source: str, n: int) -> str:
    """A statement in the first @triton.jit body: Triton hashes the kernel's source, so it JITs anew."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("@triton.jit"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i].rstrip().endswith(":"))
    body_indent = re.match(r"\s*", lines[end + 1]).group(0) or "    "
    lines.insert(end + 1, f"{body_indent}kjudge_variant = {n}")
    return "\n".join(lines) + "\n"


def python_incorrect(source: str) -> str:
    return (
        source
        + "\n\n_kjudge_forward = ModelNew.forward\n\n\n"
        + "def _kjudge_wrong(self, *args, **kwargs):\n"
        + "    return _kjudge_forward(self, *args, **kwargs) * 1.5 + 0.25\n\n\n"
        + "ModelNew.forward = _kjudge_wrong\n"
    )


def python_compile_error(source: str) -> str:
    return source + "\n\ndef kjudge_broken(:\n    pass\n"


def kernelbench(native: str, problem: str, n: int) -> str:
    """The CUDA reference in KernelBench's format: built by load_inline when the module loads."""
    params, _ = _forward_params(native)
    return (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
        f"cuda_source = {native!r}\n\n"
        f"ext = load_inline(name='kb_{problem}_{n}', cpp_sources='torch::Tensor forward({params});', "
        "cuda_sources=cuda_source, functions=['forward'], verbose=False)\n\n\n"
        "class ModelNew(nn.Module):\n"
        "    def __init__(self, *args, **kwargs):\n        super().__init__()\n\n"
        "    def forward(self, *inputs):\n        return ext.forward(*inputs)\n"
    )


# ---------------------------------------------------------------- the streams


def _parameter_free(problem_source: str) -> bool:
    """A KernelBench ModelNew here carries no weights, so only for problems whose Model has none."""
    from problems.loader import load_namespace

    ns = load_namespace(problem_source, small=True)
    return not ns["Model"](*ns["get_init_inputs"]()).state_dict()


def gpu_stream(problem_sources: dict[str, str], count: int, seed: int = 0, base: int = 0) -> list[Candidate]:
    """`count` candidates over the problems, every language each problem has, shuffled; variant
    numbers base, base+1, ... (a stream with another base shares no source with this one)."""
    slots: list[tuple[str, str]] = []
    for name in problem_sources:
        folder = KERNELS / name
        langs = [lang for lang, f in (("cuda", "cuda.cu"), ("hip", "hip.hip"), ("triton", "triton.py"))
                 if (folder / f).is_file()]  # fmt: skip
        if (folder / "cuda.cu").is_file() and _parameter_free(problem_sources[name]):
            langs.append("kernelbench")
        slots.extend((name, lang) for lang in langs)
    rng = random.Random(seed)
    out = []
    for i in range(count):
        name, lang = slots[i % len(slots)]
        out.append(_gpu_candidate(name, lang, kind_of(i), base + i))
    rng.shuffle(out)
    return out


def _gpu_candidate(problem: str, language: str, kind: str, n: int) -> Candidate:
    folder = KERNELS / problem
    if language in ("cuda", "hip"):
        ref = (folder / ("cuda.cu" if language == "cuda" else "hip.hip")).read_text()
        make = {
            "correct": native_variant,
            "incorrect": native_incorrect,
            "compile_error": native_compile_error,
        }
        return Candidate(problem, language, kind, make[kind](ref, n))
    if language == "triton":
        src = triton_variant((folder / "triton.py").read_text(), n)
    else:
        native = (folder / "cuda.cu").read_text()
        native = native_compile_error(native, n) if kind == "compile_error" else native_variant(native, n)
        src = kernelbench(native, problem, n)
        if kind == "compile_error":
            return Candidate(problem, language, kind, src)
    if kind == "incorrect":
        src = python_incorrect(src)
    elif kind == "compile_error":
        src = python_compile_error(src)
    return Candidate(problem, language, kind, src)


# The CPU target (validating the bench without a GPU): raw `cpp` loops over float32.
CPU_OPS = {
    "relu": "v > 0.0f ? v : 0.0f",
    "silu": "v / (1.0f + std::exp(-v))",
    "sigmoid": "1.0f / (1.0f + std::exp(-v))",
    "gelu": "0.5f * v * (1.0f + std::erf(v * 0.70710678f))",
}
CPU_TEMPLATE = """#include <torch/extension.h>
#include <cmath>

torch::Tensor forward(torch::Tensor x) {
    auto in = x.contiguous();
    auto out = torch::empty_like(in);
    const float* src = in.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t i = 0; i < in.numel(); ++i) { const float v = src[i]; dst[i] = EXPR; }
    return out;
}
"""


def cpu_stream(problems: list[str], count: int, seed: int = 0, base: int = 0) -> list[Candidate]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        name = problems[i % len(problems)]
        ref = CPU_TEMPLATE.replace("EXPR", CPU_OPS[name])
        kind = kind_of(i)
        make = {
            "correct": native_variant,
            "incorrect": native_incorrect,
            "compile_error": native_compile_error,
        }
        out.append(Candidate(name, "cpp", kind, make[kind](ref, base + i)))
    rng.shuffle(out)
    return out


def launch_bound(target: str, n: int) -> Candidate:
    """ReLU on the problem's KJUDGE_SMALL sizes: a kernel whose time is mostly its launch, the
    most sensitive to a busy host. A new variant each (a reused result would not be measured)."""
    if target == "cpu":
        source = CPU_TEMPLATE.replace("EXPR", CPU_OPS["relu"])
        return Candidate("relu-launch", "cpp", "correct", native_variant(source, n))
    source = (KERNELS / "relu" / "cuda.cu").read_text()
    return Candidate("relu-launch", "cuda", "correct", native_variant(source, n))
