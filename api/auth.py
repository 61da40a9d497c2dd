"""API keys: creation (secret shown once, stored as sha256), lookup, scopes.

A request carries its key as `Authorization: Bearer <key>` or `X-API-Key: <key>`. Without keys
(the embedded default, KJUDGE_API_KEYS_REQUIRED unset) the API answers loopback clients only.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Session

from db.models import ApiKey
from db.types import utcnow

KEY_PREFIX = "kj_"
SCOPES = ("submit", "read", "problems:write", "admin")
DEFAULT_SCOPES = ("submit", "read")


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def generate_secret() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Principal:
    """Who is calling: an API key, or the anonymous loopback user of the embedded default."""

    key_id: str | None
    name: str
    scopes: frozenset[str] = field(default_factory=frozenset)
    rate_limit_per_min: int | None = None
    quota: int | None = None

    def has(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes


def anonymous(rate_limit_per_min: int | None) -> Principal:
    return Principal(
        key_id=None, name="anonymous", scopes=frozenset(SCOPES), rate_limit_per_min=rate_limit_per_min
    )


def create_key(
    session: Session,
    name: str,
    scopes: list[str] | None = None,
    rate_limit_per_min: int | None = None,
    quota: int | None = None,
) -> tuple[ApiKey, str]:
    """Stores a new key and returns it with its secret (the only time the secret exists)."""
    chosen = list(scopes) if scopes else list(DEFAULT_SCOPES)
    unknown = sorted(set(chosen) - set(SCOPES))
    if unknown:
        raise ValueError(f"unknown scope(s) {', '.join(unknown)}: choose from {', '.join(SCOPES)}")
    secret = generate_secret()
    key = ApiKey(
        name=name,
        key_hash=hash_key(secret),
        scopes=chosen,
        rate_limit_per_min=rate_limit_per_min,
        quota=quota,
    )
    session.add(key)
    session.flush()
    return key, secret


def lookup_key(session: Session, secret: str) -> ApiKey | None:
    """The live key for this secret, or None when unknown or revoked."""
    key = session.scalar(sa.select(ApiKey).where(ApiKey.key_hash == hash_key(secret)))
    if key is None or key.revoked_at is not None:
        return None
    return key


def revoke_key(session: Session, key_id: str, when: datetime | None = None) -> bool:
    res = session.execute(
        sa.update(ApiKey)
        .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=when or utcnow())
    )
    return bool(res.rowcount)


def principal_for(key: ApiKey, default_rate_limit: int) -> Principal:
    limit = key.rate_limit_per_min if key.rate_limit_per_min is not None else default_rate_limit
    return Principal(
        key_id=key.id,
        name=key.name,
        scopes=frozenset(key.scopes or ()),
        rate_limit_per_min=limit,
        quota=key.quota,
    )


class KeyCache:
    """Recently seen live keys, by secret hash, for `ttl_s` seconds.

    Saves a database round trip on every request of a busy key; a revoked key is refused at
    most `ttl_s` later (KJUDGE_API_KEY_CACHE_S; 0 disables the cache). Unknown keys are never
    cached, so a key works the moment it is created.
    """

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._entries: dict[str, tuple[float, Principal]] = {}
        self._lock = threading.Lock()

    def get(self, secret: str) -> Principal | None:
        if self.ttl_s <= 0:
            return None
        with self._lock:
            entry = self._entries.get(hash_key(secret))
        if entry is None or entry[0] < time.monotonic():
            return None
        return entry[1]

    def put(self, secret: str, principal: Principal) -> None:
        if self.ttl_s <= 0:
            return
        with self._lock:
            if len(self._entries) > 10_000:
                self._entries.clear()
            self._entries[hash_key(secret)] = (time.monotonic() + self.ttl_s, principal)


def is_loopback(host: str | None) -> bool:
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def secret_from_headers(authorization: str | None, x_api_key: str | None) -> str | None:
    if x_api_key:
        return x_api_key.strip()
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    return None
