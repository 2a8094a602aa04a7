"""Fuzzing the REST API with schemathesis, every check, against a live server (RELIABILITY.md, "Fuzzing").

    python -m tests.reliability.fuzz                          # SQLite in a temporary directory
    python -m tests.reliability.fuzz --max-examples 200 --database-url postgres://postgres@127.0.0.1:5432/fuzz

1. A database of its own (a new SQLite file, or ``--database-url``, which is flushed first: give it a
   database that holds nothing else) is migrated and filled with the world of ``tests/api/world.py``: a
   finished study with two owners' models evaluated, a running study with votes, a draft, staff and two
   model owners with API tokens.
2. gunicorn serves the project on 127.0.0.1 as in production (``DEBUG=false``), rate limits off (every
   ``THROTTLE_*`` variable "off", the failed-login lockout out of reach) so that fuzzing reaches the
   views rather than 429.
3. ``schemathesis run`` with ``--checks all`` and every phase (examples, coverage, fuzzing, stateful),
   once with the staff token and once with model owner A's, each against a fresh gunicorn. Path
   parameters name the world's studies and submissions half of the time (the ``map_case`` hook below),
   so that operations reach their real branches, and are schemathesis's own otherwise.
   Then a second pass per token with odd values in every case (``use_odd_values``): about half of the
   strings and numbers of a JSON body and of the query replaced by lone surrogates, NUL, numbers beyond
   64 bits and the float range, the smallest float, and such numbers as text; half of the JSON
   submissions replaced by one covering the finished study with constant, duplicated, huge, tiny or NaN
   scores. The checks that judge a request by its schema are left out of that pass (its cases are no
   longer what schemathesis generated), and so is the stateful phase.
4. The report: per identity, the requests the server received and their statuses (gunicorn's access
   log, so probes and retries count too), the 5xx, and the failures by check; schemathesis's log has a
   reproducing curl command for each, and its JSON report the rest (``--report-dir`` keeps them).

The exit status is 0 when both runs had no 5xx, no error and no failure of any check but one: a refusal
of a request the schema allows (ST202, ``positive_data_acceptance``) is listed apart, because that is
also what a rule no schema can state looks like (a slug already taken, a plan impossible for the
study's items, a CSV's content); RELIABILITY.md says which ones a run found and why each is right.
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
from collections import Counter
from pathlib import Path

import schemathesis

REPO_ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
WORLD_FILE_VARIABLE = "YARDSTICK_FUZZ_WORLD"  # the world's slugs and ids, for the hook below


# --- what schemathesis loads (SCHEMATHESIS_HOOKS=reliability.fuzz); the quick test imports it too ----


@schemathesis.deserializer("text/csv")
def csv_text(context, response):
    """A CSV response (the leaderboard's) is checked as the text the schema says it is."""
    return response.content.decode("utf-8")


def use_world_path_parameters(case, *, slugs, submission_ids, rng: random.Random):
    """Half of the time, a study or submission that exists in place of schemathesis's own, so that
    operations reach their real branches and not only 404. Shared with tests/api/test_schemathesis.py."""
    from schemathesis.core.parameters import ParameterLocation

    parameters, meta = case.path_parameters, case.meta
    if not parameters or (
        # A deliberately invalid path parameter stays invalid; a stateful step follows a resource it created.
        meta is not None and (meta.is_negative_at(ParameterLocation.PATH) or meta.phase.name == "stateful")
    ):
        return case
    if "slug" in parameters and rng.random() < 0.5:
        parameters["slug"] = rng.choice(slugs)
    if "submission_id" in parameters and rng.random() < 0.5:
        parameters["submission_id"] = rng.choice(submission_ids)
    return case


# --- odd but honest values (issue 34): what a model owner, a researcher or an annotator may send ------

# Text UTF-8 cannot encode (lone surrogates, sent in JSON as "\ud800"), a surrogate pair written as two
# escapes (JSON decoders join them), NUL, and text that looks like a number.
ODD_TEXTS = ("left\ud800", "\udfff", "\ud800\udc00", "a\x00b", "\x00", "0.5")
# Beyond 64 bits, beyond the float range (1 followed by 400 zeros), the largest and the smallest floats.
ODD_NUMBERS = (
    10**400,
    -(10**400),
    2**63,
    2**64,
    -(2**63) - 1,
    2**53 + 1,
    1.7976931348623157e308,
    5e-324,
    -0.0,
)
# The same as text, where a query or a field holds numbers as strings; a query cannot carry a surrogate.
ODD_NUMBER_TEXTS = (
    "1" + "0" * 400,
    "1e400",
    "1e-400",
    "5e-324",
    "-0.9999999999999999",
    "NaN",
    "Infinity",
    "-Infinity",
    "9223372036854775808",
)
ODD_QUERY_TEXTS = (*ODD_NUMBER_TEXTS, "a\x00b")
SUBMISSIONS_PATH = "/api/studies/{slug}/submissions/"


def _odd(value, rng: random.Random):
    """``value`` (a JSON body) with about half of its strings and numbers replaced by odd ones."""
    if isinstance(value, dict):
        return {key: _odd(item, rng) for key, item in value.items()}
    if isinstance(value, list):
        return [_odd(item, rng) for item in value]
    if isinstance(value, str) and rng.random() < 0.5:
        return rng.choice(ODD_TEXTS + ODD_NUMBER_TEXTS)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and rng.random() < 0.5:
        return rng.choice(ODD_NUMBERS)
    return value


def odd_scores(items: list[int], rng: random.Random) -> dict:
    """A submission covering every item of the finished study whose scores are odd: constant (as numbers
    or as text), duplicated in pairs, two values only, or one score beyond the float range, tiny, NaN."""
    count = len(items)
    spread = [rng.random() for _ in items]
    kinds = {
        "constant": [0.5] * count,
        "constant-text": ["0.5"] * count,
        "duplicated": [float(i // 2) for i in range(count)],
        "two-values": [1.0 if i < count // 2 else 0.0 for i in range(count)],
        "huge": [10**400, *spread[1:]],
        "huge-text": ["1" + "0" * 400, *spread[1:]],
        "tiny": [5e-324 * (i % 2) for i in range(count)],
        "nan-text": ["NaN", *spread[1:]],
    }
    kind = rng.choice(sorted(kinds))
    rows = [{"item": item, "score": score} for item, score in zip(items, kinds[kind], strict=True)]
    return {"model_name": f"odd-{kind}-{rng.randrange(10**9)}", "scores": rows}


def _plain(value) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def use_odd_values(case, *, items: list[int], finished_slug: str, rng: random.Random):
    """Odd values in the case's JSON body and query (``ODD_*``); a JSON submission is, half of the time,
    one of ``odd_scores`` for the finished study. Shared with tests/api/test_schemathesis.py."""
    is_json = (case.media_type or "").startswith("application/json")
    # As JSON text, written as a client's encoder writes it (a lone surrogate as "\ud800"): schemathesis
    # sends bytes as they are and does not match them against the schema's patterns, whose engine
    # cannot read a lone surrogate.
    if case.method == "POST" and case.path == SUBMISSIONS_PATH and is_json and rng.random() < 0.5:
        case.path_parameters = {**(case.path_parameters or {}), "slug": finished_slug}
        case.body = json.dumps(odd_scores(items, rng)).encode()
    elif is_json and isinstance(case.body, (dict, list)):
        case.body = json.dumps(_odd(case.body, rng)).encode()
    if case.query:
        case.query = {
            name: rng.choice(ODD_QUERY_TEXTS) if _plain(value) and rng.random() < 0.5 else value
            for name, value in case.query.items()
        }
    return case


ODD_VALUES_VARIABLE = "YARDSTICK_FUZZ_ODD_VALUES"  # set: every case gets odd values (the second pass)

if os.environ.get(WORLD_FILE_VARIABLE):
    _WORLD = json.loads(Path(os.environ[WORLD_FILE_VARIABLE]).read_text())
    _random = random.Random(0)
    _odd_values = bool(os.environ.get(ODD_VALUES_VARIABLE))

    @schemathesis.hook
    def map_case(context, case):
        case = use_world_path_parameters(
            case, slugs=_WORLD["slugs"], submission_ids=_WORLD["submission_ids"], rng=_random
        )
        if _odd_values:
            case = use_odd_values(
                case, items=_WORLD["finished_items"], finished_slug=_WORLD["slugs"][0], rng=_random
            )
        return case


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
            "LOGIN_FAILURE_LIMIT": "1000000000",
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
call_command("migrate", interactive=False, verbosity=0)
if sys.argv[2] == "flush":
    call_command("flush", interactive=False, verbosity=0)
world = build_world()
from collection.models import Item
finished = Item.objects.filter(study__slug=world.slugs[0]).order_by("pk")
finished_items = list(finished.values_list("pk", flat=True))
json.dump(
    {"staff": world.staff_token, "owner": world.owner_a_token, "slugs": list(world.slugs),
     "submission_ids": list(world.submission_ids), "finished_items": finished_items},
    open(sys.argv[1], "w"),
)
"""

# The check whose failures are reported apart: a refusal of a request the schema allows, which is what a
# rule the schema cannot state looks like (a slug already taken, a plan impossible for these items, a
# CSV's content); RELIABILITY.md names each one found.
SEMANTIC_CHECK = "ST202"


def build_world(environment: dict[str, str], world_file: Path, flush: bool) -> dict:
    command = [sys.executable, "-c", BUILD_WORLD, str(world_file), "flush" if flush else "fresh"]
    subprocess.run(
        command, env={**environment, "DJANGO_SETTINGS_MODULE": "config.settings"}, check=True, cwd=REPO_ROOT
    )
    return json.loads(world_file.read_text())


def start_server(environment: dict[str, str], port: int, workers: int, log: Path, access_log: Path):
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
        "--access-logfile",
        str(access_log),
        "--access-logformat",
        "%(s)s",  # one status per line: the server's own count of requests and 5xx
        # No limit on the request line: a long query string reaches the application, which is what is
        # fuzzed, instead of gunicorn's own HTML 414 (RELIABILITY.md, "Fuzzing").
        "--limit-request-line",
        "0",
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


def statuses(access_log: Path) -> Counter:
    time.sleep(1)  # gunicorn writes its access log line after the response
    return Counter(line.strip() for line in access_log.read_text().splitlines() if line.strip())


# The second pass, odd values in every case: a mutated case is no longer what schemathesis generated, so
# the checks that judge a request by the schema (accepted when valid, refused when not) are left out;
# the stateful phase too, whose links follow what the API made of the unmutated requests.
ODD_VALUES_EXCLUDED_CHECKS = "positive_data_acceptance,negative_data_rejection"
ODD_VALUES_PHASES = "examples,coverage,fuzzing"


def run_schemathesis(
    *,
    port: int,
    token: str,
    world_file: Path,
    report: Path,
    max_examples: int,
    seed: int,
    log: Path,
    odd_values: bool = False,
) -> None:
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
    if odd_values:
        command += ["--exclude-checks", ODD_VALUES_EXCLUDED_CHECKS, "--phases", ODD_VALUES_PHASES]
    environment = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.reliability.fuzz",
        WORLD_FILE_VARIABLE: str(world_file),
    }
    if odd_values:
        environment[ODD_VALUES_VARIABLE] = "1"
    environment["PYTHONPATH"] = str(REPO_ROOT)
    with log.open("w") as output:
        subprocess.run(command, env=environment, cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT)


def summary(identity: str, report: dict, counts: Counter, seconds: float) -> dict:
    requests = sum(counts.values())
    server_errors = sum(n for status, n in counts.items() if status.startswith("5"))
    failures = [f for f in report["failures"] if f["code"] != SEMANTIC_CHECK]
    semantic = [f for f in report["failures"] if f["code"] == SEMANTIC_CHECK]
    return {
        "identity": identity,
        "seconds": round(seconds),
        "requests": requests,
        "5xx": server_errors,
        "statuses": dict(sorted(counts.items())),
        "test_cases": report["test_cases"]["generated"],
        "failures": {f"{f['code']} {f['title']}": f["operations"] for f in failures},
        "errors": report["errors"],
        "refused_valid_requests": sorted({op for f in semantic for op in f["operations"]}),
    }


def print_summary(result: dict) -> None:
    print(
        f"{result['identity']}: {result['requests']:,} requests ({result['test_cases']:,} test cases) "
        f"in {result['seconds']} s; 5xx: {result['5xx']}; failures: {sum(map(len, result['failures'].values()))}"
    )
    print("  statuses: " + ", ".join(f"{status} × {n:,}" for status, n in result["statuses"].items()))
    for failure, operations in result["failures"].items():
        print(f"  FAILURE {failure}: {', '.join(operations)}")
    for error in result["errors"]:
        print(f"  ERROR {error}")
    if result["refused_valid_requests"]:
        print(f"  {SEMANTIC_CHECK} (schema-valid request refused; see the log for each reason):")
        for operation in result["refused_valid_requests"]:
            print(f"    {operation}")


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
    results = []
    passes = [(identity, odd) for odd in (False, True) for identity in ("staff", "owner")]
    for identity, odd_values in passes:
        name = f"{identity}, odd values" if odd_values else identity
        stem = f"{identity}-odd" if odd_values else identity
        access_log = report_dir / f"access-{stem}.log"
        server = start_server(environment, port, arguments.workers, report_dir / "gunicorn.log", access_log)
        try:
            print(f"schemathesis as {name} against http://127.0.0.1:{port}/ …", flush=True)
            started = time.monotonic()
            report_file = report_dir / f"schemathesis-{stem}.json"
            run_schemathesis(
                port=port,
                token=world[identity],
                world_file=world_file,
                report=report_file,
                max_examples=arguments.max_examples,
                seed=arguments.seed,
                log=report_dir / f"schemathesis-{stem}.log",
                odd_values=odd_values,
            )
            seconds = time.monotonic() - started
        finally:
            stop_server(server)
        result = summary(name, json.loads(report_file.read_text()), statuses(access_log), seconds)
        print_summary(result)
        results.append(result)
    (report_dir / "summary.json").write_text(json.dumps(results, indent=2))
    print(f"reports and logs: {report_dir}")
    shutil.rmtree(run_dir / "static", ignore_errors=True)
    clean = all(result["5xx"] == 0 and not result["failures"] and not result["errors"] for result in results)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
