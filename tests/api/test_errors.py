"""Bad input and faults: every answer is a JSON error that says what is wrong, never a 500."""

from __future__ import annotations

import time

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from api.app import create_app
from db.models import Submission
from tests.api.conftest import LOOPBACK, make_settings, submission
from tests.api.tcp_proxy import TcpProxy


def _error(r, status: int, code: str) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert body["error"]["message"]
    return body["error"]["message"]


def test_malformed_json_is_400(client):
    r = client.post(
        "/v1/submissions", content=b'{"problem_id": ', headers={"Content-Type": "application/json"}
    )
    assert "not valid JSON" in _error(r, 400, "malformed_json")
    _error(client.post("/v1/submissions", content=b"problem=relu"), 400, "malformed_json")
    _error(client.post("/v1/submissions"), 400, "missing_body")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (submission(source=123), "source"),
        (submission(metadata=[1, 2]), "metadata"),
        (submission(reuse="perhaps"), "reuse"),
        (submission(entry="not an identifier"), "entry"),
        (submission(targte="cpu"), "targte"),
        ({"language": "cpp", "source": "x"}, "problem_id"),
        ([1, 2, 3], "body"),
    ],
)
def test_wrong_types_and_fields_are_422_naming_the_field(client, body, field):
    message = _error(client.post("/v1/submissions", json=body), 422, "invalid_request")
    assert field in message


def test_unknown_language_and_problem_are_404(client):
    msg = _error(client.post("/v1/submissions", json=submission(language="cobol")), 404, "unknown_language")
    assert "cpp" in msg and "kernelbench" in msg
    msg = _error(
        client.post("/v1/submissions", json=submission(problem_id="no_such")), 404, "unknown_problem"
    )
    assert "GET /v1/problems" in msg


def test_unknown_target_is_422(client):
    msg = _error(client.post("/v1/submissions", json=submission(target="tpu_v5")), 422, "unknown_target")
    assert "sm_90" in msg


def test_source_over_1_mib_is_413(client, db):
    big = "x" * ((1 << 20) + 1)
    assert "limit is 1048576" in _error(
        client.post("/v1/submissions", json=submission(source=big)), 413, "source_too_large"
    )
    assert (
        client.post("/v1/submissions", json=submission(source="/" * (1 << 20))).status_code == 202
    )  # exactly 1 MiB
    assert db.scalar(sa.select(sa.func.count()).select_from(Submission)) == 1


def test_oversized_body_is_413_before_parsing(pg_url, redis_url, tmp_path, db, key):
    app = create_app(make_settings(pg_url, redis_url, tmp_path, max_body_bytes=1000), startup=False)
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {key}"}) as c:
        _error(c.post("/v1/submissions", json=submission(source="y" * 2000)), 413, "body_too_large")


def test_unknown_endpoint_and_method(client):
    _error(client.get("/v2/nothing"), 404, "not_found")
    _error(client.delete("/v1/submissions"), 405, "method_not_allowed")


def test_database_down_is_503_and_recovers_by_itself(pg_url, redis_url, tmp_path, db, key, rds):
    """PostgreSQL "goes away" behind a proxy: writes answer 503 + Retry-After, readiness fails,
    and once it is back the same app serves again without a restart (pool pre-ping)."""
    import sqlalchemy.engine as sa_engine

    url = sa_engine.make_url(pg_url)
    proxy = TcpProxy(url.port or 5432)
    proxy.start()
    proxied = url.set(port=proxy.port).render_as_string(hide_password=False)
    app = create_app(make_settings(proxied, redis_url, tmp_path, db_connect_timeout_s=2), startup=False)
    try:
        with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {key}"}) as c:
            assert c.post("/v1/submissions", json=submission()).status_code == 202
            proxy.stop()
            r = c.post("/v1/submissions", json=submission(source="// down\n"))
            _error(r, 503, "database_unavailable")
            assert r.headers["Retry-After"].isdigit()
            _error(c.get("/v1/submissions"), 503, "database_unavailable")
            ready = c.get("/readyz")
            assert ready.status_code == 503 and ready.json()["checks"]["database"].startswith("unavailable")
            proxy.start()
            deadline = time.monotonic() + 10
            while (r := c.post("/v1/submissions", json=submission(source="// back\n"))).status_code != 202:
                assert time.monotonic() < deadline, r.text
                time.sleep(0.2)
            assert c.get("/readyz").status_code == 200
    finally:
        proxy.stop()
    db.rollback()
    assert db.scalar(sa.select(sa.func.count()).select_from(Submission)) == 2


def test_broker_down_still_accepts_and_leaves_the_row_queued(pg_url, tmp_path, db, key):
    """The row is committed before the enqueue; a failed enqueue is left to the reconciler."""
    dead_redis = "redis://127.0.0.1:1/0"
    app = create_app(make_settings(pg_url, dead_redis, tmp_path), startup=False)
    with TestClient(app, client=LOOPBACK, headers={"Authorization": f"Bearer {key}"}) as c:
        t0 = time.monotonic()
        r = c.post("/v1/submissions", json=submission())
        assert r.status_code == 202 and r.json()["status"] == "queued"
        assert time.monotonic() - t0 < 15
        ready = c.get("/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["broker"].startswith("unavailable")
    db.rollback()
    row = db.get(Submission, r.json()["id"])
    assert row is not None and row.status == "queued"
