"""One command per scenario; see tests/reliability/README.md.

python -m tests.reliability load --annotators 50 --seconds 45
python -m tests.reliability fault worker-kill [--target group|child]
python -m tests.reliability fault postgres-restart [--down 10] [--mode fast|immediate]
python -m tests.reliability fault redis-restart [--down 15]
python -m tests.reliability fault resend
python -m tests.reliability fault duplicates [--ways 2 5]
python -m tests.reliability check --database-url postgres://... [--study SLUG]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from datetime import date
from pathlib import Path

from tests.reliability import invariants, scenarios
from tests.reliability.stack import Stack, StackConfig

FAULTS = {
    "worker-kill": scenarios.scenario_worker_kill,
    "postgres-restart": scenarios.scenario_postgres_restart,
    "redis-restart": scenarios.scenario_redis_restart,
    "resend": scenarios.scenario_resend,
    "duplicates": scenarios.scenario_duplicates,
}
# Time limits (seconds) of the whole run, stack start and stop included, unless --time-limit says.
DEFAULT_TIME_LIMITS = {
    "load": 240,
    "worker-kill": 300,
    "postgres-restart": 240,
    "redis-restart": 300,
    "resend": 240,
    "duplicates": 240,
}


def _stack_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("the stack")
    group.add_argument("--postgres-port", type=int, default=5499)
    group.add_argument("--redis-port", type=int, default=6390)
    group.add_argument("--web-port", type=int, default=8099)
    group.add_argument("--web-workers", type=int, default=4, help="gunicorn processes (WEB_CONCURRENCY)")
    group.add_argument("--sweep-seconds", type=float, default=15.0, help="SWEEP_SECONDS of beat")
    group.add_argument("--throttle-rate", default="1000000/s", help='every THROTTLE_* rate ("off": none)')
    group.add_argument(
        "--analyze", action="store_true", help="ANALYZE after seeding (diagnostic: fresh planner statistics)"
    )
    group.add_argument("--keep", action="store_true", help="keep the run directory (logs, database)")
    group.add_argument("--time-limit", type=float, default=None, help="seconds before the run is stopped")
    group.add_argument("--json", type=Path, default=None, help="also write the report here")


def _load_arguments(parser: argparse.ArgumentParser, *, annotators: int, think_ms: float) -> None:
    parser.add_argument("--annotators", type=int, default=annotators)
    parser.add_argument("--think-ms", type=float, default=think_ms, help="mean think time per comparison")


def _study_arguments(parser: argparse.ArgumentParser, *, tokens: int, appearances: int, ballots: int) -> None:
    parser.add_argument("--tokens", type=int, default=tokens, help="tokens in the study (items: n(n-1)/2)")
    parser.add_argument("--appearances", type=int, default=appearances, help="M")
    parser.add_argument("--ballots", type=int, default=ballots, help="n_b")


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(prog="python -m tests.reliability", description=__doc__.splitlines()[0])
    commands = main.add_subparsers(dest="command", required=True)

    load = commands.add_parser("load", help="N annotators against the full stack")
    _load_arguments(load, annotators=50, think_ms=0)
    _study_arguments(load, tokens=45, appearances=20, ballots=7)  # the paper's plan: 990 items
    load.add_argument("--seconds", type=float, default=45)
    load.add_argument(
        "--cap", type=int, default=None, help="votes per annotator and ballot (default: binding)"
    )
    _stack_arguments(load)

    fault = commands.add_parser("fault", help="one fault under load")
    faults = fault.add_subparsers(dest="scenario", required=True)

    kill = faults.add_parser("worker-kill", help="a Celery worker SIGKILLed while a ballot closes")
    kill.add_argument("--target", choices=["group", "child"], default="group")
    kill.add_argument("--after", type=float, default=5, help="seconds of load after the close")
    _load_arguments(kill, annotators=20, think_ms=0)
    _stack_arguments(kill)

    postgres = faults.add_parser("postgres-restart", help="PostgreSQL stopped under load, then started")
    postgres.add_argument("--down", type=float, default=10)
    postgres.add_argument("--mode", choices=["fast", "immediate"], default="fast")
    postgres.add_argument("--warmup", type=float, default=10)
    postgres.add_argument("--after", type=float, default=20)
    _load_arguments(postgres, annotators=50, think_ms=0)
    _study_arguments(postgres, tokens=45, appearances=20, ballots=7)
    _stack_arguments(postgres)

    redis = faults.add_parser("redis-restart", help="Redis stopped under load, then started empty")
    redis.add_argument("--down", type=float, default=15)
    redis.add_argument("--freeze", action="store_true", help="SIGSTOP then SIGCONT: a Redis that hangs")
    redis.add_argument("--warmup", type=float, default=10)
    redis.add_argument("--after", type=float, default=30)
    _load_arguments(redis, annotators=30, think_ms=500)
    _study_arguments(redis, tokens=20, appearances=6, ballots=6)
    _stack_arguments(redis)

    resend = faults.add_parser("resend", help="the same vote sent several times in a row")
    resend.add_argument("--times", type=int, default=5)
    resend.add_argument("--assignments", type=int, default=20)
    _load_arguments(resend, annotators=20, think_ms=200)
    _stack_arguments(resend)

    duplicates = faults.add_parser("duplicates", help="the same vote (and 'next') sent N ways at once")
    duplicates.add_argument("--ways", type=int, nargs="+", default=[2, 5])
    duplicates.add_argument("--assignments", type=int, default=20)
    _load_arguments(duplicates, annotators=20, think_ms=200)
    _stack_arguments(duplicates)

    check = commands.add_parser("check", help="the invariants, against any Yardstick database")
    check.add_argument("--database-url", required=True)
    check.add_argument("--study", default=None, help="only this study's rows (slug)")
    return main


def _terminate(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "check":
        results = invariants.check(args.database_url, study=args.study)
        print(invariants.summary(results))
        return 0 if all(r.held for r in results) else 1

    name = args.command if args.command == "load" else args.scenario
    scenario = scenarios.scenario_load if args.command == "load" else FAULTS[args.scenario]
    time_limit = args.time_limit or DEFAULT_TIME_LIMITS[name]
    args.time_limit = time_limit
    config = StackConfig(
        postgres_port=args.postgres_port,
        redis_port=args.redis_port,
        web_port=args.web_port,
        web_workers=args.web_workers,
        sweep_seconds=args.sweep_seconds,
        throttle_rate=args.throttle_rate,
        keep=args.keep,
    )
    signal.signal(signal.SIGTERM, _terminate)
    load_average = [round(value, 2) for value in os.getloadavg()]  # others' work on the machine, if any
    stack = Stack(config, log=lambda line: print(f"[stack] {line}", flush=True))
    try:
        with scenarios.time_limit(time_limit, stack):
            report = scenario(stack, args)
    finally:
        stack.stop()
    # A 503 (the database away, with Retry-After) is an answer; any other 5xx is a defect.
    clients = report.get("load") or report.get("clients_whole_run") or {}
    report["unexpected_5xx"] = {k: v for k, v in clients.get("status_5xx", {}).items() if k != "503"}
    report["date"] = date.today().isoformat()
    report["machine_load_average_before"] = load_average
    report["web_workers"] = config.web_workers
    report["sweep_seconds"] = config.sweep_seconds
    text = json.dumps(report, indent=2, default=str)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    failed = False
    if not report.get("invariants_held", False):
        print("INVARIANTS VIOLATED", file=sys.stderr)
        failed = True
    if report["unexpected_5xx"]:
        print(f"CLIENTS SAW {report['unexpected_5xx']} (see the web log with --keep)", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
