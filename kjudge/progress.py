"""A one-line live status for long CLI commands: `queued → compiling → running → done  12 s`.

Shown only on a terminal (stderr is a TTY) and never under --json, so that pipes, logs and
scripts read exactly what they did before. A background thread refreshes the elapsed seconds.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO


class StatusLine:
    def __init__(
        self, stream: TextIO | None = None, *, enabled: bool | None = None, tick_s: float = 0.5
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = _isatty(self.stream) if enabled is None else enabled
        self.history: list[str] = []
        self.start = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._tick_s = tick_s
        self._thread: threading.Thread | None = None

    def __enter__(self) -> StatusLine:
        if self.enabled:
            self._thread = threading.Thread(target=self._ticker, name="kjudge-status", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def update(self, status: str) -> None:
        """Records a status (repeats are ignored) and redraws the line."""
        with self._lock:
            if not self.history or self.history[-1] != status:
                self.history.append(status)
        self._draw()

    def render(self) -> str:
        return f"{' → '.join(self.history)}  {time.monotonic() - self.start:.0f} s"

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.enabled and self.history:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False

    def _draw(self) -> None:
        if not self.enabled or not self.history:
            return
        with self._lock:
            self.stream.write("\r\x1b[K" + self.render())  # back to column 0, clear the line
            self.stream.flush()

    def _ticker(self) -> None:
        while not self._stop.wait(self._tick_s):
            self._draw()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
