"""The demo run on the embedded default: ``manage.py simulate_voters --study demo`` (19,660 votes).

    python benchmarks/bench_simulate_voters.py [--runs 3] [--max-votes N]

Each run gets a fresh SQLite file in a temporary folder (as ``make run`` makes it: ``migrate``, then
``load_demo``) and eager Celery, and times the command in a child process: wall-clock seconds and the
CPU seconds it used (on a shared machine the CPU time is the steadier figure). The command votes
through the same service as people (``vote_record_and_next``: the vote, then the next lease, one
transaction each), and closes every ballot in process.

Baseline: the same number of write transactions straight through ``sqlite3`` on a fresh file with the
project's pragmas (WAL, synchronous=NORMAL, IMMEDIATE transactions), each inserting one row: the
database's own floor for one transaction per vote.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEMO_VOTES = 19_660


def _manage(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )


def simulate_once(max_votes: int | None) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, the command's last line) of one run on a fresh database."""
    folder = tempfile.mkdtemp(prefix="bench-voters-")
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{folder}/yardstick.sqlite3",
        "YARDSTICK_DATA_DIR": folder,
        "CELERY_TASK_ALWAYS_EAGER": "true",
        "DEBUG": "false",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "benchmark"),
    }
    env.pop("REDIS_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    _manage("migrate", "--noinput", env=env)
    _manage("load_demo", env=env)
    command = ["simulate_voters", "--study", "demo"]
    if max_votes:
        command += ["--max-votes", str(max_votes)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = _manage(*command, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout.strip().splitlines()[-1]


def floor_once(transactions: int) -> float:
    """Seconds for ``transactions`` one-row write transactions on a fresh SQLite file."""
    folder = tempfile.mkdtemp(prefix="bench-floor-")
    database = sqlite3.connect(f"{folder}/floor.sqlite3", isolation_level=None)
    database.execute("PRAGMA journal_mode=WAL")
    database.execute("PRAGMA synchronous=NORMAL")
    database.execute("CREATE TABLE vote (id INTEGER PRIMARY KEY, comparison INTEGER, choice TEXT)")
    started = time.perf_counter()
    for number in range(transactions):
        database.execute("BEGIN IMMEDIATE")
        database.execute("INSERT INTO vote (comparison, choice) VALUES (?, ?)", (number, "left"))
        database.execute("COMMIT")
    seconds = time.perf_counter() - started
    database.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-votes", type=int, default=None, help="stop each run after this many votes")
    args = parser.parse_args()

    from benchmarks._timing import machine

    votes = args.max_votes or DEMO_VOTES
    print(f"machine: {machine()}; load average before: {os.getloadavg()[0]:.2f}")
    floor = statistics.median(floor_once(votes) for _ in range(args.runs))
    walls, cpus = [], []
    for run in range(1, args.runs + 1):
        wall, cpu, line = simulate_once(args.max_votes)
        walls.append(wall)
        cpus.append(cpu)
        print(f"run {run}: {wall:.1f} s wall, {cpu:.1f} s CPU: {line}")
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(f"{'':<48} {'seconds':>8} {'per vote (ms)':>14} {'ratio':>8}")
    print(
        f"{'baseline: one-row SQLite transactions (floor)':<48} {floor:>8.2f} {1000 * floor / votes:>14.3f} {1:>8}"
    )
    print(
        f"{'simulate_voters, wall (median)':<48} {wall:>8.1f} {1000 * wall / votes:>14.3f} {wall / floor:>7.0f}×"
    )
    print(
        f"{'simulate_voters, CPU (median)':<48} {cpu:>8.1f} {1000 * cpu / votes:>14.3f} {cpu / floor:>7.0f}×"
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
