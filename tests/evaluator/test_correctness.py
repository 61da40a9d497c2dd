from __future__ import annotations

import math

import pytest
import torch

from evaluator import correctness
from evaluator.correctness import compare, same_values, scrub


def test_identical_tensors_pass_with_zero_error() -> None:
    x = torch.randn(8, 9)
    result = compare(x, x.clone(), 1e-2, 1e-2)
    assert result.ok and result.max_abs_err == 0 and result.max_rel_err == 0


def test_within_tolerance_reports_errors() -> None:
    ref = torch.full((4,), 2.0)
    out = ref + torch.tensor([0.0, 0.01, 0.02, 0.0])
    result = compare(out, ref, 1e-2, 1e-2)  # allowed: 0.01 + 0.01 * 2 = 0.03
    assert result.ok
    assert result.max_abs_err == pytest.approx(0.02, rel=1e-4)
    assert result.max_rel_err == pytest.approx(0.01, rel=1e-4)


def test_outside_tolerance_names_first_bad_element() -> None:
    ref = torch.zeros(3, 4)
    out = ref.clone()
    out[1, 2] = 0.5
    out[2, 3] = 0.7
    result = compare(out, ref, 1e-2, 1e-2)
    assert not result.ok
    assert result.max_abs_err == pytest.approx(0.7)
    assert "2 element(s)" in (result.message or "")
    assert "output[1, 2] = 0.5, expected 0.0" in (result.message or "")


@pytest.mark.parametrize(
    ("out", "ref", "needle"),
    [
        (torch.zeros(2, 3), torch.zeros(3, 2), "shape (2, 3) but the reference has (3, 2)"),
        (torch.zeros(2, dtype=torch.float64), torch.zeros(2), "dtype torch.float64"),
        ((torch.zeros(2),), torch.zeros(2), "is a tuple of 1 but the reference returns a tensor"),
        (
            torch.zeros(2),
            (torch.zeros(2), torch.zeros(2)),
            "is a tensor but the reference returns a tuple of 2",
        ),
        ([torch.zeros(2)], [torch.zeros(2), torch.zeros(2)], "list of 1"),
        (3, torch.zeros(2), "is a int but the reference returns a tensor"),
    ],
)
def test_structure_shape_dtype_mismatches(out: object, ref: object, needle: str) -> None:
    result = compare(out, ref, 1e-2, 1e-2)
    assert not result.ok and needle in (result.message or "")


def test_nan_and_inf_only_where_the_reference_has_them() -> None:
    ref = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    assert compare(ref.clone(), ref, 1e-2, 1e-2).ok
    out = ref.clone()
    out[0] = float("nan")
    assert not compare(out, ref, 1e-2, 1e-2).ok
    out = ref.clone()
    out[2] = -float("inf")
    assert not compare(out, ref, 1e-2, 1e-2).ok
    out = ref.clone()
    out[1] = 0.0  # a number where the reference has NaN
    assert not compare(out, ref, 1e-2, 1e-2).ok
    finite = compare(torch.tensor([1.0]), torch.tensor([float("inf")]), 1e6, 1e6)
    assert not finite.ok


def test_integer_outputs_must_match_exactly() -> None:
    ref = torch.arange(10)
    assert compare(ref.clone(), ref, 1e-2, 1e-2).ok
    out = ref.clone()
    out[3] += 1
    assert not compare(out, ref, 10.0, 10.0).ok


def test_half_precision_and_nested_outputs() -> None:
    a = torch.randn(16).half()
    assert compare((a.clone(), [a.clone()]), (a, [a]), 1e-3, 1e-3).ok
    b = a.clone()
    b[5] += 1
    result = compare((a.clone(), [b]), (a, [a]), 1e-3, 1e-3)
    assert not result.ok and "output[1][0][5]" in (result.message or "")


def test_chunked_comparison_matches_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(correctness, "CHUNK_ELEMENTS", 7)
    ref = torch.randn(5, 11)
    out = ref.clone()
    out[4, 10] += 1.0
    result = compare(out, ref, 1e-3, 1e-3)
    assert not result.ok and "output[4, 10]" in (result.message or "")
    assert result.max_abs_err == pytest.approx(1.0, rel=1e-5)


def test_same_values_detects_in_place_changes() -> None:
    x = [torch.tensor([1.0, float("nan")]), 3]
    assert same_values(x, [t.clone() if isinstance(t, torch.Tensor) else t for t in x])
    y = [torch.tensor([1.5, float("nan")]), 3]
    assert not same_values(x, y)


def test_scrub_overwrites_reference_outputs() -> None:
    ref = (torch.ones(3), torch.ones(2, dtype=torch.int32))
    scrub(ref)
    assert all(math.isnan(v) for v in ref[0].tolist())
    assert ref[1].tolist() == [0, 0]
