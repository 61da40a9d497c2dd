"""The lite build (evaluator/build/lite.py): a candidate compiled against kjudge's small torch API
behaves as with PyTorch's headers, and anything the lite API lacks is built the regular way."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest
import torch

from evaluator.build import build_native, lite, load_module
from evaluator.build.engine import _device_command, build_spec
from evaluator.build.load_inline_shim import plan_inline
from evaluator.build.models import BuildJob, BuildOutput, UnitKind
from evaluator.build.native import plan
from evaluator.build.pch import ensure_pch
from evaluator.build.toolchain import host_compiler, torch_info
from evaluator.result import Backend, Language, Target

LITE_NOTE = "built with the lite torch API"

# One source exercising most of the lite API: metadata, factories, views, dispatch, scalars,
# lists and tuples in and out, TORCH_CHECK.
API_TOUR = r"""
#include <torch/extension.h>
#include <tuple>
#include <vector>

template <typename T>
void scale_into(const T* src, T* dst, int64_t n, double a, int64_t b) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i] * a + b);
}

torch::Tensor forward(const torch::Tensor& x, double a, int64_t b, bool twice) {
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous, got strides ", x.strides());
    TORCH_CHECK(x.device().is_cpu());
    TORCH_CHECK(a < 1e6, "a=", a, " b=", b, " twice=", twice, " on ", x.device(), " ", x.scalar_type(), " ", x.sizes());
    auto out = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "scale", ([&] {
        scale_into<scalar_t>(x.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), x.numel(), twice ? 2 * a : a, b);
    }));
    return out;
}

std::vector<torch::Tensor> shapes(torch::Tensor x, std::vector<torch::Tensor> more) {
    auto z = torch::zeros({x.size(0), 3}, x.options().dtype(torch::kInt32));
    auto f = torch::full({2}, 7.5, torch::TensorOptions().dtype(torch::kFloat64));
    std::vector<torch::Tensor> out{x.view({-1}), x.t().contiguous(), z, f, x.narrow(1, 1, 1), x.unsqueeze(0)};
    for (auto& m : more) out.push_back(m.reshape({-1}));
    return out;
}

std::tuple<torch::Tensor, int64_t, double> meta(torch::Tensor x) {
    int64_t sum = 0;
    for (auto s : x.sizes()) sum += s;
    return {x.select(0, 0).clone(), sum + x.stride(0) * 100 + x.element_size() * 10000, x.size(-1) / 2.0};
}

double first(torch::Tensor x) { return x.data_ptr<double>()[0]; }

torch::Tensor squares(torch::Tensor x) {  // at::parallel_for, as PyTorch's own CPU kernels
    auto y = torch::empty_like(x);
    const float* s = x.data_ptr<float>();
    float* d = y.data_ptr<float>();
    at::parallel_for(0, x.numel(), 1024, [&](int64_t lo, int64_t hi) {
        TORCH_CHECK(hi - lo >= 1024 || hi == x.numel(), "a chunk below the grain size");
        for (int64_t i = lo; i < hi; ++i) d[i] = s[i] * s[i];
    });
    return y;
}
"""


CUDA_RELU = (Path(__file__).resolve().parents[2] / "examples" / "relu" / "relu_cuda.cu").read_text()
FUNCTIONS = {"forward": "", "shapes": "", "meta": "", "first": "", "squares": ""}
FLAGS: dict = dict(extra_cflags=[], extra_cuda_cflags=[], extra_ldflags=[], extra_include_paths=[])


def _build(source: str, target: Target, cache: Path) -> BuildOutput:
    """The source's FUNCTIONS bound as load_inline binds them; a module nobody built before."""
    spec = plan_inline(target, f"tour_{time.time_ns()}", [source], [], FUNCTIONS, **FLAGS)
    return build_spec(spec, cache)


def test_plan_tries_the_lite_unit_first_and_keeps_the_regular_build(
    cpu_target: Target, sm90_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = plan(API_TOUR, Language.CPP, "forward", cpu_target)
    assert spec.lite_units is not None and spec.lite_units[0].lite
    assert 'kjl_make_module("' + spec.module_name in spec.lite_units[0].code
    assert spec.units and not spec.units[0].lite  # the regular build, for when lite does not compile
    monkeypatch.setenv("KJUDGE_LITE_CUDA", "0")  # the operator's switch
    assert plan(CUDA_RELU, Language.CUDA, "forward", sm90_target).lite_units is None
    monkeypatch.setenv("KJUDGE_LITE_CUDA", "1")
    cuda_spec = plan(CUDA_RELU, Language.CUDA, "forward", sm90_target)
    assert cuda_spec.lite_units is not None and cuda_spec.lite_units[0].kind is UnitKind.CUDA
    own_module = API_TOUR + '\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward); }\n'
    assert plan(own_module, Language.CPP, "forward", cpu_target).lite_units is None


def test_a_lite_module_behaves_as_pytorch(build_cache: Path, cpu_target: Target) -> None:
    out = _build(API_TOUR, cpu_target, build_cache)
    assert out.ok and LITE_NOTE in out.log, out.log
    module = load_module(out)
    x = torch.randn(4, 5)
    torch.testing.assert_close(module.forward(x, 1.5, 2, False), x * 1.5 + 2)
    torch.testing.assert_close(module.forward(x.double(), 1.5, 2, True), x.double() * 3 + 2)
    y = module.forward(x, 2, True, False)  # an int for a double, a bool for an int: as pybind11 takes them
    torch.testing.assert_close(y, x * 2 + 1)

    listed = module.shapes(x, [torch.ones(2, 2)])
    assert isinstance(listed, list)
    assert [tuple(t.shape) for t in listed] == [(20,), (5, 4), (4, 3), (2,), (4, 1), (1, 4, 5), (4,)]
    assert listed[0].data_ptr() == x.data_ptr()  # a view, not a copy
    assert listed[2].dtype == torch.int32 and listed[3].dtype == torch.float64
    torch.testing.assert_close(listed[3], torch.full((2,), 7.5, dtype=torch.float64))

    big = torch.randn(100_003)
    torch.testing.assert_close(module.squares(big), big * big, rtol=0, atol=0)

    first, number, half = module.meta(x)
    torch.testing.assert_close(first, x[0])
    assert (number, half) == (4 + 5 + 5 * 100 + 4 * 10000, 2.5)


def test_lite_errors_are_pytorchs_kinds(build_cache: Path, cpu_target: Target) -> None:
    module = load_module(_build(API_TOUR, cpu_target, build_cache))
    x = torch.randn(4, 5)
    with pytest.raises(RuntimeError, match="x must be contiguous, got strides \\[1, 5\\]"):
        module.forward(x.t(), 1.0, 0, False)
    # Messages read as PyTorch's c10::str (an ostream) prints them.
    with pytest.raises(RuntimeError, match="^a=2e\\+06 b=-3 twice=1 on cpu Float \\[4, 5\\]$"):
        module.forward(x, 2e6, -3, True)
    with pytest.raises(RuntimeError, match="\"scale\" not implemented for 'Int'"):
        module.forward(x.int(), 1.0, 0, False)
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        module.first(x)
    assert module.first(x.double()) == x.double()[0, 0].item()
    with pytest.raises(TypeError, match="takes 4 arguments \\(2 given\\)"):
        module.forward(x, 1.0)
    with pytest.raises(TypeError, match="expected an int"):
        module.forward(x, 1.0, 2.5, False)
    with pytest.raises(TypeError, match="expected a Tensor"):
        module.forward([1.0], 1.0, 2, False)


def test_lite_calls_release_what_they_hold(build_cache: Path, cpu_target: Target) -> None:
    module = load_module(_build(API_TOUR, cpu_target, build_cache))
    x = torch.randn(64, 64)
    storage = x.untyped_storage()
    before = torch._C._storage_Use_Count(storage._cdata)
    for _ in range(2000):
        module.shapes(x, [x, x])
        module.meta(x)
        module.forward(x, 1.0, 0, False)
    assert torch._C._storage_Use_Count(storage._cdata) == before
    out = module.forward(x, 1.0, 0, False)
    gone = weakref.ref(out)
    del out
    assert gone() is None


def test_the_cpp_example_builds_lite_and_is_exact(build_cache: Path, cpu_target: Target) -> None:
    source = (Path(__file__).resolve().parents[2] / "examples" / "relu" / "relu_cpp.cpp").read_text()
    out = build_native(source + f"// {time.time_ns()}\n", Language.CPP, "forward", cpu_target, build_cache)
    assert out.ok and LITE_NOTE in out.log, out.log
    # Where the compile's time went: the lite unit, its link, and the sandboxed child around both.
    assert set(out.steps_s) == {"lite_units", "lite_link", "child"}, out.steps_s
    assert out.steps_s["child"] >= out.steps_s["lite_units"] + out.steps_s["lite_link"] > 0
    x = torch.randn(16, 16384)
    torch.testing.assert_close(load_module(out).forward(x), x.relu(), rtol=0, atol=0)


def test_the_sandboxed_compile_child_does_not_import_torch(
    build_cache: Path, cpu_target: Target, tmp_path: Path
) -> None:
    # Importing torch cost 2-4 s of every compile, more than a lite unit's compiler time: the
    # child takes the parent's torch facts from its job file instead.
    source = (Path(__file__).resolve().parents[2] / "examples" / "relu" / "relu_cpp.cpp").read_text()
    spec = plan(source + f"// {time.time_ns()}\n", Language.CPP, "forward", cpu_target)
    pch_dir, _ = ensure_pch(build_cache, host_compiler())
    lite_dir, _ = lite.ensure_runtime(build_cache, Backend.CPU)
    (tmp_path / "work").mkdir()
    job = BuildJob(
        spec=spec,
        work_dir=tmp_path / "work",
        pch_dir=pch_dir,
        lite_dir=lite_dir,
        report_path=tmp_path / "report.json",
        torch=torch_info(),
    )
    (tmp_path / "job.json").write_text(job.model_dump_json())
    child = (
        "import sys; from pathlib import Path; from evaluator.build.native import run_job; "
        "run_job(Path(sys.argv[1])); print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    )
    run = subprocess.run(
        [sys.executable, "-c", child, str(tmp_path / "job.json")], capture_output=True, text=True, check=True
    )
    assert run.stdout.strip() == "[]", run.stdout
    out = BuildOutput.model_validate_json((tmp_path / "report.json").read_text())
    assert out.ok and LITE_NOTE in out.log, out.log


def test_what_the_lite_api_lacks_is_built_with_pytorchs_headers(
    build_cache: Path, cpu_target: Target
) -> None:
    source = API_TOUR.replace("return out;\n}", "return out + 0;\n}", 1)  # tensor arithmetic: not lite
    out = _build(source, cpu_target, build_cache)
    assert out.ok and LITE_NOTE not in out.log and "building with PyTorch's headers" in out.log, out.log
    x = torch.randn(3, 3)
    torch.testing.assert_close(load_module(out).forward(x, 2.0, 0, False), x * 2)


SHAPE_CHECKS = r"""
#include <torch/extension.h>
#include <vector>

// What kernels' host code checks shapes with (rms_norm's `residual->sizes() == x.sizes()`,
// which once sent every such candidate to the 20 s regular build).
torch::Tensor forward(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.sizes() == y.sizes(), "shapes differ: ", x.sizes(), " vs ", y.sizes());
    std::vector<int64_t> shape = x.sizes().vec();
    TORCH_CHECK(shape == x.sizes() && x.sizes() == shape && !(x.sizes() != y.sizes()));
    TORCH_CHECK(x.sizes().slice(1).equals(y.sizes().slice(1, x.dim() - 1)) && x.sizes().at(0) == x.size(0));
    return x;
}
"""


def test_shape_comparisons_build_lite(build_cache: Path, cpu_target: Target) -> None:
    source = SHAPE_CHECKS + f"// {time.time_ns()}\n"
    spec = plan_inline(cpu_target, f"shapes_{time.time_ns()}", [source], [], {"forward": ""}, **FLAGS)
    out = build_spec(spec, build_cache)
    assert out.ok and LITE_NOTE in out.log, out.log
    module = load_module(out)
    x = torch.randn(2, 3)
    assert module.forward(x, torch.randn(2, 3)) is not None
    with pytest.raises(RuntimeError, match=r"shapes differ: \[2, 3\] vs \[3, 2\]"):
        module.forward(x, torch.randn(3, 2))


def test_a_compile_error_is_reported_from_the_regular_build(build_cache: Path, cpu_target: Target) -> None:
    broken = API_TOUR.replace("return out;", "return out") + f"// {time.time_ns()}\n"
    out = build_native(broken, Language.CPP, "forward", cpu_target, build_cache)  # sandboxed
    assert not out.ok and out.message == "compilation failed; see logs.compile"
    assert {"lite_units", "units", "child"} <= set(out.steps_s) and "link" not in out.steps_s, out.steps_s
    assert "error: expected" in out.log and "return out" in out.log and "kjudge_lite" not in out.log, out.log


def test_a_load_inline_compile_error_is_remembered_and_a_timeout_is_not(
    build_cache: Path, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run of a KernelBench candidate whose build failed in the compile stage reports the
    error from the cache (it held a GPU for 42 s compiling it again on the H100)."""
    from evaluator.build import engine

    broken = SHAPE_CHECKS.replace("return x;", "return x") + f"// {time.time_ns()}\n"
    spec = plan_inline(cpu_target, f"broken_{time.time_ns()}", [broken], [], {"forward": ""}, **FLAGS)
    first = build_spec(spec, build_cache)
    assert not first.ok and not first.cached and "error: expected" in first.log, first.log

    def no_compiler(*args: object, **kwargs: object) -> BuildOutput:
        raise AssertionError("the remembered compile error was compiled again")

    with monkeypatch.context() as patched:
        patched.setattr(engine, "compile_to", no_compiler)
        again = build_spec(spec, build_cache)
    assert not again.ok and again.cached and again.log == first.log and again.message == first.message

    # A compiler that ran out of time says nothing about the source: the next try compiles.
    slow = plan_inline(cpu_target, f"slow_{time.time_ns()}", [SHAPE_CHECKS], [], {"forward": ""}, **FLAGS)
    with monkeypatch.context() as patched:
        # Not timeout_s=0.01: a compiler gets at least 1 s (engine._Deadline), and a quiet host
        # built this in 0.9 s.
        patched.setattr(engine._Deadline, "left", lambda self: 0.001)
        timed_out = build_spec(slow, build_cache)
    assert not timed_out.ok and timed_out.transient and "timed out" in timed_out.log, timed_out.log
    later = build_spec(slow, build_cache)
    assert later.ok and not later.cached, later.log


def test_load_inline_sources_get_a_lite_unit(
    cpu_target: Target, sm90_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KJUDGE_LITE_CUDA", "1")
    decl = "torch::Tensor forward(torch::Tensor x);"
    kernel = "__global__ void k(float* y) {}\ntorch::Tensor forward(torch::Tensor x) { return x; }"
    flags = FLAGS
    spec = plan_inline(sm90_target, "m", [decl], [kernel], {"forward": ""}, **flags)
    assert spec.lite_units is not None
    (unit,) = spec.lite_units
    assert unit.kind is UnitKind.CUDA and unit.code.index(decl) < unit.code.index("__global__")
    assert (
        plan_inline(
            sm90_target, "m", [decl + "\nPYBIND11_MODULE(m, m) {}"], [kernel], None, **flags
        ).lite_units
        is None
    )
    cpu = plan_inline(
        cpu_target, "m", [kernel.replace("__global__ void k(float* y) {}", "")], [], {"forward": ""}, **flags
    )
    assert cpu.lite_units is not None and cpu.lite_units[0].kind is UnitKind.CXX


HALF_KERNEL = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
template <typename scalar_t>
__global__ void twice(const scalar_t* x, scalar_t* y, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = static_cast<scalar_t>(static_cast<float>(x[i]) * 2.0f);
}
torch::Tensor forward(torch::Tensor x) {
    const at::cuda::OptionalCUDAGuard guard(device_of(x));
    auto y = torch::empty_like(x);
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::ScalarType::BFloat16, x.scalar_type(), "twice", ([&] {
        twice<scalar_t><<<1, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), x.numel());
    }));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""


@pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="no nvcc"
)
@pytest.mark.parametrize(
    "source", [CUDA_RELU, HALF_KERNEL], ids=["relu_example", "half_dispatch_guard_stream"]
)
def test_lite_cuda_units_compile_with_nvcc(
    source: str, sm90_target: Target, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nvcc accepts the lite headers (no GPU, no CUDA PyTorch needed: the unit alone, not linked)."""
    monkeypatch.setenv("KJUDGE_LITE_CUDA", "1")
    spec = plan(source, Language.CUDA, "forward", sm90_target)
    (unit,) = spec.lite_units or []
    path = tmp_path / unit.name
    path.write_text(unit.code)
    cmd = _device_command(unit, spec, path, tmp_path / "unit.o")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        "PyInit_" + spec.module_name
        in subprocess.run(["nm", str(tmp_path / "unit.o")], capture_output=True, text=True).stdout
    )


def test_an_undefined_name_of_the_sources_own_is_not_built_again(
    build_cache: Path, cpu_target: Target
) -> None:
    """No fuller header declares it: the lite build's error is the verdict's, with the source's
    own line number, and PyTorch's headers are never compiled."""
    lines = API_TOUR.splitlines()
    at = next(i for i, line in enumerate(lines) if "return out;" in line)
    lines[at] = f"    return out * kjudge_undeclared_{time.time_ns()};"
    out = build_native("\n".join(lines) + "\n", Language.CPP, "forward", cpu_target, build_cache)
    assert not out.ok and out.message == "compilation failed; see logs.compile"
    assert "lite_units" in out.steps_s and "units" not in out.steps_s, out.steps_s
    assert "not built again with PyTorch's headers" in out.log, out.log
    assert f"submission.cpp:{at + 1}:" in out.log and "was not declared" in out.log, out.log


def test_a_torch_name_the_lite_api_lacks_is_built_with_pytorchs_headers(
    build_cache: Path, cpu_target: Target
) -> None:
    source = API_TOUR.replace("return out;\n}", 'TORCH_WARN_ONCE("kept");\n    return out;\n}', 1)
    out = _build(source + f"// {time.time_ns()}\n", cpu_target, build_cache)
    assert out.ok and LITE_NOTE not in out.log and "building with PyTorch's headers" in out.log, out.log


def test_a_child_given_the_parents_toolchain_uses_it_as_found(
    build_cache: Path, cpu_target: Target, tmp_path: Path
) -> None:
    """The ahead child takes the header and the lite runtime where the parent found them, even
    where its own lookup would find nothing (another compiler's path, say, keys them elsewhere)."""
    from evaluator.build.models import TrustedToolchain

    runtime, _ = lite.ensure_runtime(build_cache, Backend.CPU)
    pch_dir, _ = ensure_pch(build_cache, host_compiler())
    assert runtime is not None
    nothing_here = tmp_path / "empty-cache"
    nothing_here.mkdir()
    source = SHAPE_CHECKS + f"// {time.time_ns()}\n"
    spec = plan_inline(cpu_target, f"given_{time.time_ns()}", [source], [], {"forward": ""}, **FLAGS)
    given = TrustedToolchain(pch_dir=pch_dir, lite={Backend.CPU.value: runtime})
    out = build_spec(spec, build_cache, trusted_pch_cache=nothing_here, trusted=given)
    assert out.ok and LITE_NOTE in out.log and "from the parent" not in out.log, out.log
