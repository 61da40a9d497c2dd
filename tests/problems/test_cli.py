"""`kjudge problems list|show|import` (import writes to a real PostgreSQL database)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from kjudge.cli import main
from kjudge.commands.problems import discover
from problems.catalog import iter_builtin_problems

GOOD = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch_size = 16
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
"""

FUSED = GOOD.replace("torch.relu(x)", "torch.softmax(x @ x.T, dim=-1)")
BAD = GOOD.replace("return [torch.randn(batch_size, dim)]", "return ['not a tensor']")


def test_list_shows_every_builtin_with_roofline(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "list"]) == 0
    out = capsys.readouterr().out
    for problem in iter_builtin_problems():
        assert problem.name in out
    assert "536.9 MB" in out  # relu: 256 MiB in + 256 MiB out
    assert "137.4 GFLOP" in out  # matmul_square: 2 * 4096^3
    assert "missing" not in out


def test_list_json_and_filters(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "list", "--level", "2", "--tag", "fused", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all(r["level"] == 2 and "fused" in r["tags"] for r in rows)
    by_name = {r["name"]: r for r in rows}
    assert by_name["swiglu"]["bytes"] == 8192 * 16384 * 4 + 8192 * 8192 * 4
    assert set(by_name["swiglu"]["kernels"]) == {"cuda", "hip", "triton"}


def test_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "show", "rms_norm"]) == 0
    out = capsys.readouterr().out
    assert "class Model" in out and "hip.hip" in out
    assert main(["problems", "show", "no_such_problem"]) == 2
    assert "kjudge problems list" in capsys.readouterr().err


def test_discover_kernelbench_layouts(tmp_path: Path) -> None:
    root = tmp_path / "KernelBench-repo"
    for level in (1, 2, 4):
        folder = root / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True)
        (folder / f"{level}_Problem.py").write_text(GOOD)
        (folder / "__init__.py").write_text("")
    found = discover(root, None)
    assert [(f.name, lvl) for f, lvl in found] == [
        ("1_Problem.py", 1),
        ("2_Problem.py", 2),
        ("4_Problem.py", 4),
    ]
    assert discover(root / "KernelBench" / "level2", None) == [(root / "KernelBench/level2/2_Problem.py", 2)]
    flat = tmp_path / "mine"
    flat.mkdir()
    (flat / "a.py").write_text(GOOD)
    assert discover(flat, 3) == [(flat / "a.py", 3)]


def test_import_stores_versions_by_hash(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from core.settings import get_settings

    monkeypatch.setenv("KJUDGE_DATABASE_URL", pg_url)
    get_settings.cache_clear()
    try:
        root = tmp_path / "kb"
        (root / "level1").mkdir(parents=True)
        (root / "level2").mkdir()
        (root / "level1" / "1_Relu.py").write_text(GOOD)
        (root / "level1" / "2_Bad.py").write_text(BAD)
        (root / "level2" / "3_Fused.py").write_text(FUSED)

        assert main(["problems", "import", str(root), "--tag", "kernelbench"]) == 0
        captured = capsys.readouterr()
        assert "refused 2_Bad (level 1): rule 'inputs_are_tensors'" in captured.out
        assert "2 accepted (stored 2 new, 0 already present), 1 refused" in captured.err

        engine = sa.create_engine(pg_url)
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT name, level, tags, roofline FROM problems ORDER BY name")
            ).all()
        assert [(r.name, r.level) for r in rows] == [("1_Relu", 1), ("3_Fused", 2)]
        relu = rows[0]
        assert "kernelbench" in relu.tags and "activation" in relu.tags
        assert relu.roofline["bytes"] == 2 * 16 * 64 * 4
        assert "fused" in rows[1].tags and rows[1].roofline["flops"] == 2 * 16 * 64 * 16

        # Editing a problem makes a new problem; the old version stays for the results that used it.
        (root / "level1" / "1_Relu.py").write_text(GOOD.replace("dim = 64", "dim = 128"))
        assert main(["problems", "import", str(root)]) == 0
        assert "2 accepted (stored 1 new, 1 already present), 1 refused" in capsys.readouterr().err
        with engine.connect() as conn:
            versions = conn.execute(sa.text("SELECT id FROM problems WHERE name = '1_Relu'")).all()
        engine.dispose()
        assert len(versions) == 2
    finally:
        get_settings.cache_clear()


def test_import_refuses_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["problems", "import", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def _kjudge(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJUDGE_")}
    env["KJUDGE_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "kjudge", *args], env=env, capture_output=True, text=True, timeout=600
    )


def test_import_on_a_fresh_home_creates_the_database_and_resumes(tmp_path: Path) -> None:
    """A newcomer's first command: no `kjudge db upgrade`, no server, an empty KJUDGE_HOME."""
    home = tmp_path / "home"  # does not exist yet
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "relu.py").write_text(GOOD)
    (folder / "fused.py").write_text(FUSED)

    r = _kjudge("problems", "import", str(folder), home=home)
    assert r.returncode == 0, r.stderr
    assert "2 accepted (stored 2 new, 0 already present), 0 refused" in r.stderr
    engine = sa.create_engine(f"sqlite:///{home / 'kjudge.db'}")
    with engine.connect() as conn:
        names = conn.execute(sa.text("SELECT name FROM problems WHERE builtin = 0 ORDER BY name")).scalars()
        assert list(names) == ["fused", "relu"]
    engine.dispose()

    # Run again (as after an interrupted import): stored problems are skipped, not re-validated.
    (folder / "bad.py").write_text(BAD)
    r = _kjudge("problems", "import", str(folder), home=home)
    assert r.returncode == 0, r.stderr
    assert "validating 1 problems" in r.stderr and "2 already stored, skipped" in r.stderr
    assert "2 accepted (stored 0 new, 2 already present), 1 refused" in r.stderr
    assert "\r" not in r.stderr  # no progress bar without a terminal


def test_import_checks_the_database_before_validating(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "kjudge.db").mkdir()  # a database path that cannot be opened as a file
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "relu.py").write_text(GOOD)
    r = _kjudge("problems", "import", str(folder), home=home)
    assert r.returncode == 1
    assert "cannot create or upgrade the database" in r.stderr
    assert "validating" not in r.stderr  # failed before the long work, not after it
