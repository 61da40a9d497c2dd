"""Per-key request rate limits: a fixed one-minute window.

In Redis when there is one (all API processes share the count), in-process otherwise (the
embedded default runs one API process). A Redis outage fails open: rate limiting must never be
the reason the judge stops accepting work.

A busy key far below its limit (an RL trainer with thousands a minute) should not pay a Redis
round trip, nor the thread hop that a blocking call needs, on every request: `try_hit` admits it
from the process's own estimate (the window's count as Redis last reported it plus what this
process admitted since), and a background flush adds those admissions to Redis every
FLUSH_INTERVAL_S. Only while the estimate stays under half the limit, and only for limits of at
least LOCAL_MIN_LIMIT a minute; otherwise `try_hit` returns None and the caller asks Redis with
`hit`, which counts exactly. The most other processes can over-admit is what they admitted in
one flush interval after the estimate crossed half the limit.
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
    def hit(self, key: str, limit: int, cost: int = 1) -> Decision:
        """Counts and decides; may block on I/O."""
        ...

    def try_hit(self, key: str, limit: int, cost: int = 1) -> Decision | None:
        """Counts and decides without blocking, or returns None (then call `hit`)."""
        ...


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

    def try_hit(self, key: str, limit: int, cost: int = 1) -> Decision:
        return self.hit(key, limit, cost)  # in memory: never blocks


LOCAL_MIN_LIMIT = 600
FLUSH_INTERVAL_S = 0.05


class RedisRateLimiter:
    def __init__(self, url: str, flush_interval_s: float = FLUSH_INTERVAL_S) -> None:
        import redis

        self._redis = redis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self._flush_interval_s = flush_interval_s
        self._lock = threading.Lock()
        self._known: dict[tuple[str, int], int] = {}  # the window's total as Redis last said
        self._pending: dict[tuple[str, int], int] = {}  # admitted here, not yet added in Redis
        self._flusher: threading.Thread | None = None

    @staticmethod
    def _name(key: str, window: int) -> str:
        return f"kjudge:ratelimit:{key}:{window}"

    def hit(self, key: str, limit: int, cost: int = 1) -> Decision:
        window, reset = _window(time.time())
        with self._lock:
            pending = self._pending.pop((key, window), 0)
        try:
            count = self._incr(key, window, cost + pending)
        except Exception as exc:  # noqa: BLE001 - fail open, see module docstring
            log.warning("rate limiter unavailable, allowing request: %s", exc)
            return Decision(True, limit, limit, reset)
        with self._lock:
            self._known[(key, window)] = max(count, self._known.get((key, window), 0))
        return Decision(count <= limit, limit, max(0, limit - count), reset)

    def try_hit(self, key: str, limit: int, cost: int = 1) -> Decision | None:
        if limit < LOCAL_MIN_LIMIT:
            return None
        window, reset = _window(time.time())
        slot = (key, window)
        with self._lock:
            estimate = self._known.get(slot, 0) + self._pending.get(slot, 0) + cost
            if estimate * 2 > limit:
                return None
            self._pending[slot] = self._pending.get(slot, 0) + cost
            if self._flusher is None or not self._flusher.is_alive():
                self._flusher = threading.Thread(
                    target=self._flush_forever, name="ratelimit-flush", daemon=True
                )
                self._flusher.start()
        return Decision(True, limit, limit - estimate, reset)

    def flush(self) -> None:
        """Adds this process's unreported admissions to Redis and learns the windows' totals."""
        with self._lock:
            pending, self._pending = self._pending, {}
            current = _window(time.time())[0]
            self._known = {slot: n for slot, n in self._known.items() if slot[1] >= current - 1}
        for (key, window), n in pending.items():
            try:
                count = self._incr(key, window, n)
            except Exception as exc:  # noqa: BLE001 - fail open: these admissions stay local
                log.warning("rate limiter unavailable, %d admissions not shared: %s", n, exc)
                continue
            with self._lock:
                self._known[(key, window)] = max(count, self._known.get((key, window), 0))

    def _incr(self, key: str, window: int, n: int) -> int:
        pipe = self._redis.pipeline(transaction=False)
        pipe.incrby(self._name(key, window), n)
        pipe.expire(self._name(key, window), WINDOW_S + 5)
        return int(pipe.execute()[0])

    def _flush_forever(self) -> None:
        while True:
            time.sleep(self._flush_interval_s)
            self.flush()
            with self._lock:
                if not self._pending and not self._known:
                    self._flusher = None
                    return


def make_rate_limiter(redis_url: str | None) -> RateLimiter:
    return RedisRateLimiter(redis_url) if redis_url else MemoryRateLimiter()
