"""Reading the entry's signature and generating the pybind11 binding."""

from __future__ import annotations

import pytest

from evaluator.build import binding

DECLARATIONS = [
    pytest.param(
        "#include <torch/extension.h>\n__global__ void k(float* x) {}\n"
        "torch::Tensor forward(torch::Tensor x, double alpha) {\n  return x;\n}\n",
        "forward",
        "torch::Tensor forward(torch::Tensor x, double alpha)",
        id="simple",
    ),
    pytest.param(
        "at::Tensor\nmy_op(const at::Tensor& a,\n      const at::Tensor& b,\n      int64_t k = 4)\n{\n  return a;\n}\n",
        "my_op",
        "at::Tensor my_op(const at::Tensor& a, const at::Tensor& b, int64_t k = 4)",
        id="multi-line-const-refs-defaults",
    ),
    # Found on the H200: a `// forward(x, w): …` line above the entry went into the binding
    # unit's declaration and every such reference kernel failed to compile.
    pytest.param(
        "void helper() {}\n\n// forward(x, weight): the input, then the state_dict() tensor.\n"
        "torch::Tensor forward(torch::Tensor x, /* rows */ torch::Tensor weight) {\n  return x;\n}\n",
        "forward",
        "torch::Tensor forward(torch::Tensor x, torch::Tensor weight)",
        id="comments-above-and-inside",
    ),
    pytest.param(
        'torch::Tensor forward(torch::Tensor x, std::string mode = "fast") {\n  return x;\n}\n',
        "forward",
        'torch::Tensor forward(torch::Tensor x, std::string mode = "fast")',
        id="string-default-kept",
    ),
]


@pytest.mark.parametrize(("source", "entry", "declaration"), DECLARATIONS)
def test_entry_declaration(source: str, entry: str, declaration: str) -> None:
    assert binding.entry_declaration(source, entry) == declaration


def test_calls_prototypes_and_comments_are_not_the_definition() -> None:
    src = (
        "// torch::Tensor forward(int fake) {\n"
        "torch::Tensor forward(torch::Tensor x);\n"
        "torch::Tensor helper(torch::Tensor x) { return forward(x); }\n"
        "std::vector<torch::Tensor> forward(torch::Tensor x) { return {x}; }\n"
    )
    assert binding.entry_declaration(src, "forward") == "std::vector<torch::Tensor> forward(torch::Tensor x)"


def test_inline_and_host_qualifiers_are_dropped() -> None:
    assert binding.entry_declaration(
        "inline torch::Tensor forward(torch::Tensor x) { return x; }", "forward"
    ) == ("torch::Tensor forward(torch::Tensor x)")


def test_unrepeatable_declarations_are_refused() -> None:
    # internal linkage, a template, inside a namespace, or none at all: bind in the same unit instead.
    assert (
        binding.entry_declaration("static torch::Tensor forward(torch::Tensor x) { return x; }", "forward")
        is None
    )
    assert binding.entry_declaration("template <typename T>\nT forward(T x) { return x; }", "forward") is None
    assert (
        binding.entry_declaration(
            "namespace a {\ntorch::Tensor forward(torch::Tensor x) { return x; }\n}", "forward"
        )
        is None
    )
    assert binding.entry_declaration("torch::Tensor other(torch::Tensor x) { return x; }", "forward") is None


def test_file_scope_usings_are_carried_to_the_binding_unit() -> None:
    src = "using torch::Tensor;\nnamespace { using X = int; }\ntypedef float real;\nTensor forward(Tensor x) { using namespace at; return x; }\n"
    assert binding.file_scope_usings(src) == ["using torch::Tensor;", "typedef float real;"]


def test_module_definition_wraps_errors_and_escapes_docstrings() -> None:
    text = binding.module_definition({"forward": 'say "hi"'})
    assert "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)" in text
    assert 'm.def("forward", torch::wrap_pybind_function(forward), "say \\"hi\\"");' in text
    assert 'm.def("f", f, "f");' in binding.module_definition({"f": "f"}, wrap_errors=False)


def test_binding_unit_declares_then_binds() -> None:
    text = binding.binding_unit_source(
        ["torch::Tensor forward(torch::Tensor x)"], ["using torch::Tensor;"], {"forward": "forward"}
    )
    lines = text.splitlines()
    assert lines[0] == "#include <torch/extension.h>"
    assert lines[1] == "using torch::Tensor;"
    assert lines[2] == "torch::Tensor forward(torch::Tensor x);"


def test_own_module_detection() -> None:
    assert (
        binding.module_name_in_source("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}") == "TORCH_EXTENSION_NAME"
    )
    assert binding.module_name_in_source("PYBIND11_MODULE( my_ext , m) {}") == "my_ext"
    assert binding.module_name_in_source("// PYBIND11_MODULE(x, m)\n") is None


def test_light_header_only_without_pybind_or_frontend_api() -> None:
    assert binding.light_header_safe(
        "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x) { return x; }"
    )
    assert not binding.light_header_safe("namespace py = pybind11;")
    assert not binding.light_header_safe("auto y = torch::nn::functional::relu(x);")
    assert not binding.light_header_safe("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}")


def test_defines_function_ignores_comments() -> None:
    assert binding.defines_function("torch::Tensor run (torch::Tensor x) { return x; }", "run")
    assert not binding.defines_function(
        "// forward(x)\ntorch::Tensor run(torch::Tensor x) { return x; }", "forward"
    )


def test_every_shipped_native_kernel_has_a_repeatable_declaration() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = sorted(
        [
            *root.glob("problems/kernels/*/*.hip"),
            *root.glob("problems/kernels/*/*.cu"),
            *root.glob("examples/*/*.hip"),
            *root.glob("examples/*/*.cu"),
        ]
    )
    assert sources
    for path in sources:
        declaration = binding.entry_declaration(path.read_text(), "forward")
        if declaration is None:
            continue  # the binding is appended to the source itself: nothing to repeat
        assert "//" not in declaration and "/*" not in declaration, (path, declaration)
        assert declaration.startswith(("torch::Tensor forward(", "at::Tensor forward(")), (path, declaration)
