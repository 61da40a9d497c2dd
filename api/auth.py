"""API keys: creation (secret shown once, stored as sha256), lookup, scopes.

A request carries its key as `Authorization: Bearer <key>` or `X-API-Key: <key>`. Without keys
(the embedded default, KJUDGE_API_KEYS_REQUIRED unset) the API answers loopback clients only.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
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
        key_id=key.id, name=key.name, scopes=frozenset(key.scopes or ()), rate_limit_per_min=limit
    )


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
