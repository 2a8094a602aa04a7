"""docker-compose.yml: the services are there, and the web, worker and beat commands really start.

There is no Docker engine on the test machines, so the commands of the file are run as written,
from the repository root (the image's /app), with the compose environment pointed at the local
PostgreSQL and Redis.
"""

import base64
import http.client
import importlib.util
import json
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
SMOKE_DATABASE = "yardstick_compose_smoke"
STARTUP_TIMEOUT_SECONDS = 60
# What the operator would put in .env: the variables the file requires (${NAME:?...}).
OPERATOR_VARIABLES = {
    "SECRET_KEY": "compose-smoke-" + secrets.token_urlsafe(32),
    "POSTGRES_PASSWORD": "unused",
    "FLOWER_BASIC_AUTH": "operator:" + secrets.token_urlsafe(12),
    "METRICS_TOKEN": "compose-smoke-" + secrets.token_urlsafe(16),
}

_VARIABLE = re.compile(r"\$(?:(?P<escaped>\$)|\{(?P<name>\w+)(?:(?P<operator>:?[-?])(?P<argument>[^}]*))?\})")


def interpolate(text: str, variables: dict[str, str]) -> str:
    """Compose's variable substitution: ``$$``, ``${NAME}``, ``${NAME:-default}``, ``${NAME:?error}``."""

    def substitute(match: re.Match) -> str:
        if match["escaped"]:
            return "$"
        name, operator, argument = match["name"], match["operator"], match["argument"]
        value = variables.get(name)
        missing = value is None or (value == "" and operator is not None and operator.startswith(":"))
        if not missing:
            return value
        if operator is not None and operator.endswith("?"):
            raise ValueError(f"docker-compose.yml requires {name}: {argument}")
        return argument if operator is not None else ""

    return _VARIABLE.sub(substitute, text)


def interpolated(node, variables: dict[str, str]):
    if isinstance(node, str):
        return interpolate(node, variables)
    if isinstance(node, dict):
        return {key: interpolated(value, variables) for key, value in node.items()}
    if isinstance(node, list):
        return [interpolated(value, variables) for value in node]
    return node


@pytest.fixture(scope="module")
def compose() -> dict:
    return interpolated(yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text()), OPERATOR_VARIABLES)


def test_it_defines_web_worker_beat_postgres_and_redis(compose):
    assert sorted(compose["services"]) == ["beat", "flower", "nginx", "postgres", "redis", "web", "worker"]
    assert compose["services"]["postgres"]["image"] == "postgres:16"
    assert compose["services"]["redis"]["image"] == "redis:7"


def test_worker_and_beat_reuse_the_web_service_definition(compose):
    app = compose["x-app"]
    for name in ["web", "worker", "beat"]:
        service = compose["services"][name]
        assert {key: service[key] for key in app} == app, name


def test_nginx_publishes_its_port_and_passes_requests_to_the_port_gunicorn_binds(compose):
    web, nginx = compose["services"]["web"], compose["services"]["nginx"]
    assert "ports" not in web  # reached through nginx only
    assert [mapping.split(":")[-1] for mapping in nginx["ports"]] == [nginx["environment"]["NGINX_PORT"]]
    assert nginx["environment"]["YARDSTICK_WEB"] == f"web:{web['environment']['PORT']}"
    template, mounted = nginx["volumes"][0].split(":")[:2]
    assert (REPO_ROOT / template).is_file() and mounted.startswith("/etc/nginx/templates/")


def test_it_refuses_to_start_without_a_secret_key_and_turns_debug_off(compose):
    with pytest.raises(ValueError, match="requires SECRET_KEY"):
        interpolated(
            yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text()), {"POSTGRES_PASSWORD": "x"}
        )
    assert compose["x-app"]["environment"]["DEBUG"] == "false"


@pytest.fixture
def smoke_database_url(postgres_server_kwargs) -> str:
    """A throwaway database on the configured server, never the one pytest-django uses."""
    with psycopg.connect(**postgres_server_kwargs, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {SMOKE_DATABASE} WITH (FORCE)")
        connection.execute(f"CREATE DATABASE {SMOKE_DATABASE}")
    yield urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{SMOKE_DATABASE}").geturl()
    with psycopg.connect(**postgres_server_kwargs, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {SMOKE_DATABASE} WITH (FORCE)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Processes:
    """Processes started in their own process group, each logging to a file; all killed at the end."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        with open(self.log_path(name), "wb") as log:
            self.running[name] = subprocess.Popen(
                argv, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def log_path(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def log(self, name: str) -> str:
        return self.log_path(name).read_text(errors="replace")

    def wait_for(self, what: str, condition):
        """Polls ``condition`` until it returns something true; fails early when a process exits."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            result = condition()
            if result:
                return result
            for name, process in self.running.items():
                if process.poll() is not None:
                    pytest.fail(f"{name} exited with {process.returncode} before {what}:\n{self.log(name)}")
            time.sleep(0.25)
        logs = "\n".join(f"--- {name}\n{self.log(name)}" for name in self.running)
        pytest.fail(f"no {what} after {STARTUP_TIMEOUT_SECONDS} s:\n{logs}")

    def stop_all(self) -> None:
        for process in self.running.values():
            _signal_group(process, signal.SIGTERM)
        for process in self.running.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
            # The group may hold children (gunicorn or Celery pool processes) that outlived their parent.
            _signal_group(process, signal.SIGKILL)
            process.wait()


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


@pytest.fixture
def processes(tmp_path):
    started = Processes(log_dir=tmp_path)
    yield started
    started.stop_all()


def healthz(port: int) -> tuple[int, dict | str] | None:
    """(status, JSON body) of GET /healthz/, or None while it does not answer yet: nothing listens on
    the port, or gunicorn accepted the connection but answered after the timeout (a busy machine)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz/", timeout=5) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")
    except (urllib.error.URLError, ConnectionError, TimeoutError, http.client.HTTPException):
        return None


def ping(node: str, env: dict[str, str]) -> dict | None:
    """The worker's answer to ``celery inspect ping``, or None while it does not answer (in time)."""
    argv = [str(VENV_BIN / "celery"), *"-A config inspect ping --json --timeout 2".split(), "-d", node]
    try:
        result = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return None
    if result.returncode != 0:
        return None
    try:
        return json.loads(result.stdout)
    except ValueError:  # cut short
        return None


def test_web_worker_and_beat_start_with_their_compose_commands(
    compose, smoke_database_url, redis_url, processes, tmp_path
):
    port = free_port()
    node = f"compose-smoke-{secrets.token_hex(4)}@yardstick"
    data_dir = tmp_path / "var"
    data_dir.mkdir()
    base_env = {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(REPO_ROOT),  # as the image's PYTHONPATH=/app
        "PYTHONUNBUFFERED": "1",
    }
    local_services = {
        "DATABASE_URL": smoke_database_url,
        "REDIS_URL": redis_url,
        "CELERY_BROKER_URL": os.environ.get("CELERY_BROKER_URL") or redis_url,
        "YARDSTICK_DATA_DIR": str(data_dir),
        "STATIC_ROOT": str(tmp_path / "staticfiles"),
        "GUNICORN_CMD_ARGS": f"--bind=127.0.0.1:{port}",  # a free local port instead of 0.0.0.0:$PORT
        "WEB_CONCURRENCY": "1",
        "CELERY_WORKER_HOSTNAME": node,  # read by `celery worker` like --hostname
        "CELERY_WORKER_CONCURRENCY": "1",
        "METRICS_DIR": str(tmp_path / "metrics"),  # the metrics volume
    }
    env = {**base_env, **{k: str(v) for k, v in compose["x-app"]["environment"].items()}, **local_services}

    for name in ["web", "worker", "beat"]:
        processes.start(name, shlex.split(compose["services"][name]["command"]), env)

    status, body = processes.wait_for("answer on /healthz/", lambda: healthz(port))
    sweep = body.pop("sweep")  # with a broker: when the ballots sweep last ran (beat or the worker)
    assert (status, body, sweep["late"]) == (200, {"status": "ok", "database": "postgresql"}, False)
    processes.wait_for(  # config/gunicorn.conf.py's post_worker_init ran in the worker
        "the web worker froze its start-up objects",
        lambda: "objects loaded at start out of the garbage collector" in processes.log("web"),
    )
    assert processes.wait_for(f"pong from {node}", lambda: ping(node, env)) == {node: {"ok": "pong"}}
    processes.wait_for("'beat: Starting' in the beat log", lambda: "beat: Starting" in processes.log("beat"))
    processes.wait_for(
        "beat schedule file in YARDSTICK_DATA_DIR", lambda: list(data_dir.glob("celerybeat-schedule*"))
    )
    figures = scrape(port, OPERATOR_VARIABLES["METRICS_TOKEN"])
    assert figures[("yardstick_queue_lag_known", (("queue", "celery"),))] == 1.0
    assert figures[("yardstick_database_up", ())] == 1.0
    assert (
        figures[("yardstick_request_duration_seconds_count", (("method", "GET"), ("view", "health")))] >= 1
    )  # observed by a gunicorn worker, read from the metrics directory


def scrape(port: int, token: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def flower_page(port: int, credentials: str) -> tuple[int, str] | None:
    """(status, body) of Flower's workers page, or None while it does not answer yet."""
    authorization = "Basic " + base64.b64encode(credentials.encode()).decode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/workers", headers={"Authorization": authorization}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, ""
    except (urllib.error.URLError, ConnectionError, TimeoutError, http.client.HTTPException):
        return None


def test_flower_starts_with_its_compose_command_and_asks_for_its_password(
    compose, redis_url, processes, tmp_path
):
    # The image runs Flower's `celery flower`; here the monitoring extra's, with the same command and
    # environment, pointed at the local Redis.
    if importlib.util.find_spec("flower") is None:
        pytest.fail("Flower is not installed: pip install -e '.[monitoring]' (.ci/run installs it)")
    flower = compose["services"]["flower"]
    port = free_port()
    env = {
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "LANG": "C.UTF-8",
        **{k: str(v) for k, v in flower["environment"].items()},
        "CELERY_BROKER_URL": redis_url,
        "FLOWER_PORT": str(port),  # read by Flower like --port; the command's --port=5555 is the container's
        "FLOWER_ADDRESS": "127.0.0.1",
    }
    argv = [arg for arg in shlex.split(flower["command"]) if not arg.startswith("--port=")]
    processes.start("flower", argv, env)

    status, body = processes.wait_for(
        "Flower's workers page", lambda: flower_page(port, env["FLOWER_BASIC_AUTH"])
    )
    assert status == 200
    assert "Workers" in body
    assert flower_page(port, "operator:wrong") == (401, "")
    assert flower["ports"] == ["127.0.0.1:5555:5555"]
