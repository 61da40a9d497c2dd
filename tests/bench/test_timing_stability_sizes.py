"""bench/timing_stability.py sizes its largest case to the device: the 12.9 GB ReLU input fits an
H200 and was a runtime_error in every repetition on an 80 GB H100."""

from __future__ import annotations

from bench.timing_stability import CASES, fitted

MIB = 1024 * 1024
H100_80GB = 81_559 * MIB  # nvidia-smi's memory.total on the lent H100
H200 = 143_771 * MIB


def test_the_largest_relu_shrinks_on_an_80_gb_card_only() -> None:
    sizes = {"batch_size": 4096, "dim": 786_432}
    name, smaller = fitted("relu 4096x786432 cuda", sizes, H100_80GB)
    assert smaller == {"batch_size": 4096, "dim": 458_752} and name == "relu 4096x458752 cuda"
    assert 4 * 4096 * smaller["dim"] <= 0.1 * H100_80GB
    assert fitted("relu 4096x786432 cuda", sizes, H200) == ("relu 4096x786432 cuda", sizes)
    assert fitted("relu 4096x786432 cuda", sizes, None) == ("relu 4096x786432 cuda", sizes)


def test_every_other_case_is_as_declared_on_the_h100() -> None:
    # The 6.4 GB relu ran on the H100; the norms and softmaxes are far smaller.
    for name, _, sizes, _, _ in CASES:
        if "786432" not in name:
            assert fitted(name, sizes, H100_80GB) == (name, sizes)
