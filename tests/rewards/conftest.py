"""A real `kjudge serve` (embedded: SQLite + kombu's filesystem broker, its own worker) on the CPU
target, shared by the whole session: the adaptors' tests run against it exactly as a trainer
would, through $KJUDGE_URL. Completions shared by the tests are evaluated once (the adaptors
reuse stored results of identical sources), so a session costs four real evaluations."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.embedded_serve import seed_problem, serve
from bench.private_services import free_port
from tests.service.conftest import REPO

EXAMPLES = REPO / "examples" / "relu"
PROBLEM_NAME = "relu_rl"

# The four kernels: correct, wrong, not compiling, and a hack (it calls the reference's op).
CORRECT = (EXAMPLES / "relu_cpp.cpp").read_text()
INCORRECT = (EXAMPLES / "relu_incorrect.cpp").read_text()
COMPILE_ERROR = """#include <torch/extension.h>

torch::Tensor forward(torch::Tensor x) {
    auto y = x.clamp_min(0)
    return y;
}
"""
HACK = "#include <torch/extension.h>\ntorch::Tensor forward(torch::Tensor x) { return torch::relu(x); }\n"
NO_CODE = "I would write a ReLU kernel that clamps negative values to zero, but I am not sure how."


def fenced(code: str, tag: str = "cpp") -> str:
    """A completion as a model writes one: reasoning, a draft, then the answer last."""
    return (
        "Let me think about the kernel. A first idea:\n```text\nout = max(x, 0)\n```\n"
        f"Here is my final answer:\n```{tag}\n{code}```\nThis should be fast."
    )


@dataclass(frozen=True)
class Server:
    url: str
    problem: str  # the problem's name; its id is problem_id
    problem_id: str
    log: Path


@pytest.fixture(scope="session")
def server(kjudge_toolchain: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    # The session's builds and precompiled header are shared with other suites, and built before
    # serve starts: its compile pool would otherwise build them while the first candidates wait.
    home = kjudge_toolchain
    pid = seed_problem(home, (EXAMPLES / "problem.py").read_text(), PROBLEM_NAME)
    with serve(home, tmp_path_factory.mktemp("rewards") / "serve.log") as served:
        yield Server(url=served.url, problem=PROBLEM_NAME, problem_id=pid, log=served.log_path)


@pytest.fixture
def kjudge_env(server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    """$KJUDGE_URL set as a trainer's launcher would (the loopback server needs no key)."""
    monkeypatch.setenv("KJUDGE_URL", server.url)
    monkeypatch.delenv("KJUDGE_API_KEY", raising=False)
    monkeypatch.delenv("KJUDGE_REWARD_CONFIG", raising=False)
    return server


def dead_url() -> str:
    """A loopback port nothing listens on: a stopped kjudge server."""
    return f"http://127.0.0.1:{free_port()}"
