"""Content-addressed build cache with atomic publish.

Layout under cache_dir: `modules/<key>/<module>.so` + `build.json`, and `pch/<key>/…`. A build
happens in a private temporary directory beside its final place and is published with one
rename(2), so a concurrent worker sees either nothing or a complete module, never half a .so.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from evaluator.build.models import BuildOutput

# Bump when the build recipe changes in a way that invalidates cached modules.
RECIPE_VERSION = "1"


def content_key(*parts: object) -> str:
    """SHA-256 over a canonical JSON rendering of the parts."""
    blob = json.dumps([RECIPE_VERSION, *parts], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def module_dir(cache_dir: Path, key: str) -> Path:
    return cache_dir / "modules" / key


def lookup(cache_dir: Path, key: str) -> BuildOutput | None:
    """The published build for `key` (a module, or a compile error remembered by
    publish_failure), or None. Only complete (renamed-into-place) records exist."""
    meta = module_dir(cache_dir, key) / "build.json"
    try:
        out = BuildOutput.model_validate_json(meta.read_text())
    except (OSError, ValueError):
        return None
    if out.ok and (out.module_path is None or not out.module_path.exists()):
        return None
    return out.model_copy(update={"cached": True, "seconds": 0.0})


@contextlib.contextmanager
def staging_dir(cache_dir: Path, key: str) -> Iterator[Path]:
    """A private directory to build in; removed afterwards unless it was published."""
    root = cache_dir / "modules"
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp-{key[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publish(staged: Path, cache_dir: Path, key: str, output: BuildOutput) -> BuildOutput:
    """Move a finished build into place atomically; if another worker won the race, use theirs.

    `staged` must be a directory under cache_dir/modules (see staging_dir) holding the module.
    """
    final = module_dir(cache_dir, key)
    assert output.module_path is not None
    if output.module_path.parent != staged:
        shutil.copy2(output.module_path, staged / output.module_path.name)
    relocated = output.model_copy(update={"module_path": final / output.module_path.name})
    (staged / "build.json").write_text(relocated.model_dump_json(indent=1))
    try:
        os.rename(staged, final)
    except OSError:
        existing = lookup(cache_dir, key)
        if existing is None:
            raise
        return existing.model_copy(update={"cached": False, "seconds": output.seconds, "log": output.log})
    return relocated


def publish_failure(cache_dir: Path, key: str, output: BuildOutput) -> BuildOutput:
    """Remember that `key` does not compile (a compile error is a function of the spec and the
    toolchain, both in the key), atomically as publish does; a record already there wins."""
    assert not output.ok and not output.transient
    with staging_dir(cache_dir, key) as staged:
        (staged / "build.json").write_text(output.model_dump_json(indent=1))
        # Another worker may have published first: its record is as good.
        with contextlib.suppress(OSError):
            os.rename(staged, module_dir(cache_dir, key))
    return output


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock, so two workers do not both spend a minute on the same header."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
