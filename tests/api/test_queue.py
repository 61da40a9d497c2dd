"""The API's direct Redis publish writes what Celery's own publish through kombu writes."""

from __future__ import annotations

import json
from typing import Any

import redis

from core.celery_config import make_app
from core.publish import CeleryEnqueuer, RedisEnqueuer, make_enqueuer
from core.settings import Settings


def _pushed(rds: redis.Redis, queue: str) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in rds.lrange(queue, 0, -1)]


def test_direct_publish_writes_the_message_kombu_writes(redis_url: str, rds: redis.Redis, tmp_path) -> None:
    app = make_app(Settings(home=tmp_path, broker_url=redis_url))
    assert CeleryEnqueuer(app).enqueue([("sub-1", "eval.cpu")]) == 1
    assert RedisEnqueuer(app, redis_url).enqueue([("sub-1", "eval.cpu"), ("sub-2", "eval.cuda")]) == 2
    (direct, through_kombu) = _pushed(rds, "eval.cpu")  # LPUSH: newest first
    for message in (direct, through_kombu):
        # Fresh uuids per message, as Celery and kombu make them: the task id and the delivery tag.
        task_id = message["headers"]["id"]
        assert message["headers"]["root_id"] == message["properties"]["correlation_id"] == task_id
        for where, key in (("headers", "id"), ("headers", "root_id"), ("properties", "correlation_id")):
            message[where][key] = "<task id>"
        message["properties"].pop("delivery_tag")
    assert direct == through_kombu
    assert direct["headers"]["argsrepr"] == "['sub-1']"
    (other,) = _pushed(rds, "eval.cuda")
    assert other["properties"]["delivery_info"] == {"exchange": "", "routing_key": "eval.cuda"}


def test_the_direct_publish_is_used_only_for_a_plain_redis_layout(redis_url: str, tmp_path) -> None:
    assert isinstance(make_enqueuer(Settings(home=tmp_path, broker_url=redis_url)), RedisEnqueuer)
    assert not RedisEnqueuer.applies(redis_url, {"global_keyprefix": "kj:"})  # another key layout
    assert isinstance(make_enqueuer(Settings(home=tmp_path, broker_url="memory://")), CeleryEnqueuer)


def test_a_broker_that_is_down_sends_nothing_and_says_so(tmp_path) -> None:
    app = make_app(Settings(home=tmp_path, broker_url="redis://127.0.0.1:1/0"))
    assert RedisEnqueuer(app, "redis://127.0.0.1:1/0").enqueue([("sub-1", "eval.cpu")]) == 0
