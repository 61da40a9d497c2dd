"""Profile mode through the API on a GPU (skipped without one): `kjudge serve` on embedded
defaults, a POST with `"profile": true`, and the stored Result's `profile` read back over HTTP
with the SDK (kjudge.client)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("fastapi")  # kjudge serve needs the service's packages
pytest.importorskip("celery")

from .conftest import REPO  # noqa: E402
from .test_serve_embedded import served  # noqa: E402, F401  (the fixture)

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_api_returns_the_profile_of_a_correct_submission(served, tmp_path: Path) -> None:  # noqa: F811
    from kjudge.client import Client

    base, problem_id, _proc, log_path = served
    source = (REPO / "examples" / "relu" / "relu_cuda.cu").read_text()
    with Client(base) as kj:
        ref = kj.submit(problem_id, source, "cuda", target="cuda", profile=True)
        try:
            sub = kj.wait(ref.id, timeout=600)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}\n--- serve log ---\n{log_path.read_text()[-4000:]}") from None
        plain = kj.wait(kj.submit(problem_id, source, "cuda", target="cuda").id, timeout=600)
    assert (sub.status, sub.verdict, sub.profile) == ("done", "correct", True), sub
    profile = sub.result.profile  # type: ignore[union-attr]
    assert profile is not None and profile.available, profile
    names = [k.name.split("(")[0].split()[-1] for k in profile.kernels]
    assert names == ["relu_kernel"]
    kernel = profile.kernels[0]
    assert kernel.duration_us and kernel.dram_pct_of_peak and kernel.registers_per_thread
    assert profile.bottleneck and "relu_kernel" in profile.bottleneck
    assert plain.verdict == "correct" and plain.profile is False
    assert plain.result is not None and plain.result.profile is None  # type: ignore[union-attr]
