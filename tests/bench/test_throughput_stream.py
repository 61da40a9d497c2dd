"""bench/throughput.py's stream: what the issue asks of it (distinct, >= 6 problems, four
languages, ~10 % incorrect, ~5 % compile errors), and mutations that really mutate."""

from __future__ import annotations

import ast
from collections import Counter

from bench.throughput import problem_sources, shrink, spread_over_languages
from bench.throughput_stream import (
    KERNELS,
    cpu_stream,
    gpu_stream,
    kernelbench,
    native_incorrect,
    triton_variant,
)


def test_the_gpu_stream_is_distinct_and_mixed() -> None:
    sources = problem_sources("cuda", 6)
    stream = gpu_stream(sources, 200)
    assert len({c.source for c in stream}) == 200
    assert len({c.problem for c in stream}) >= 6
    assert set(Counter(c.language for c in stream)) == {"cuda", "hip", "triton", "kernelbench"}
    kinds = Counter(c.kind for c in stream)
    assert kinds == {"correct": 170, "incorrect": 20, "compile_error": 10}
    # Another base shares no source with it (warm-up and a re-run send only new kernels).
    assert not {c.source for c in stream} & {c.source for c in gpu_stream(sources, 200, base=50_000)}


def test_the_empty_queue_probes_take_the_languages_in_turn() -> None:
    stream = gpu_stream(problem_sources("cuda", 6), 200, seed=3)
    probes = spread_over_languages(stream, 8)
    assert Counter(c.language for c in probes) == {"cuda": 2, "hip": 2, "triton": 2, "kernelbench": 2}
    # Within a language, the stream's own order (the shuffle still picks which kernels).
    cuda = [c for c in stream if c.language == "cuda"]
    assert [c for c in probes if c.language == "cuda"] == cuda[:2]


def test_python_candidates_parse_except_the_broken_ones() -> None:
    for c in gpu_stream(problem_sources("cuda", 6), 80):
        if c.language in ("triton", "kernelbench") and not (
            c.kind == "compile_error" and c.language == "triton"
        ):
            ast.parse(c.source)


def test_mutations() -> None:
    ref = (KERNELS / "relu" / "cuda.cu").read_text()
    wrong = native_incorrect(ref, 3)
    assert "kjudge_forward_impl(x)" in wrong and "torch::zeros_like" in wrong
    assert wrong.count("torch::Tensor forward(") == 1
    triton = triton_variant((KERNELS / "relu" / "triton.py").read_text(), 5)
    assert "    kjudge_variant = 5" in triton.split("class ModelNew")[0]
    module = kernelbench(ref, "relu", 7)
    assert (
        "load_inline(name='kb_relu_7'" in module
        and "cpp_sources='torch::Tensor forward(torch::Tensor x);'" in module
    )


def test_the_cpu_stream_and_small_problems() -> None:
    stream = cpu_stream(["relu", "silu"], 20)
    assert {c.language for c in stream} == {"cpp"} and len({c.source for c in stream}) == 20
    assert "batch_size = 4\n" in shrink(problem_sources("cpu", 1)["relu"])


def test_kernelbench_harness_samples_are_new_kernelbench_candidates(tmp_path) -> None:
    from bench import kernelbench_harness

    drawn = kernelbench_harness.samples(3, seed=7)
    assert len({custom for _, _, custom in drawn}) == 3 and len({name for name, _, _ in drawn}) == 3
    for name, reference, custom in drawn:
        assert "class Model(" in reference and "load_inline(" in custom and "class ModelNew(" in custom
        ast.parse(custom)
        # Never a source the throughput run of the same seed sends.
        assert not any(custom == c.source for c in gpu_stream({name: reference}, 200, base=700_000))
    assert "error" in kernelbench_harness.measure(tmp_path, count=1)  # no checkout there
