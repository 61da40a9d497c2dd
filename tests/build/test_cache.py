"""Content keys and atomic publication of built modules."""

from __future__ import annotations

from pathlib import Path

from evaluator.build import cache
from evaluator.build.models import BuildOutput


def _stage(cache_dir: Path, key: str, payload: bytes) -> tuple[Path, BuildOutput]:
    root = cache_dir / "modules"
    root.mkdir(parents=True, exist_ok=True)
    staged = root / f".tmp-{payload.hex()}"
    staged.mkdir()
    so = staged / "m.so"
    so.write_bytes(payload)
    return staged, BuildOutput(ok=True, module_path=so, module_name="m", seconds=1.0)


def test_content_key_is_stable_and_sensitive() -> None:
    assert cache.content_key("src", {"a": 1, "b": 2}) == cache.content_key("src", {"b": 2, "a": 1})
    assert cache.content_key("src", "sm_90") != cache.content_key("src", "sm_80")


def test_publish_then_lookup(tmp_path: Path) -> None:
    assert cache.lookup(tmp_path, "k1") is None
    staged, out = _stage(tmp_path, "k1", b"one")
    published = cache.publish(staged, tmp_path, "k1", out)
    assert published.module_path == tmp_path / "modules" / "k1" / "m.so"
    assert not staged.exists()
    hit = cache.lookup(tmp_path, "k1")
    assert hit is not None and hit.cached and hit.module_path is not None
    assert hit.module_path.read_bytes() == b"one"


def test_losing_a_publish_race_returns_the_winner(tmp_path: Path) -> None:
    staged1, out1 = _stage(tmp_path, "k", b"first")
    staged2, out2 = _stage(tmp_path, "k", b"second")
    cache.publish(staged1, tmp_path, "k", out1)
    second = cache.publish(staged2, tmp_path, "k", out2)
    assert second.module_path is not None and second.module_path.read_bytes() == b"first"


def test_unfinished_builds_are_invisible(tmp_path: Path) -> None:
    # A staging directory (or a directory without build.json) is never returned.
    _stage(tmp_path, "k", b"partial")
    (tmp_path / "modules" / "k2").mkdir()
    (tmp_path / "modules" / "k2" / "m.so").write_bytes(b"half")
    assert cache.lookup(tmp_path, "k") is None
    assert cache.lookup(tmp_path, "k2") is None


def test_publish_copies_a_module_built_outside_the_cache(tmp_path: Path) -> None:
    outside = tmp_path / "scratch"
    outside.mkdir()
    (outside / "m.so").write_bytes(b"x")
    with cache.staging_dir(tmp_path / "c", "k") as staged:
        out = cache.publish(
            staged, tmp_path / "c", "k", BuildOutput(ok=True, module_path=outside / "m.so", module_name="m")
        )
    assert out.module_path == tmp_path / "c" / "modules" / "k" / "m.so"
    assert out.module_path.read_bytes() == b"x"


def test_a_remembered_compile_error_is_returned_as_it_was(tmp_path: Path) -> None:
    failed = BuildOutput(ok=False, log="main.cpp:3: error: expected ';'", message="compilation failed")
    cache.publish_failure(tmp_path, "bad", failed)
    hit = cache.lookup(tmp_path, "bad")
    assert hit is not None and not hit.ok and hit.cached
    assert hit.log == failed.log and hit.message == failed.message
    assert not list((tmp_path / "modules").glob(".tmp-*"))  # nothing staged is left behind
    # A second record for the same key (another worker) keeps the first.
    cache.publish_failure(tmp_path, "bad", failed.model_copy(update={"log": "other"}))
    assert cache.lookup(tmp_path, "bad").log == failed.log  # type: ignore[union-attr]
