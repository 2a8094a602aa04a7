"""config/gunicorn.conf.py: the web service's gunicorn settings and its worker hook."""

from __future__ import annotations

import gc
import logging
import runpy
import weakref
from pathlib import Path

import pytest

CONF = Path(__file__).resolve().parents[2] / "config" / "gunicorn.conf.py"


class _Worker:
    def __init__(self):
        self.messages: list[str] = []
        self.log = self

    def info(self, message, *args):
        self.messages.append(message % args)


@pytest.fixture
def conf(monkeypatch):
    def load(**environment):
        for name in ("WEB_CONCURRENCY", "WEB_THREADS", "PORT"):
            monkeypatch.delenv(name, raising=False)
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        return runpy.run_path(str(CONF))

    return load


def test_threads_choose_the_worker_class(conf):
    deployed = conf()
    assert (deployed["workers"], deployed["threads"]) == (2, 4)
    assert deployed["worker_class"] == "gthread"
    assert deployed["bind"] == "0.0.0.0:8000"
    single = conf(WEB_CONCURRENCY="3", WEB_THREADS="1", PORT="9000")
    assert (single["workers"], single["threads"], single["worker_class"]) == (3, 1, "sync")
    assert single["bind"] == "0.0.0.0:9000"


def test_the_worker_freezes_what_it_loaded_and_collects_garbage_first(conf):
    hook = conf()["post_worker_init"]
    assert gc.get_freeze_count() == 0

    class Cycle:  # garbage that only the collector frees: a reference cycle nobody holds
        pass

    cycle = Cycle()
    cycle.me = cycle
    garbage = weakref.ref(cycle)
    del cycle
    survivor = logging.getLogger("a logger made before the hook, alive after it")
    worker = _Worker()
    try:
        hook(worker)
        frozen = gc.get_freeze_count()
        # Django, REST framework, numpy and this test session: far more than a handful of objects.
        assert frozen > 10_000
        assert garbage() is None  # collected, not frozen for the life of the process
        assert worker.messages == [f"froze {frozen} objects loaded at start out of the garbage collector"]
        # What is frozen is out of every generation: a full collection no longer traverses it.
        assert not any(o is survivor for o in gc.get_objects())
    finally:
        gc.unfreeze()
    assert any(o is survivor for o in gc.get_objects())
