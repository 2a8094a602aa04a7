"""Django's Redis cache, with one Redis client per connection pool instead of one per operation.

``django.core.cache.backends.redis.RedisCacheClient.get_client`` builds a new ``redis.Redis`` for every
``get`` and ``set``; each one fills its table of about 170 response callbacks. The rate limits read and
write the cache twice per vote each, and ``benchmarks/profile_vote_request.py`` found those
constructions to be about a sixth of a vote's CPU in the web process. A ``redis.Redis`` is safe to share
between threads (it takes a connection from its pool for each command), and the pools are the ones
Django already keeps, so reusing the client changes nothing but the cost.
"""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class ReusingRedisCacheClient(RedisCacheClient):
    """One ``redis.Redis`` per pool, made on first use."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients: dict[int, object] = {}

    def get_client(self, key=None, *, write=False):
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients.setdefault(id(pool), self._client(connection_pool=pool))
        return client


class RedisCache(DjangoRedisCache):
    """``CACHES`` backend ``common.cache.RedisCache``: Django's, with ``ReusingRedisCacheClient``."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = ReusingRedisCacheClient
