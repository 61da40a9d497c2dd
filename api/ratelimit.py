"""Per-key request rate limits: a fixed one-minute window.

In Redis when there is one (all API processes share the count), in-process otherwise (the
embedded default runs one API process). A Redis outage fails open: rate limiting must never be
the reason the judge stops accepting work.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger("kjudge.api")

WINDOW_S = 60


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_s: int  # seconds until the window resets


class RateLimiter(Protocol):
    def hit(self, key: str, limit: int, cost: int = 1) -> Decision: ...


def _window(now: float) -> tuple[int, int]:
    window = int(now // WINDOW_S)
    reset = int((window + 1) * WINDOW_S - now) + 1
    return window, reset


class MemoryRateLimiter:
    def __init__(self) -> None:
        self._counts: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def hit(self, key: str, limit: int, cost: int = 1) -> Decision:
        window, reset = _window(time.time())
        with self._lock:
            if len(self._counts) > 10_000:  # drop old windows
                self._counts = {k: v for k, v in self._counts.items() if k[1] == window}
            count = self._counts.get((key, window), 0) + cost
            self._counts[(key, window)] = count
        return Decision(count <= limit, limit, max(0, limit - count), reset)


class RedisRateLimiter:
    def __init__(self, url: str) -> None:
        import redis

        self._redis = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)

    def hit(self, key: str, limit: int, cost: int = 1) -> Decision:
        window, reset = _window(time.time())
        name = f"kjudge:ratelimit:{key}:{window}"
        try:
            pipe = self._redis.pipeline(transaction=False)
            pipe.incrby(name, cost)
            pipe.expire(name, WINDOW_S + 5)
            count = int(pipe.execute()[0])
        except Exception as exc:  # noqa: BLE001 - fail open, see module docstring
            log.warning("rate limiter unavailable, allowing request: %s", exc)
            return Decision(True, limit, limit, reset)
        return Decision(count <= limit, limit, max(0, limit - count), reset)


def make_rate_limiter(redis_url: str | None) -> RateLimiter:
    return RedisRateLimiter(redis_url) if redis_url else MemoryRateLimiter()
