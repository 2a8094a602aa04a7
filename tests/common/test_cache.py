"""common.cache.RedisCache: Django's Redis cache with one client per pool, against the real Redis."""

import threading
import uuid

import pytest
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache

from common.cache import RedisCache

pytestmark = pytest.mark.integration


@pytest.fixture
def caches(redis_url):
    prefix = f"test-cache-{uuid.uuid4().hex}"
    ours = RedisCache(redis_url, {"KEY_PREFIX": prefix})
    djangos = DjangoRedisCache(redis_url, {"KEY_PREFIX": prefix})
    yield ours, djangos
    ours.clear()


def test_reads_and_writes_what_djangos_backend_reads_and_writes(caches):
    ours, djangos = caches
    ours.set("history", [3.5, 2.25, 1.0], 30)
    assert djangos.get("history") == [3.5, 2.25, 1.0]
    djangos.set("count", 41, 30)
    assert ours.incr("count") == 42
    assert ours.add("count", 0) is False
    assert ours.get_many(["history", "count", "absent"]) == {"history": [3.5, 2.25, 1.0], "count": 42}
    assert ours.delete("history") is True
    assert djangos.get("history", "gone") == "gone"


def test_one_client_serves_every_operation_and_thread(caches):
    ours, _ = caches
    client = ours._cache.get_client(write=True)
    assert ours._cache.get_client(write=False) is client  # one server: reads and writes share a pool

    errors = []

    def hammer(number: int) -> None:
        try:
            for step in range(50):
                ours.set(f"key-{number}", step, 30)
                assert ours.get(f"key-{number}") == step
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=hammer, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert ours._cache.get_client(write=True) is client
    assert [ours.get(f"key-{number}") for number in range(8)] == [49] * 8
