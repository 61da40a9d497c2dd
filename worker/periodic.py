"""A function called every few seconds on a daemon thread for the length of a `with` block: what
keeps a claim's lease alive while the worker builds (worker/compile_stage.py) or evaluates
(worker/tasks.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Self


class Periodic:
    """Calls `tick` every `interval_s` seconds (the first call one interval in) until the block
    ends or `tick` returns False."""

    def __init__(self, tick: Callable[[], bool], interval_s: float, name: str) -> None:
        self._tick = tick
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self._interval) and self._tick():
            pass
