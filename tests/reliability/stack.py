"""The full stack of one reliability run, on this machine, away from everything else.

Its own PostgreSQL cluster (``initdb`` into the run directory, port 5499), its own Redis (port 6390,
nothing saved), the ``web``, ``worker`` and ``beat`` commands of ``docker-compose.yml`` as written, and
Debian's nginx with the compose service's configuration in front of web (port 8099; gunicorn on the next
port), all on 127.0.0.1. The test databases (5432) and the shared Redis (6379) are never touched.
Everything started here is stopped by ``Stack.stop`` (also on Ctrl-C, and by the run's time limit).
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import re
import secrets
import shlex
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
DATABASE_NAME = "yardstick"
START_TIMEOUT_SECONDS = 90


class StackError(RuntimeError):
    """A part of the stack did not start or stop as it should."""


@dataclass
class StackConfig:
    postgres_port: int = 5499
    redis_port: int = 6390
    web_port: int = 8099  # where clients connect: nginx's, or gunicorn's without nginx
    nginx: bool = True  # in front of gunicorn, as docker-compose.yml deploys it
    web_workers: int = 4  # WEB_CONCURRENCY, as in docker-compose.yml
    worker_concurrency: int = 2  # processes per Celery worker (compose: one per CPU)
    sweep_seconds: float = 15.0  # the production default
    # Every THROTTLE_* rate: high but on, so that the rate limits still read and write the cache (Redis)
    # as in production; the load comes from one address and would otherwise be throttled. "off" for none.
    throttle_rate: str = "1000000/s"
    run_dir: Path | None = None
    keep: bool = False
    # Added to (or replacing) the environment of web, worker and beat: e.g. a gunicorn setting or a
    # database option the load benchmark compares (benchmarks/bench_load.py).
    environment: dict[str, str] = field(default_factory=dict)
    # Added to the cluster's postgresql.conf, as written (quote strings): e.g. pg_stat_statements.
    postgres_settings: dict[str, str] = field(default_factory=dict)


def postgres_bin_dir() -> Path:
    """Where initdb and pg_ctl are: $YARDSTICK_PG_BIN, else Debian's newest PostgreSQL, else the PATH."""
    if os.environ.get("YARDSTICK_PG_BIN"):
        return Path(os.environ["YARDSTICK_PG_BIN"])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).resolve().parent
    raise StackError("initdb not found: install PostgreSQL or set YARDSTICK_PG_BIN to its bin directory")


def throttle_variables() -> list[str]:
    """The THROTTLE_* variables config/settings.py reads (docs/operators.md, Configuration)."""
    source = (REPO_ROOT / "config" / "settings.py").read_text()
    return sorted(set(re.findall(r"[\"'](THROTTLE_[A-Z0-9_]+)[\"']", source)))


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def nginx_binary() -> str:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        raise StackError("nginx is not installed: apt-get install nginx")
    return nginx


def nginx_config(directory: Path, *, listen: str, web: str) -> Path:
    """An nginx configuration in ``directory`` that serves compose's server block
    (``config/nginx/yardstick.conf.template``, filled in as the nginx image fills it from its
    environment) on ``listen`` and passes requests to gunicorn at ``web``; its files stay in
    ``directory``. Returns the main configuration's path."""
    directory.mkdir(parents=True, exist_ok=True)
    template = (REPO_ROOT / "config" / "nginx" / "yardstick.conf.template").read_text()
    server = string.Template(template).safe_substitute(NGINX_PORT=listen, YARDSTICK_WEB=web)
    (directory / "yardstick.conf").write_text(server)
    temp_paths = "".join(
        f"    {kind}_temp_path {directory}/{kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    main = directory / "nginx.conf"
    main.write_text(
        f"user {pwd.getpwuid(os.geteuid()).pw_name};\nworker_processes auto;\npid {directory}/nginx.pid;\n"
        f"error_log {directory}/error.log;\nevents {{ worker_connections 4096; }}\n"
        f"http {{\n    access_log off;\n{temp_paths}    include {directory}/yardstick.conf;\n}}\n"
    )
    return main


def compose_commands() -> dict[str, list[str]]:
    """The web, worker and beat commands of docker-compose.yml, split as the shell would."""
    import yaml

    services = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())["services"]
    return {name: shlex.split(services[name]["command"]) for name in ("web", "worker", "beat")}


class Stack:
    """PostgreSQL, Redis, gunicorn, Celery workers and beat for one run; see the module docstring."""

    def __init__(self, config: StackConfig | None = None, log=print):
        self.config = config or StackConfig()
        self.log = log
        if self.config.run_dir is None:
            self.run_dir = Path(tempfile.mkdtemp(prefix="yardstick-reliability-"))
        else:
            self.run_dir = self.config.run_dir
            self.run_dir.mkdir(parents=True, exist_ok=True)
        self.run_dir.chmod(0o755)  # the PostgreSQL server may run as another user (below)
        self.pgdata = self.run_dir / "pgdata"
        self.processes: dict[str, subprocess.Popen] = {}
        self.postgres_running = False
        self.secret_key = secrets.token_urlsafe(48)
        self.pg_bin = postgres_bin_dir()
        self.commands = compose_commands()
        # initdb refuses to run as root: the cluster then belongs to the 'postgres' system user.
        self.pg_user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None

    # --- addresses ---

    @property
    def database_url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.config.postgres_port}/{DATABASE_NAME}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.config.redis_port}/0"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.config.web_port}"

    @property
    def gunicorn_port(self) -> int:
        return self.config.web_port + 1 if self.config.nginx else self.config.web_port

    def log_path(self, name: str) -> Path:
        return self.run_dir / f"{name}.log"

    def app_env(self, **extra: str) -> dict[str, str]:
        """The environment of web, worker and beat: docker-compose.yml's x-app, pointed at this stack."""
        env = {
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": os.environ.get("HOME", str(self.run_dir)),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(REPO_ROOT),
            "PYTHONUNBUFFERED": "1",
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "CELERY_BROKER_URL": self.redis_url,
            "SECRET_KEY": self.secret_key,
            "DEBUG": "false",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SITE_URL": self.base_url,
            "BEHIND_TLS_PROXY": "false",  # plain HTTP on 127.0.0.1, as docs/operators.md
            "SESSION_COOKIE_SECURE": "false",
            "CSRF_COOKIE_SECURE": "false",
            "LOG_LEVEL": "INFO",
            "YARDSTICK_DATA_DIR": str(self.run_dir / "var"),
            "STATIC_ROOT": str(self.run_dir / "staticfiles"),
            "SWEEP_SECONDS": str(self.config.sweep_seconds),
            "NUM_PROXIES": "1" if self.config.nginx else "0",
            "WEB_CONCURRENCY": str(self.config.web_workers),
            "CELERY_WORKER_CONCURRENCY": str(self.config.worker_concurrency),
        }
        for name in throttle_variables():
            env[name] = self.config.throttle_rate
        env.update(self.config.environment)
        env.update(extra)
        # gunicorn binds where nginx passes requests, whatever else the run asks of it.
        bind = f"--bind=127.0.0.1:{self.gunicorn_port}"
        env["GUNICORN_CMD_ARGS"] = f"{bind} {env.get('GUNICORN_CMD_ARGS', '')}".strip()
        return env

    # --- the whole stack ---

    def start(self, *, worker: bool = True, beat: bool = True) -> None:
        for port, what in (
            (self.config.postgres_port, "PostgreSQL"),
            (self.config.redis_port, "Redis"),
            (self.config.web_port, "the web server"),
            (self.gunicorn_port, "gunicorn"),
        ):
            if not port_is_free(port):
                raise StackError(
                    f"port {port} for {what} is taken: another reliability run, or choose another port"
                )
        self.log(f"run directory: {self.run_dir}")
        self.postgres_init()
        self.postgres_start()
        self.create_database()
        self.redis_start()
        self.web_start()
        if worker:
            self.worker_start("worker-1")
        if beat:
            self.beat_start()

    def stop(self) -> None:
        """Stops everything this stack started; safe to call twice."""
        for name in reversed(list(self.processes)):  # beat and workers first, Redis last
            self.stop_process(name)
        if self.postgres_running:
            self.postgres_stop(mode="fast")
        if not self.config.keep:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        else:
            self.log(f"kept the run directory (logs, database files): {self.run_dir}")

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # --- PostgreSQL ---

    def _pg(self, program: str, *args: str, check: bool = True, timeout: float = 120):
        return subprocess.run(
            [str(self.pg_bin / program), *args],
            user=self.pg_user.pw_uid if self.pg_user else None,
            group=self.pg_user.pw_gid if self.pg_user else None,
            cwd=self.run_dir,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
            capture_output=True,
            text=True,
            check=check,
            timeout=timeout,
        )

    def postgres_init(self) -> None:
        self.pgdata.mkdir(mode=0o700)
        if self.pg_user:
            os.chown(self.pgdata, self.pg_user.pw_uid, self.pg_user.pw_gid)
        self._pg(
            "initdb", "-D", str(self.pgdata), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        with (self.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nport = {self.config.postgres_port}\n"
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.pgdata}'\n"
                "max_connections = 200\n"
                "track_activity_query_size = 16384\n"  # whole queries in pg_stat_activity
            )
            conf.writelines(f"{name} = {value}\n" for name, value in self.config.postgres_settings.items())

    def postgres_start(self) -> None:
        log = self.log_path("postgres")
        log.touch()
        if self.pg_user:
            os.chown(log, self.pg_user.pw_uid, self.pg_user.pw_gid)
        started = self._pg(
            "pg_ctl", "-D", str(self.pgdata), "-l", str(log), "-w", "-t", "60", "start",
            check=False,
        )  # fmt: skip
        if started.returncode != 0:
            raise StackError(f"PostgreSQL did not start:\n{started.stdout}{started.stderr}")
        self.postgres_running = True
        self.log(f"PostgreSQL on 127.0.0.1:{self.config.postgres_port}")

    def postgres_stop(self, *, mode: str = "fast") -> None:
        """``fast`` disconnects every client and shuts down cleanly; ``immediate`` is a crash."""
        self._pg("pg_ctl", "-D", str(self.pgdata), "-m", mode, "-w", "-t", "60", "stop", check=False)
        self.postgres_running = False

    def create_database(self) -> None:
        import psycopg

        url = f"postgres://postgres@127.0.0.1:{self.config.postgres_port}/postgres"
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {DATABASE_NAME}")

    # --- Redis ---

    def redis_start(self) -> None:
        self.start_process(
            "redis",
            ["redis-server", "--port", str(self.config.redis_port), "--bind", "127.0.0.1"]
            + ["--save", "", "--appendonly", "no", "--dir", str(self.run_dir)],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        self.wait_for("Redis answering PING", self.redis_answers, process="redis")
        self.log(f"Redis on 127.0.0.1:{self.config.redis_port}")

    def redis_answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.config.redis_port), timeout=1) as connection:
                connection.sendall(b"PING\r\n")
                return connection.recv(16).startswith(b"+PONG")
        except OSError:  # refused, reset or timed out: not yet
            return False

    def redis_stop(self) -> None:
        self.stop_process("redis")

    # --- web, worker, beat (docker-compose.yml's commands) ---

    def web_start(self) -> None:
        # compose's web command: migrate, collectstatic, then exec gunicorn.
        self.start_process("web", self.commands["web"], env=self.app_env())
        gunicorn_url = f"http://127.0.0.1:{self.gunicorn_port}"
        self.wait_for("gunicorn answering /healthz/", lambda: self.healthy(gunicorn_url), process="web")
        if self.config.nginx:
            self.nginx_start()
        self.log(f"web (gunicorn, {self.config.web_workers} processes) on {self.base_url}")

    def nginx_start(self) -> None:
        config = nginx_config(
            self.run_dir / "nginx",
            listen=f"127.0.0.1:{self.config.web_port}",
            web=f"127.0.0.1:{self.gunicorn_port}",
        )
        self.start_process("nginx", [nginx_binary(), "-c", str(config), "-g", "daemon off;"], env={})
        self.wait_for("nginx answering /healthz/", self.healthy, process="nginx")

    def healthy(self, base_url: str | None = None) -> bool:
        try:
            with urllib.request.urlopen(f"{base_url or self.base_url}/healthz/", timeout=5) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False  # not listening yet, or slow to answer: not yet

    def worker_start(self, name: str, *, concurrency: int | None = None) -> subprocess.Popen:
        node = f"{name}@reliability"
        env = self.app_env(CELERY_WORKER_HOSTNAME=node)
        if concurrency is not None:
            env["CELERY_WORKER_CONCURRENCY"] = str(concurrency)
        process = self.start_process(name, self.commands["worker"], env=env)
        self.wait_for(
            f"{name} ready", lambda: f"{node} ready." in self.log_path(name).read_text(errors="replace"),
            process=name,
        )  # fmt: skip
        self.log(f"{name}: Celery worker {node} (pid {process.pid})")
        return process

    def beat_start(self) -> None:
        self.start_process("beat", self.commands["beat"], env=self.app_env())
        self.wait_for(
            "beat starting", lambda: "beat: Starting" in self.log_path("beat").read_text(errors="replace"),
            process="beat",
        )  # fmt: skip
        self.log(f"beat: sweeps every {self.config.sweep_seconds:g} s")

    # --- processes ---

    def start_process(self, name: str, argv: list[str], *, env: dict[str, str]) -> subprocess.Popen:
        with self.log_path(name).open("ab") as log:
            process = subprocess.Popen(
                argv, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.processes[name] = process
        return process

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Sends ``sig`` to the process group of ``name`` (a worker and its pool children)."""
        process = self.processes[name]
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        if sig == signal.SIGKILL:
            process.wait(timeout=30)
            del self.processes[name]

    def children(self, name: str) -> list[int]:
        """The child processes of ``name`` (a Celery worker's pool processes), from /proc."""
        pid = self.processes[name].pid
        try:
            return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except OSError:
            return []

    def stop_process(self, name: str, timeout: float = 20) -> None:
        process = self.processes.pop(name, None)
        if process is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        try:  # pool children that outlived their parent
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait_for(self, what: str, condition, *, process: str | None = None, timeout: float | None = None):
        deadline = time.monotonic() + (timeout or START_TIMEOUT_SECONDS)
        while time.monotonic() < deadline:
            result = condition()
            if result:
                return result
            if process and self.processes[process].poll() is not None:
                tail = self.log_path(process).read_text(errors="replace")[-3000:]
                raise StackError(f"{process} exited before {what}:\n{tail}")
            time.sleep(0.2)
        raise StackError(f"no {what} after {timeout or START_TIMEOUT_SECONDS} s")

    # --- studies ---

    def seed_study(self, **options) -> dict:
        """A running study made by ``reliability.seed`` (through the services); returns its plan."""
        argv = [sys.executable, "-m", "tests.reliability.seed"]
        for key, value in options.items():
            if value is not None:
                argv += [f"--{key.replace('_', '-')}", str(value)]
        result = subprocess.run(
            argv, cwd=REPO_ROOT, env=self.app_env(), capture_output=True, text=True, timeout=300
        )
        if result.returncode != 0:
            raise StackError(f"seeding the study failed:\n{result.stdout}{result.stderr}")
        return json.loads(result.stdout.strip().splitlines()[-1])
