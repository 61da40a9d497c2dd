"""AMD (and NVIDIA) facts in code: datasheet peaks, the flush size that covers L2 and the
Infinity Cache, and ROCm device pinning by ROCR_VISIBLE_DEVICES (issue #13, item 5)."""

from __future__ import annotations

import pytest

from evaluator.device_facts import DEFAULT_CACHE_BYTES, device_peaks, flush_bytes
from evaluator.targets.rocm import physical_ids, pinned_env

MiB = 1 << 20


@pytest.mark.parametrize(
    ("name", "hbm", "fp32", "fp16"),
    [
        ("AMD Instinct MI300X", 5.3, 163.4, 1307.4),
        ("AMD Instinct MI300X VF", 5.3, 163.4, 1307.4),  # the SR-IOV name of the same part
        ("AMD Instinct MI325X", 6.0, 163.4, 1307.4),
        ("AMD Instinct MI350X", 8.0, 144.2, 2306.9),
        ("AMD Instinct MI355X", 8.0, 157.3, 2516.6),
        ("NVIDIA H200", 4.8, 67.0, 989.4),
        ("NVIDIA H100 80GB HBM3", 3.35, 67.0, 989.4),
    ],
)
def test_datasheet_peaks(name: str, hbm: float, fp32: float, fp16: float) -> None:
    peaks = device_peaks(name)
    assert peaks is not None
    assert (peaks.hbm_tbps, peaks.fp32_tflops, peaks.fp16_tflops, peaks.bf16_tflops) == (
        hbm,
        fp32,
        fp16,
        fp16,
    )


def test_peaks_agree_with_cus_times_clock() -> None:
    """The datasheet figures are CUs x clock x FLOPs per CU per clock (CDNA 3: 256 FP32 and
    2,048 dense FP16; CDNA 4: 256 and 4,096): a typo in the table fails here."""
    for name, cus, ghz, fp16_per_clock in (
        ("MI300X", 304, 2.1, 2048),
        ("MI325X", 304, 2.1, 2048),
        ("MI350X", 256, 2.2, 4096),
        ("MI355X", 256, 2.4, 4096),
    ):
        peaks = device_peaks(f"AMD Instinct {name}")
        assert peaks is not None
        assert peaks.fp32_tflops == pytest.approx(cus * ghz * 256 / 1e3, abs=0.06)
        assert peaks.fp16_tflops == pytest.approx(cus * ghz * fp16_per_clock / 1e3, abs=0.06)


def test_unknown_devices_have_no_peaks() -> None:
    # A PCIe/NVL part shares the chip name but not the clocks or memory: no guessing.
    for name in ("NVIDIA H100 PCIe", "NVIDIA H200 NVL", "AMD Radeon RX 7900 XTX", "cpu"):
        assert device_peaks(name) is None


def test_flush_covers_l2_and_infinity_cache_on_mi300_class_parts() -> None:
    for name in ("AMD Instinct MI300X", "AMD Instinct MI325X", "AMD Instinct MI355X"):
        # torch reports one XCD's 4 MiB L2 slice; the flush must also cover the 256 MiB behind it
        size = flush_bytes(name, "gfx942:sramecc+:xnack-", l2_bytes=4 * MiB)
        assert size > 256 * MiB + 32 * MiB and size == 2 * 288 * MiB
    # an MI300-class arch under an unrecognised name (a VM, a renamed SKU)
    assert flush_bytes("AMD Radeon Graphics", "gfx942", 4 * MiB) == 2 * 288 * MiB
    assert flush_bytes("AMD Radeon Graphics", "gfx950") == 2 * 288 * MiB


def test_flush_elsewhere_is_twice_the_reported_l2() -> None:
    assert flush_bytes("NVIDIA H200", "sm_90", l2_bytes=60 * MiB) == 120 * MiB
    assert flush_bytes("NVIDIA H200", "sm_90", l2_bytes=0) == 100 * MiB  # the datasheet's 50 MiB
    assert flush_bytes("AMD Instinct MI210", "gfx90a", l2_bytes=8 * MiB) == 16 * MiB
    assert flush_bytes("some GPU", "", 0) == 2 * DEFAULT_CACHE_BYTES


@pytest.mark.parametrize(
    ("env", "count", "ids"),
    [
        ({}, 2, ["0", "1"]),
        ({"ROCR_VISIBLE_DEVICES": "4,5,6"}, 3, ["4", "5", "6"]),
        # HIP (and CUDA) indices count inside ROCR's list
        ({"ROCR_VISIBLE_DEVICES": "4,5,6", "HIP_VISIBLE_DEVICES": "2,0"}, 2, ["6", "4"]),
        ({"ROCR_VISIBLE_DEVICES": "4,5,6", "CUDA_VISIBLE_DEVICES": "1"}, 1, ["5"]),
        ({"HIP_VISIBLE_DEVICES": "3,7"}, 2, ["3", "7"]),
        ({"ROCR_VISIBLE_DEVICES": "GPU-aa11,GPU-bb22"}, 2, ["GPU-aa11", "GPU-bb22"]),
    ],
)
def test_physical_ids(env: dict[str, str], count: int, ids: list[str]) -> None:
    assert physical_ids(env, count) == ids


def test_pinned_env_leaves_exactly_one_gpu_as_device_0() -> None:
    base = {
        "PATH": "/usr/bin",
        "HIP_VISIBLE_DEVICES": "3",
        "CUDA_VISIBLE_DEVICES": "3",
        "ROCR_VISIBLE_DEVICES": "0,1,2,3",
    }
    env = pinned_env(base, "3")
    assert env["ROCR_VISIBLE_DEVICES"] == "3" and env["PATH"] == "/usr/bin"
    # HIP_VISIBLE_DEVICES=3 inside ROCR_VISIBLE_DEVICES=3 would ask for the 4th GPU of a
    # one-GPU list: none. Unset, the pinned GPU is device 0.
    assert "HIP_VISIBLE_DEVICES" not in env and "CUDA_VISIBLE_DEVICES" not in env
    assert physical_ids(env, 1) == ["3"]
    assert base["HIP_VISIBLE_DEVICES"] == "3"  # the caller's mapping is not changed


def test_published_ceilings_for_the_roofline() -> None:
    from evaluator.ceilings import published_ceilings
    from evaluator.result import Backend, Target

    mi300 = published_ceilings(Target(backend=Backend.ROCM, arch="gfx942", device="AMD Instinct MI300X"))
    assert mi300 is not None and mi300.source == "datasheet"
    assert mi300.bandwidth_bytes_per_s == pytest.approx(5.3e12)
    assert mi300.peak_flops("float32") == pytest.approx(653.7e12)  # TF32 is allowed for fp32 problems
    assert mi300.peak_flops("bfloat16") == pytest.approx(1307.4e12)
    assert mi300.max_flops() == pytest.approx(1307.4e12)
    mi355 = published_ceilings(Target(backend=Backend.ROCM, arch="gfx950", device="AMD Instinct MI355X"))
    assert mi355 is not None and mi355.peak_flops("float32") == pytest.approx(157.3e12)  # no TF32 on CDNA 4
    assert (
        published_ceilings(Target(backend=Backend.ROCM, arch="gfx1100", device="AMD Radeon RX 7900 XTX"))
        is None
    )
    assert (
        published_ceilings(Target(backend=Backend.CPU, arch="x86_64", device="AMD Instinct MI300X")) is None
    )
