"""The CLI's live status line: drawn on a terminal, silent otherwise."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

from kjudge.progress import StatusLine

REPO = Path(__file__).resolve().parent.parent


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_status_line_draws_transitions_with_elapsed_seconds() -> None:
    out = _Tty()
    with StatusLine(out, tick_s=0.05) as line:
        for status in ("queued", "queued", "compiling", "running", "done"):
            line.update(status)
        time.sleep(0.15)  # the ticker redraws the elapsed seconds meanwhile
    text = out.getvalue()
    assert "queued → compiling → running → done  0 s" in text
    assert text.count("queued") > 1 and text.endswith("\n")  # redrawn in place, then a newline


def test_status_line_is_silent_without_a_terminal_or_when_disabled() -> None:
    for stream, enabled in ((io.StringIO(), None), (_Tty(), False)):
        with StatusLine(stream, enabled=enabled, tick_s=0.01) as line:
            line.update("queued")
            line.update("done")
            time.sleep(0.05)
        assert stream.getvalue() == ""


def test_kjudge_eval_prints_no_status_into_a_pipe(tmp_path: Path) -> None:
    """--json output stays parseable: no carriage returns or status text in stdout or stderr.
    (A Triton candidate: on the CPU it runs in Triton's interpreter, with no C++ build.)"""
    env = {**os.environ, "PYTHONPATH": str(REPO), "KJUDGE_HOME": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-m", "kjudge", "eval", "--problem", str(REPO / "examples/relu/problem.py"),
         "--kernel", str(REPO / "examples/relu/relu_triton.py"), "--device", "cpu", "--json",
         "--no-timing", "--no-baselines", "--trials", "1"],
        capture_output=True, text=True, env=env, timeout=900, cwd=REPO,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "→" not in r.stderr and "\r" not in r.stderr and "→" not in r.stdout
    assert '"verdict"' in r.stdout
