"""API keys, scopes, quotas and rate limits: 401 / 403 / 429 answers that say what to do."""

from __future__ import annotations

import time

import sqlalchemy as sa
from fastapi.testclient import TestClient

from api.app import create_app
from api.auth import hash_key, revoke_key
from db.models import ApiKey
from tests.api.conftest import LOOPBACK, make_settings, new_key, submission


def test_keys_are_stored_hashed(db):
    secret = new_key(db, name="hashed")
    row = db.scalars(sa.select(ApiKey).where(ApiKey.name == "hashed")).one()
    assert row.key_hash == hash_key(secret) and secret not in row.key_hash and secret.startswith("kj_")


def test_missing_and_wrong_keys_are_401(app):
    with TestClient(app, client=LOOPBACK) as c:
        r = c.post("/v1/submissions", json=submission())
        assert r.status_code == 401 and r.json()["error"]["code"] == "missing_api_key"
        assert "kjudge keys create" in r.json()["error"]["message"]
        r = c.get("/v1/submissions", headers={"Authorization": "Bearer kj_nope"})
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        assert c.get("/healthz").status_code == 200  # health needs no key


def test_revoked_key_is_401_within_the_cache_time(pg_url, redis_url, tmp_path, db):
    app = create_app(make_settings(pg_url, redis_url, tmp_path, api_key_cache_s=0.5), startup=False)
    secret = new_key(db, name="soon-revoked")
    key_id = db.scalars(sa.select(ApiKey.id).where(ApiKey.name == "soon-revoked")).one()
    with TestClient(app, client=LOOPBACK, headers={"X-API-Key": secret}) as c:
        assert c.get("/v1/submissions").status_code == 200
        assert revoke_key(db, key_id)
        db.commit()
        time.sleep(0.6)
        assert c.get("/v1/submissions").status_code == 401


def test_missing_scope_is_403(app, db):
    reader = new_key(db, ["read"], name="reader")
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {reader}"}) as c:
        assert c.get("/v1/submissions").status_code == 200
        r = c.post("/v1/submissions", json=submission())
        assert (
            r.status_code == 403
            and r.json()["error"]["code"] == "missing_scope"
            and "'submit'" in r.json()["error"]["message"]
        )
        r = c.post("/v1/problems", json={"name": "x", "source": "y"})
        assert r.status_code == 403 and "problems:write" in r.json()["error"]["message"]


def test_quota_is_403_once_used_up(app, db):
    secret = new_key(db, name="quota", quota=3)
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {secret}"}) as c:
        for i in range(2):
            assert c.post("/v1/submissions", json=submission(source=f"// {i}\n")).status_code == 202
        r = c.post("/v1/batches", json={"submissions": [submission(), submission(source="// b\n")]})
        assert r.status_code == 403 and r.json()["error"]["code"] == "quota_exceeded"
        assert "quota is 3" in r.json()["error"]["message"]
        assert c.post("/v1/submissions", json=submission(source="// last\n")).status_code == 202
        assert c.post("/v1/submissions", json=submission(source="// over\n")).status_code == 403
    db.rollback()
    assert db.scalars(sa.select(ApiKey.used).where(ApiKey.name == "quota")).one() == 3


def _clear_of_window_edge() -> None:
    """Rate windows are whole minutes; start a few requests well inside one."""
    if time.time() % 60 > 57:
        time.sleep(60 - time.time() % 60 + 0.1)


def test_rate_limit_is_429_with_retry_after(app, db):
    _clear_of_window_edge()
    secret = new_key(db, name="slow", rate_limit_per_min=3)
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {secret}"}) as c:
        answers = [c.get("/v1/submissions") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[0].headers["X-RateLimit-Remaining"] == "2"
    last = answers[3]
    assert last.json()["error"]["code"] == "rate_limited" and 0 < int(last.headers["Retry-After"]) <= 61


def test_rate_limit_is_shared_through_redis_across_app_processes(settings, db):
    secret = new_key(db, name="shared", rate_limit_per_min=2)
    _clear_of_window_edge()
    apps = [create_app(settings, startup=False), create_app(settings, startup=False)]
    codes = []
    for i in range(3):
        with TestClient(apps[i % 2], client=LOOPBACK, headers={"Authorization": f"Bearer {secret}"}) as c:
            codes.append(c.get("/v1/submissions").status_code)
    assert codes == [200, 200, 429]


def test_without_keys_loopback_only(pg_url, redis_url, tmp_path, db, rds):
    app = create_app(make_settings(pg_url, redis_url, tmp_path, api_keys_required=False), startup=False)
    with TestClient(app, client=LOOPBACK) as c:
        assert c.post("/v1/submissions", json=submission()).status_code == 202
    with TestClient(app, client=("10.1.2.3", 4000)) as c:
        r = c.get("/v1/submissions")
        assert r.status_code == 403 and r.json()["error"]["code"] == "loopback_only"
    # A key still works (and is rate-limited) when keys are optional.
    secret = new_key(db, name="optional", rate_limit_per_min=1)
    _clear_of_window_edge()
    with TestClient(app, client=("10.1.2.3", 4000), headers={"Authorization": f"Bearer {secret}"}) as c:
        assert [c.get("/v1/submissions").status_code for _ in range(2)] == [200, 429]


def test_a_busy_key_far_below_its_limit_is_counted_locally_and_shared_by_the_flush(redis_url, rds):
    """Limits of LOCAL_MIN_LIMIT and more are admitted from the process's estimate (no Redis
    round trip) while under half the limit; the flush adds them to Redis, where every process
    sees them, and past half the limit each request asks Redis."""
    from api.ratelimit import LOCAL_MIN_LIMIT, RedisRateLimiter

    _clear_of_window_edge()
    limit = LOCAL_MIN_LIMIT
    # No background flush during the test: the flush below is the only one.
    ours, theirs = RedisRateLimiter(redis_url, flush_interval_s=3600), RedisRateLimiter(redis_url)
    admitted = [ours.try_hit("busy", limit) for _ in range(limit // 2)]
    assert all(d is not None and d.allowed for d in admitted)
    assert not rds.keys("kjudge:ratelimit:busy:*")  # nothing sent yet
    assert ours.try_hit("busy", limit) is None  # over half: the caller must ask Redis
    ours.flush()
    (name,) = rds.keys("kjudge:ratelimit:busy:*")
    assert int(rds.get(name)) == limit // 2
    # Another process asking Redis counts ours too; a small limit never takes the local path.
    assert theirs.hit("busy", limit).remaining == limit - limit // 2 - 1
    assert theirs.try_hit("busy-small", 10) is None
