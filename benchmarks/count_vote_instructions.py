"""Instructions the web process runs for a judgement's request, against a ``/healthz/`` request: a
count, which the machine's other jobs do not move, where a time does.

    python benchmarks/count_vote_instructions.py                     # 200 of each, the embedded SQLite
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<empty db> REDIS_URL=redis://127.0.0.1:6379/9 \\
        python benchmarks/count_vote_instructions.py --judgements 200 [--limits-off]

The process of ``profile_vote_request.py`` (Django's test client, production's middleware and
settings, the demo-sized study, 20 annotators who joined through the study link), run under valgrind's
callgrind (Debian's ``valgrind``), which counts the instructions it executes. Counting is on only
around the measured requests: first ``--judgements`` votes (each answer carrying the next comparison),
then as many ``/healthz/`` requests. It prints the millions of instructions per request of each and
their ratio. The database and Redis run in their own processes and are not counted: this measures the
web process's side of issue 9's ratio, which ``bench_load.py`` measures whole, in time.

On 2026-11-24 two runs of the same code gave counts equal to 0.5%, where CPU seconds of the same
requests on this 2-core host varied by up to 60% from run to run (BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INNER = "YARDSTICK_COUNT_INNER"  # set in the process valgrind runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgements", type=int, default=200, help="requests of each kind counted")
    parser.add_argument("--limits-off", action="store_true", help="turn the rate limits off")
    args = parser.parse_args()
    if os.environ.get(INNER):
        inner(args)
        return
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (Debian: apt-get install valgrind)")
    out = Path(tempfile.mkdtemp(prefix="count-vote-"))
    command = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}/callgrind.out",
        sys.executable,
        __file__,
        *sys.argv[1:],
    ]
    run = subprocess.run(command, env={**os.environ, INNER: "1"}, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"the counted run failed ({run.returncode}):\n{run.stdout}\n{run.stderr[-3000:]}")
    print(run.stdout, end="")
    votes, health = (totals(out / f"callgrind.out.{part}") / args.judgements for part in (1, 2))
    print(f"instructions per judgement (vote with the next comparison): {votes / 1e6:.3f} million")
    print(f"instructions per /healthz/: {health / 1e6:.3f} million")
    print(f"a judgement costs {votes / health:.3f} /healthz/ requests of instructions in the web process")
    shutil.rmtree(out)


def totals(dump: Path) -> int:
    """The instructions a callgrind dump counted (its ``totals:`` line)."""
    match = re.search(r"^totals:\s+(\d+)", dump.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{dump} has no totals")
    return int(match.group(1))


def inner(args) -> None:
    """Under valgrind: prepare and warm with counting off, then count each kind, dumped apart."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.profile_vote_request import prepare

    votes, healthz, connection = prepare(args.limits_off)
    print(f"database: {connection.vendor}; {args.judgements} judgements, {args.judgements} /healthz/")

    def control(*options: str) -> None:
        subprocess.run(["callgrind_control", *options, str(os.getpid())], check=True, capture_output=True)

    for call in (votes, healthz):
        control("--instr=on")
        call(args.judgements)
        control("--instr=off")
        control("--dump")  # callgrind.out.1, then .2; each dump zeroes the counts
    sys.stdout.flush()


if __name__ == "__main__":
    main()
