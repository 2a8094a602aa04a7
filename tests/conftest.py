"""Shared fixtures and the rules for integration tests.

A test marked ``integration`` needs the real PostgreSQL (``DATABASE_URL``) and Redis (``REDIS_URL``):

- a service that is not configured (the embedded default: SQLite, eager Celery) skips the test, with the reason;
- a service that is configured but unreachable skips it locally and fails it when ``CI=true``;
- with ``YARDSTICK_REQUIRE_INTEGRATION=1`` (the full-stack run of ``.ci/run``) a skipped integration test
  is a failure, and so is a run in which no integration test passed.

Tests that need only one of the services request the ``postgres_required`` or ``redis_required`` fixture
(or ``postgres_server_kwargs`` / ``redis_url``, which require theirs and say how to connect).
"""

import functools
import os

import environ
import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # PBKDF2 at its production cost takes most of a second per password; tests need the hashes, not the cost.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def celery_joins_allowed():
    """Each test starts with Celery's "a join would block" flag cleared.

    An eager ``apply_async`` sets that flag, which is one for the whole process, for the task's run and
    then puts back the value it found. When two threads run eager tasks at once (the last votes of a
    ballot, each asking for its close), the second finds the first's value and puts it back last, so
    the flag stays set, and every later ``AsyncResult.get()`` in the process refuses to wait. The
    platform never waits on a result; tests do.
    """
    from celery._state import _set_task_join_will_block

    _set_task_join_will_block(False)
    yield


@pytest.fixture(autouse=True)
def empty_cache():
    # Rate-limit counts and failed logins live in the cache: each test starts with none.
    from django.core.cache import cache

    from common import throttling

    throttling._cache_down_until = 0.0  # a cache failure of an earlier test turns no limit off here
    cache.clear()
    yield


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def postgres_connection_kwargs() -> dict:
    """Connection arguments for psycopg, from ``DATABASE_URL`` as the settings read it."""
    config = environ.Env.db_url_config(os.environ["DATABASE_URL"])
    kwargs = {"dbname": config["NAME"], "host": config["HOST"], "port": config["PORT"]}
    kwargs.update({"user": config["USER"], "password": config["PASSWORD"]})
    return {key: value for key, value in kwargs.items() if value not in ("", None)}


@functools.cache
def postgres_problem() -> tuple[bool, str | None]:
    """(configured, what is wrong) for PostgreSQL; what is wrong is None when it can be used."""
    if not os.environ.get("DATABASE_URL"):
        return (
            False,
            "DATABASE_URL is not set (embedded SQLite run); set DATABASE_URL=postgres://... to run it",
        )
    if environ.Env.db_url_config(os.environ["DATABASE_URL"])["ENGINE"] != "django.db.backends.postgresql":
        return False, "DATABASE_URL does not point at PostgreSQL"
    import psycopg

    kwargs = postgres_connection_kwargs()
    try:
        psycopg.connect(**kwargs, connect_timeout=5).close()
    except psycopg.Error as exc:
        return True, f"PostgreSQL at {kwargs.get('host')}:{kwargs.get('port')} is unreachable: {exc}"
    return True, None


@functools.cache
def redis_problem() -> tuple[bool, str | None]:
    """(configured, what is wrong) for Redis; what is wrong is None when it can be used."""
    url = os.environ.get("REDIS_URL")
    if not url:
        return False, "REDIS_URL is not set (embedded run, eager Celery); set REDIS_URL=redis://... to run it"
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        address = "{host}:{port}".format(**client.connection_pool.connection_kwargs)  # no password in logs
        return True, f"Redis at {address} is unreachable: {exc}"
    return True, None


def require(service: str, configured: bool, problem: str | None) -> None:
    if problem is None:
        return
    if configured and env_flag("CI"):
        pytest.fail(f"{service} is configured but unusable with CI=true: {problem}", pytrace=False)
    pytest.skip(f"needs {service}: {problem}")


@pytest.fixture
def postgres_required():
    require("PostgreSQL", *postgres_problem())


@pytest.fixture
def redis_required():
    require("Redis", *redis_problem())


@pytest.fixture
def postgres_server_kwargs(postgres_required) -> dict:
    """psycopg connection arguments for the configured PostgreSQL (its database is DATABASE_URL's)."""
    return postgres_connection_kwargs()


@pytest.fixture
def redis_url(redis_required) -> str:
    return os.environ["REDIS_URL"]


def pytest_runtest_setup(item):
    # Runs before the fixtures are set up, so an absent service skips the test before the
    # test database is created on it.
    if item.get_closest_marker("integration"):
        require("PostgreSQL", *postgres_problem())
        require("Redis", *redis_problem())


# The only reasons a test may skip: a service, Chromium or the examples extra that this machine does not
# have (locally). Anything else that skips (a package missing, say) is a failure,
# and with CI=true every skip is: CI installs everything, so a skip there is a test that did not run.
SKIPPABLE_MARKERS = ("integration", "browser", "examples")


def _skip_reason(report) -> str:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason.removeprefix("Skipped: ")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if not report.skipped or hasattr(report, "wasxfail"):
        return report
    skippable = [name for name in SKIPPABLE_MARKERS if item.get_closest_marker(name)]
    if not skippable:
        report.outcome = "failed"
        report.longrepr = (
            f"skipped, but only tests marked {', '.join(SKIPPABLE_MARKERS)} may skip: {_skip_reason(report)}"
        )
    elif env_flag("CI") or ("integration" in skippable and env_flag("YARDSTICK_REQUIRE_INTEGRATION")):
        report.outcome = "failed"
        report.longrepr = f"{skippable[0]} test skipped with CI=true (CI must run it): {_skip_reason(report)}"
    return report


class IntegrationRunCheck:
    """Fails a run in which no integration test passed (registered with YARDSTICK_REQUIRE_INTEGRATION=1)."""

    def __init__(self):
        self.integration_tests_passed = 0

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.passed and "integration" in report.keywords:
            self.integration_tests_passed += 1

    def pytest_sessionfinish(self, session):
        if session.config.option.collectonly or self.integration_tests_passed > 0:
            return
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("YARDSTICK_REQUIRE_INTEGRATION=1 but no integration test passed.", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_configure(config):
    if env_flag("YARDSTICK_REQUIRE_INTEGRATION"):
        config.pluginmanager.register(IntegrationRunCheck(), "yardstick-integration-run-check")


@pytest.fixture(autouse=True)
def eager_celery_outside_integration_tests(request):
    """Unit tests run tasks in-process even when a broker is configured (the full-stack CI run);
    only integration tests send them to a real worker."""
    from config.celery import app

    if request.node.get_closest_marker("integration"):
        yield
        return
    previous = app.conf.task_always_eager, app.conf.task_eager_propagates
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = previous


@pytest.fixture
def rates(settings):
    # Sets the vote scope's two annotator limits ("5/min", or None for off) for one test.
    def set_rates(participant, address):
        framework = dict(settings.REST_FRAMEWORK)
        framework["DEFAULT_THROTTLE_RATES"] = {
            **framework["DEFAULT_THROTTLE_RATES"],
            "vote.participant": participant,
            "vote.address": address,
        }
        settings.REST_FRAMEWORK = framework

    return set_rates
