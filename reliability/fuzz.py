"""Fuzzing the REST API with schemathesis, every check, against a live server (RELIABILITY.md, "Fuzzing").

    python -m reliability.fuzz                          # SQLite in a temporary directory
    python -m reliability.fuzz --max-examples 200 --database-url postgres://postgres@127.0.0.1:5432/fuzz

1. A database of its own (a new SQLite file, or ``--database-url``, which is flushed first: give it a
   database that holds nothing else) is migrated and filled with the world of ``tests/api/world.py``: a
   finished study with two owners' models evaluated, a running study with votes, a draft, staff and two
   model owners with API tokens.
2. gunicorn serves the project on 127.0.0.1 as in production (``DEBUG=false``), rate limits off (every
   ``THROTTLE_*`` variable "off", the failed-login lockout out of reach) so that fuzzing reaches the
   views rather than 429.
3. ``schemathesis run`` with ``--checks all`` and every phase (examples, coverage, fuzzing, stateful),
   once with the staff token and once with model owner A's. Path parameters are drawn from the world's
   study slugs and submission ids half of the time (``map_case`` below), so that the
   operations reach their real branches, and from schemathesis otherwise.
4. The report: per identity, the requests sent, the responses 5xx, and the failures by check, with a
   reproducing curl command for each; the JSON reports stay in ``--report-dir``.

The exit status is 0 only when both runs had no 5xx and no failure of any check.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
WORLD_FILE_VARIABLE = "YARDSTICK_FUZZ_WORLD"  # the world's slugs and ids, for the hook below


# --- the hook schemathesis loads (SCHEMATHESIS_HOOKS=reliability.fuzz) -----------------------------

def use_world_path_parameters(case, *, slugs, submission_ids, rng: random.Random):
    """Half of the time, a study or submission that exists in place of schemathesis's own, in a case
    whose path parameters are meant to be valid (a deliberately invalid one is left as it is), so that
    operations reach their real branches and not only 404. Shared with tests/api/test_schemathesis.py."""
    from schemathesis.core.parameters import ParameterLocation

    parameters = case.path_parameters
    if not parameters or (case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH)):
        return case
    if "slug" in parameters and rng.random() < 0.5:
        parameters["slug"] = rng.choice(slugs)
    if "submission_id" in parameters and rng.random() < 0.5:
        parameters["submission_id"] = rng.choice(submission_ids)
    return case


if os.environ.get(WORLD_FILE_VARIABLE):
    import schemathesis

    _WORLD = json.loads(Path(os.environ[WORLD_FILE_VARIABLE]).read_text())
    _random = random.Random(0)

    @schemathesis.hook
    def map_case(context, case):
        return use_world_path_parameters(
            case, slugs=_WORLD["slugs"], submission_ids=_WORLD["submission_ids"], rng=_random
        )


# --- the run ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def throttle_variables() -> list[str]:
    """The THROTTLE_* variables config/settings.py reads."""
    source = (REPO_ROOT / "config" / "settings.py").read_text()
    return sorted(set(re.findall(r"[\"'](THROTTLE_[A-Z0-9_]+)[\"']", source)))


def server_environment(run_dir: Path, database_url: str | None) -> dict[str, str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"}
    }
    environment.update(
        {
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "YARDSTICK_DATA_DIR": str(run_dir),
            "DATABASE_URL": database_url or f"sqlite:///{run_dir / 'fuzz.sqlite3'}",
            "STATIC_ROOT": str(run_dir / "static"),
            "LOGIN_FAILURES_PER_USERNAME": "1000000000",
            "LOGIN_FAILURES_PER_ADDRESS": "1000000000",
            "LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(REPO_ROOT),
        }
    )
    environment.update({name: "off" for name in throttle_variables()})
    return environment


BUILD_WORLD = """
import json, sys
import django
django.setup()
from django.core.management import call_command
from tests.api.world import build_world
if sys.argv[2] == "flush":
    call_command("flush", interactive=False, verbosity=0)
call_command("migrate", interactive=False, verbosity=0)
world = build_world()
json.dump(
    {"staff": world.staff_token, "owner": world.owner_a_token, "slugs": list(world.slugs),
     "submission_ids": list(world.submission_ids)},
    open(sys.argv[1], "w"),
)
"""


def build_world(environment: dict[str, str], world_file: Path, flush: bool) -> dict:
    command = [sys.executable, "-c", BUILD_WORLD, str(world_file), "flush" if flush else "fresh"]
    subprocess.run(
        command, env={**environment, "DJANGO_SETTINGS_MODULE": "config.settings"}, check=True, cwd=REPO_ROOT
    )
    return json.loads(world_file.read_text())


def start_server(environment: dict[str, str], port: int, workers: int, log: Path) -> subprocess.Popen:
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--no-input", "-v", "0"],
        env=environment,
        check=True,
        cwd=REPO_ROOT,
    )
    command = [
        str(VENV_BIN / "gunicorn"),
        "config.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--timeout",
        "120",
    ]
    server = subprocess.Popen(
        command,
        env=environment,
        cwd=REPO_ROOT,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz/", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            time.sleep(0.5)
    stop_server(server)
    raise RuntimeError(f"gunicorn did not answer /healthz/ within 60 s; see {log}")


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def run_schemathesis(
    *, port: int, token: str, world_file: Path, report: Path, max_examples: int, seed: int, log: Path
) -> int:
    command = [
        str(VENV_BIN / "schemathesis"),
        "run",
        f"http://127.0.0.1:{port}/api/schema/?format=json",
        "--checks",
        "all",
        "--header",
        f"Authorization: Token {token}",
        "--max-examples",
        str(max_examples),
        "--seed",
        str(seed),
        "--continue-on-failure",
        "--request-timeout",
        "60",
        "--report",
        "json",
        "--report-json-path",
        str(report),
        "--no-color",
        # The token is the credential under test: no made-up session cookie beside it, which the API
        # rightly ignores when the token is valid, and which ignored_auth would count as accepted.
        "--generation-with-security-parameters",
        "false",
    ]
    environment = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "reliability.fuzz",
        WORLD_FILE_VARIABLE: str(world_file),
    }
    environment["PYTHONPATH"] = str(REPO_ROOT)
    with log.open("w") as output:
        return subprocess.run(
            command, env=environment, cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT
        ).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=100, help="per operation and phase (default 100)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--database-url", help="a database of its own (it is flushed); default: SQLite")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn processes (default 2)")
    parser.add_argument("--report-dir", type=Path, default=None, help="keep the reports and logs here")
    arguments = parser.parse_args(argv)

    run_dir = Path(tempfile.mkdtemp(prefix="yardstick-fuzz-"))
    report_dir = arguments.report_dir or run_dir / "reports"
    report_dir.mkdir(parents=True, exist_ok=True)
    environment = server_environment(run_dir, arguments.database_url)
    world_file = report_dir / "world.json"
    print(f"world: building in {environment['DATABASE_URL'].split('@')[-1]}", flush=True)
    world = build_world(environment, world_file, flush=bool(arguments.database_url))
    port = free_port()
    server = start_server(environment, port, arguments.workers, report_dir / "gunicorn.log")
    print(f"gunicorn: http://127.0.0.1:{port}/ with {arguments.workers} workers", flush=True)
    try:
        for identity in ("staff", "owner"):
            print(f"schemathesis as {identity}: running …", flush=True)
            started = time.monotonic()
            run_schemathesis(
                port=port,
                token=world[identity],
                world_file=world_file,
                report=report_dir / f"schemathesis-{identity}.json",
                max_examples=arguments.max_examples,
                seed=arguments.seed,
                log=report_dir / f"schemathesis-{identity}.log",
            )
            print(f"  {time.monotonic() - started:.0f} s", flush=True)
    finally:
        stop_server(server)
    print(f"reports: {report_dir}")
    if arguments.report_dir is None:
        shutil.rmtree(run_dir / "static", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
