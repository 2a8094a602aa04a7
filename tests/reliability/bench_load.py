"""What a vote costs on the full stack as deployed, in /healthz/ requests of the same server.

    python benchmarks/bench_load.py                        # the stack as docker-compose.yml deploys it
    python benchmarks/bench_load.py --web-workers 3 --threads 8 --label "gthread 3x8"
    python benchmarks/bench_load.py --phases health,vote --env DATABASE_POOL=false
    python benchmarks/bench_load.py --phases vote --statements   # where the database's time goes
    python benchmarks/bench_load.py --phases health,health-wrk,vote --seconds 15   # the two ratios only
    python benchmarks/bench_load.py --phases health-wrk,vote-wrk --rounds 5 --seconds 12   # N, 5 times

Starts the reliability harness's stack (tests/reliability/stack.py: its own PostgreSQL cluster, its own
Redis, a Celery worker and beat, and gunicorn with docker-compose.yml's command and environment, all on
127.0.0.1 and on ports of their own), seeds two running studies of the paper's plan (990 items,
``M = 20``, ``n_b = 7``, no cap), and drives it with one asyncio/httpx load generator:

- **health**: 50 closed-loop clients on ``/healthz/`` (one ``SELECT 1``): the server's own floor,
  in requests/s;
- **health-wrk** (left out when Debian's ``wrk`` is not installed): the same 50 clients on
  ``/healthz/`` from wrk, a generator in C. On two cores the Python generator of **health** uses
  about 0.9 of a core itself and is what limits that phase, so the floor it measures is its own;
  wrk's, measured with the server's CPU to spare, is the server's. The issue's ratio is the one with
  the same generator for both phases; the second ratio, wrk's floor over the same votes/s, says what
  a vote costs the server;
- **vote**: 50 scripted annotators (tests/reliability/load.py) who first join (the entry page and
  consent, timed apart), then vote with no think time: next → vote → next, or vote → vote when the
  vote's answer carries the next comparison. Votes/s, and the latency of ``vote`` and ``next``;
- **vote-wrk** (left out without wrk): the vote phase with wrk as the generator
  (``judgements.lua``): 50 annotators join from Python first, then each of wrk's 50 threads is one of
  them, in the same closed loop. With **health-wrk**, the issue's ratio with the same generator for
  both phases and a generator that is not what limits either: "a vote costs N healthz requests, both
  from wrk" is the figure to read;
- **crowd**: 500 annotators pausing 2 s (exponential, mean 2 s) per comparison, their first
  comparisons asked for within 2 s: latency p95 of the requests sent after those 2 s (the goal's
  steady state), the first comparisons' latency apart (the arrival of the whole crowd at once, a
  harsher start than a crowd platform's, which fills 500 places in minutes), and errors (5xx and
  network errors) of both. The Python generator's own event-loop lag is reported too: how late its loop wakes a 10 ms sleep,
  which is part of every latency it measures;
- **crowd-wrk** (left out without wrk): the crowd with wrk as the generator. The 500 join from
  Python; a first wrk run is their arrival (each one's GET next at a uniform time within the think
  time, then judgements with think time, for two think times: its latencies are reported apart);
  a second, measured run starts from the comparison each one held. wrk takes a few hundredths of a
  core where the Python crowd takes half of one of the two, so these are the server's latencies;
- **ballots-wrk** (left out without wrk): a whole study voted through by the crowd. A smaller study
  (190 items, ``M = 20``, ``n_b = 5``: 1,900, 950, 480, 240 and 120 comparisons) and the crowd's
  500 annotators thinking 2 s, driven by wrk, who wait when there is nothing to judge as the voting
  page does (the ``Retry-After`` the server names). Per ballot boundary: the close's own seconds, the
  seconds from the ballot's last vote to the next ballot's opening, to its first vote, and to the
  first votes in it of half and of all of the annotators (what they waited); the answers without a
  comparison by reason, the latencies of the whole run, and the invariants with every ballot closed.

- **live-wrk** (left out without wrk): the live view of a running study under the crowd
  (``GET /api/studies/<slug>/live/``, scoring/live.py). First, with the server otherwise idle, wrk's 50
  connections on ``/healthz/`` and then on the live endpoint (a staff token): "a live read costs N
  healthz requests". Then the crowd of **crowd-wrk** on a study of its own while one researcher polls
  its live endpoint every 2 s: the crowd's p50 / p95 beside crowd-wrk's (without the researcher), and
  the researcher's own latencies (a read every 5 s computes the figures; the others find them cached).

"A vote costs N healthz requests" is (healthz requests/s) / (votes/s), both measured in this run
with the same generator; the guard is N ≤ 5, measured with the rate limits off
(``--throttle-rate off``). "… of wrk's healthz requests" divides wrk's floor by the same votes/s instead. With ``--rounds R``, health-wrk and vote-wrk run R times,
alternated, on the one stack (the vote study sized so that no ballot closes under them), and N is the
median of the R ratios, printed with each round's: one ratio carries the machine's drift between its
two phases, up to 10% here. Afterwards: the resident memory of every gunicorn worker, and the
invariants of tests/reliability/invariants.py on every study the run used. Prints a Markdown table (and, with
``--json``, writes every figure). The run stops by itself (``--time-limit``) and stops all it started.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks._timing import machine  # noqa: E402
from tests.reliability import invariants  # noqa: E402
from tests.reliability.load import Annotator, LoadConfig, Recorder, percentile  # noqa: E402
from tests.reliability.stack import Stack, StackConfig  # noqa: E402

HEALTH_CLIENTS = 50
DISTURBED_HEALTHZ = 0.6  # wrk_rounds: a healthz phase under this share of the best round's rate
VOTE_ANNOTATORS = 50
CROWD_ANNOTATORS = 500
CROWD_THINK_MS = 2000
JOIN_CONCURRENCY = 50  # annotators joining at once before a phase's measured window
# docker-compose.yml's choices for the web service that the stack does not set itself.
DEPLOYED_VARIABLES = ("WEB_THREADS", "DATABASE_POOL", "DATABASE_POOL_MAX_SIZE", "CONN_MAX_AGE")
DEFAULT_PHASES = "health,health-wrk,vote,vote-wrk,crowd,crowd-wrk,live-wrk,ballots-wrk"
WRK_PHASES = {"health-wrk", "vote-wrk", "crowd-wrk", "live-wrk", "ballots-wrk"}
LIVE_POLL_SECONDS = 2.0  # the researcher of the live-wrk phase reads the live view this often
# The study of the ballots-wrk phase: 190 items, every one of its five ballots voted within a run.
BALLOTS_PLAN = {"tokens": 20, "appearances": 20, "ballots": 5}
BALLOTS_SECONDS = 150  # the most the ballots-wrk phase runs; it stops once the study is finished
GOAL_HEALTHZ_PER_VOTE = 5  # the guard: a vote, with the next comparison, costs at most 5 healthz requests
GOAL_CROWD_P95_MS = 100.0
GOAL_WORKER_RSS_MB = 150.0
# The vote phases' study (45 tokens: 990 items) holds every vote of every vote phase in its ballot 1,
# at up to this many votes a second: no ballot closes, nor runs out of comparisons, under them.
BENCH_ITEMS = 990
VOTE_RATE_CEILING = 1000
# A phase whose annotators were told to wait (all leased, closing, finished) this often per vote did
# not measure the vote: its study ran short.
WAITS_PER_VOTE_SHORT = 0.1
SHORT = "not measured: the study ran short of comparisons"


def bench_appearances(vote_phases: int, seconds: float) -> int:
    """The vote study's appearances per item M (even, at least the paper's 20): ballot 1's
    ``BENCH_ITEMS · M / 2`` comparisons hold ``vote_phases`` phases of ``seconds`` at
    ``VOTE_RATE_CEILING`` votes a second."""
    needed = vote_phases * seconds * VOTE_RATE_CEILING
    appearances = max(20, math.ceil(2 * needed / BENCH_ITEMS))
    return appearances + appearances % 2


def ran_short(phase: dict) -> bool:
    """Whether a vote phase's annotators were told to wait more than ``WAITS_PER_VOTE_SHORT`` times per
    vote: its study ran out of comparisons, and its rate is not the server's."""
    waits = phase.get("waits")
    if waits is not None:  # wrk's phases count the waits they were told
        told = sum(waits.values())
    else:  # the Python generator's: the 204s to ``next``
        told = phase.get("outcomes", {}).get("next 204", 0)
    return told > WAITS_PER_VOTE_SHORT * max(1, phase.get("votes", 0))


def compose_default(name: str) -> str | None:
    """The default docker-compose.yml gives ``name`` in its app environment (``${NAME:-default}``)."""
    import yaml

    environment = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["x-app"]["environment"]
    value = environment.get(name)
    if value is None:
        return None
    match = re.fullmatch(r"\$\{" + re.escape(name) + r":-([^}]*)\}", str(value))
    return match.group(1) if match else str(value)


# --- the load phases ----------------------------------------------------------------------------


def latency_figures(seconds: list[float]) -> dict:
    milliseconds = [s * 1000 for s in seconds]
    if not milliseconds:
        return {"requests": 0}
    return {
        "requests": len(milliseconds),
        "p50_ms": round(percentile(milliseconds, 50), 1),
        "p95_ms": round(percentile(milliseconds, 95), 1),
        "p99_ms": round(percentile(milliseconds, 99), 1),
    }


async def health_phase(base_url: str, *, clients: int, seconds: float, meter=None) -> dict:
    """``clients`` closed loops on /healthz/ for ``seconds``: requests/s (200s only) and latency."""
    stop = asyncio.Event()
    latencies: list[float] = []
    failures = 0

    # Made before the clock starts: an httpx client builds its TLS context when it is made.
    clients_made = [httpx.AsyncClient(base_url=base_url, timeout=30) for _ in range(clients)]

    async def loop(client: httpx.AsyncClient):
        nonlocal failures
        async with client:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    response = await client.get("/healthz/")
                except httpx.HTTPError:
                    failures += 1
                    continue
                if response.status_code == 200:
                    latencies.append(time.monotonic() - started)
                else:
                    failures += 1

    cpu, started = time.process_time(), time.monotonic()
    cpu_before = meter() if meter else None
    tasks = [asyncio.create_task(loop(client)) for client in clients_made]
    await asyncio.sleep(seconds)
    stop.set()
    elapsed = time.monotonic() - started
    cores = cpu_per_second(cpu_before, meter(), elapsed) if meter else None
    await asyncio.gather(*tasks)
    return {
        "cores": cores,
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests_per_second": round(len(latencies) / elapsed, 1),
        "failures": failures,
        "generator_cpu_percent": round(100 * (time.process_time() - cpu) / elapsed),
        **latency_figures(latencies),
    }


def run_metered(
    command: list[str], meter=None, until=None
) -> tuple[subprocess.CompletedProcess, float, dict, float]:
    """Runs a load generator's ``command`` to its end, or until ``until()`` returns true (polled every
    half second; the generator is then interrupted with SIGINT, after which wrk reports as at its
    end): what it printed, the seconds it took, the cores each part of the stack used meanwhile
    (``meter``) with the generator's own as ``generator``, and the generator's CPU seconds."""
    children_before = os.times()
    cpu_before = meter() if meter else None
    started = time.monotonic()
    if until is None:
        finished = subprocess.run(command, capture_output=True, text=True, check=True)
    else:
        finished = _run_until(command, until)
    elapsed = time.monotonic() - started
    cores = cpu_per_second(cpu_before, meter(), elapsed) if meter else {}
    children_after = os.times()
    generator_cpu = (children_after.children_user - children_before.children_user) + (
        children_after.children_system - children_before.children_system
    )
    cores["generator"] = round(generator_cpu / elapsed, 3)
    return finished, elapsed, cores, generator_cpu


def _run_until(command: list[str], until) -> subprocess.CompletedProcess:
    # Its output goes to files, not pipes: nothing reads a pipe while ``until`` is polled, and wrk
    # blocks once a pipe is full (judgements.lua writes every unexpected answer to stderr).
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        # SIGINT as the default in the generator, whatever this process inherited: a shell ignores it
        # in the commands it runs in the background, and the generator would not stop.
        with subprocess.Popen(
            command,
            stdout=out,
            stderr=err,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
        ) as process:
            try:
                while process.poll() is None:
                    if until():
                        process.send_signal(signal.SIGINT)
                        break
                    time.sleep(0.5)
                process.wait(timeout=60)
            except BaseException:
                process.kill()
                raise
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        raise subprocess.CalledProcessError(process.returncode, command, stdout, stderr)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def wrk_phase(
    base_url: str, *, clients: int, seconds: float, meter=None, path: str = "/healthz/", header: str = ""
) -> dict:
    """``clients`` connections of wrk (a load generator in C, Debian's ``wrk``) on /healthz/ (or
    ``path``, with ``header``) for ``seconds``: the server's floor when the generator is not what limits
    it. The Python generator of ``health_phase`` uses most of a core for its 50 clients on two cores, so
    the floor it measures is partly its own; this one is the server's (with wrk's own CPU in
    ``generator``)."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("the health-wrk phase needs wrk (Debian: apt-get install wrk)")
    command = [wrk, "-t2", f"-c{clients}", f"-d{seconds:g}s", "--latency", f"{base_url}{path}"]
    if header:
        command[1:1] = ["-H", header]
    finished, elapsed, cores, wrk_cpu = run_metered(command, meter)
    output = finished.stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    failed = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)

    def latency_ms(percent: int) -> float | None:
        found = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", output, re.MULTILINE)
        if not found:
            return None
        scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[found.group(2)]
        return round(float(found.group(1)) * scale, 1)

    return {
        "cores": cores,
        "clients": clients,
        "seconds": round(elapsed, 1),
        "requests_per_second": rate,
        "failures": (int(failed.group(1)) if failed else 0)
        + (sum(int(n) for n in errors.groups()) if errors else 0),
        "generator_cpu_percent": round(100 * wrk_cpu / elapsed),
        "p50_ms": latency_ms(50),
        "p99_ms": latency_ms(99),
    }


async def join_annotators(base_url: str, slug: str, *, annotators: int, prefix: str) -> list[str]:
    """``annotators`` join the study through its link (entry page and consent) as ``Annotator`` does;
    returns, for each who joined, the Cookie header of their browser and their CSRF token, tab-separated."""
    config = LoadConfig(base_url=base_url, slug=slug, annotators=annotators, participant_prefix=prefix)
    recorder, stop = Recorder(), asyncio.Event()
    players = [Annotator(number, config, recorder, stop) for number in range(annotators)]
    gate = asyncio.Semaphore(JOIN_CONCURRENCY)

    async def join(player: Annotator) -> str | None:
        async with gate:
            if not await player.join():
                return None
        cookie = "; ".join(f"{c.name}={c.value}" for c in player.client.cookies.jar)
        return f"{cookie}\t{player.client.cookies['csrftoken']}"

    try:
        joined = await asyncio.wait_for(asyncio.gather(*(join(p) for p in players)), timeout=300)
    finally:
        await asyncio.gather(*(p.client.aclose() for p in players))
    return [line for line in joined if line is not None]


def run_judgements_wrk(
    base_url: str,
    slug: str,
    *,
    credentials: Path,
    annotators: int,
    seconds: float,
    think_ms: float = 0,
    spread_ms: float = 0,
    held_in: Path | None = None,
    held_out: Path | None = None,
    seed: int = 0,
    meter=None,
    until=None,
) -> dict:
    """One run of wrk with ``judgements.lua``: ``annotators`` threads and connections, one annotator
    each (the lines of ``credentials``), for ``seconds``; the votes, outcomes, latencies and CPU.
    Runs that follow each other from ``held_out`` to ``held_in`` need different ``seed``s."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("the wrk phases need wrk (Debian: apt-get install wrk)")
    script = Path(__file__).with_name("judgements.lua")
    command = [
        wrk, f"-t{annotators}", f"-c{annotators}", f"-d{math.ceil(seconds)}s", "--timeout", "30s", "-s", str(script),
        base_url, "--", str(credentials), f"/api/studies/{slug}/next/", f"{think_ms:g}", f"{spread_ms:g}",
        str(held_in or "-"), str(held_out or "-"), str(seed),
    ]  # fmt: skip
    finished, elapsed, cores, wrk_cpu = run_metered(command, meter, until)
    output = finished.stdout
    found = re.search(r"^judgements: (.*)$", output, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"wrk printed no judgements line:\n{output}")
    counts = {name: int(value) for name, value in (pair.split("=") for pair in found.group(1).split())}
    return {
        "cores": cores,
        "annotators": annotators,
        "think_ms": think_ms,
        "seconds": round(elapsed, 1),
        "votes": counts["votes_created"],
        "votes_per_second": round(counts["votes_created"] / elapsed, 1),
        "requests": counts["requests"],
        "outcomes": {
            "vote 201": counts["votes_created"],
            "vote 200": counts["votes_already"],
            "vote 409": counts["votes_refused"],
            "vote 429": counts["votes_throttled"],
            "vote other": counts["votes_other"],
            "vote without next": counts["votes_without_next"],
            "next 200": counts["nexts_ok"],
            "next 204": counts["nexts_waiting"],
            "next other": counts["nexts_other"],
        },
        "longest_retry_after_s": counts["longest_retry_after_s"],
        # Answers without a comparison, by the reason the server gave (judgements.lua waits after each).
        "waits": {
            reason: counts[f"waits_{reason}"]
            for reason in ("all_leased", "ballot_closing", "finished", "none_for_you", "other")
        },
        "errors": counts["server_errors"] + counts["socket_errors"],
        "p50_ms": round(counts["p50_us"] / 1000, 1),
        "p95_ms": round(counts["p95_us"] / 1000, 1),
        "p99_ms": round(counts["p99_us"] / 1000, 1),
        "generator_cpu_percent": round(100 * wrk_cpu / elapsed),
        "unexpected_answers": finished.stderr.splitlines()[:20],  # judgements.lua's: votes not 2xx/409/429
    }


def run_coroutine(coroutine):
    """``asyncio.run``, in a thread of its own when this one already runs an event loop (a test after
    Playwright's synchronous API, which keeps one running in the main thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def joined_credentials(base_url: str, slug: str, *, annotators: int, prefix: str, run_dir: Path) -> Path:
    """``annotators`` join from Python (not timed); the file of their credentials for judgements.lua."""
    lines = run_coroutine(join_annotators(base_url, slug, annotators=annotators, prefix=prefix))
    if len(lines) != annotators:
        raise RuntimeError(f"{annotators - len(lines)} of {annotators} annotators could not join")
    credentials = run_dir / f"{prefix}-credentials.tsv"
    credentials.write_text("".join(f"{line}\n" for line in lines))
    return credentials


def wrk_vote_phase(
    base_url: str, slug: str, *, annotators: int, seconds: float, prefix: str, run_dir: Path, meter=None
) -> dict:
    """The vote phase with wrk as the generator (``judgements.lua``): ``annotators`` join first (from
    Python, not timed), then each of wrk's threads is one of them, judging in a closed loop with no
    think time for ``seconds``. With the health-wrk phase, the issue's ratio with the same generator for
    both phases, and a generator that is not what limits either (wrk uses about a tenth of a core)."""
    credentials = joined_credentials(base_url, slug, annotators=annotators, prefix=prefix, run_dir=run_dir)
    report = run_judgements_wrk(
        base_url, slug, credentials=credentials, annotators=annotators, seconds=seconds, meter=meter
    )
    return {**report, "joined": annotators}


MAX_ROUNDS = 9


def wrk_rounds(stack, *, rounds: int, seconds: float, meter, log) -> dict:
    """The issue's ratio ``rounds`` times on one stack: health-wrk then vote-wrk, alternated, each round's
    vote phase with annotators of its own. One ratio carries the drift of the machine between its two
    phases (10% between runs here, BENCHMARKS.md); the median of several does not. Returns the rounds,
    their ratios' median and range, and the two phases of the round whose ratio is the median.

    A round whose healthz phase served under ``DISTURBED_HEALTHZ`` of the best round's rate is marked
    disturbed and left out of the median (while any round is not). On this machine such phases came
    in spells, at half the rate and with 60% more CPU per request for the same code (BENCHMARKS.md,
    2026-11-25): their ratio flatters the vote, and two of three rounds once gave a median of 1.88
    where the others gave about 4."""
    pairs = []
    for number in range(1, rounds + 1):
        health = wrk_phase(stack.base_url, clients=HEALTH_CLIENTS, seconds=seconds, meter=meter)
        vote = wrk_vote_phase(
            stack.base_url, "bench", annotators=VOTE_ANNOTATORS, seconds=seconds,
            prefix=f"wrk{number}", run_dir=stack.run_dir, meter=meter,
        )  # fmt: skip
        if not vote["votes_per_second"]:
            raise RuntimeError(f"round {number}: no votes were recorded")
        ratio = health["requests_per_second"] / vote["votes_per_second"]
        log(f"round {number}: {health['requests_per_second']:.0f} healthz/s, {vote['votes_per_second']:.1f} "
            f"votes/s, N {ratio:.2f}")  # fmt: skip
        pairs.append((ratio, health, vote))
    best = max(health["requests_per_second"] for _, health, _ in pairs)
    disturbed = [
        number
        for number, (_, health, _) in enumerate(pairs, start=1)
        if health["requests_per_second"] < DISTURBED_HEALTHZ * best
    ]
    counted = [pair for number, pair in enumerate(pairs, start=1) if number not in disturbed]
    if disturbed:
        log(f"rounds {disturbed}: healthz under {DISTURBED_HEALTHZ:.0%} of the best round's rate; left out")
    ordered = sorted(counted, key=lambda pair: pair[0])
    _, health, vote = ordered[(len(ordered) - 1) // 2]  # an odd count's middle, an even count's lower one
    return {
        "median": round(statistics.median(pair[0] for pair in counted), 2),
        "range": [round(ordered[0][0], 2), round(ordered[-1][0], 2)],
        "disturbed": disturbed,
        "each": [
            {
                "healthz_per_second": h["requests_per_second"],
                "votes_per_second": v["votes_per_second"],
                "ratio": round(r, 2),
                "cpu_ms_per_healthz": round(
                    1000 * sum(h["cores"][p] for p in _parts(h["cores"])) / h["requests_per_second"], 3
                ),
                "cpu_ms_per_vote": round(
                    1000 * sum(v["cores"][p] for p in _parts(v["cores"])) / v["votes_per_second"], 3
                ),
                "healthz_ms_by_part": {
                    part: round(1000 * h["cores"][part] / h["requests_per_second"], 3)
                    for part in h["cores"]
                    if h["cores"][part] >= 0.005
                },
                "vote_ms_by_part": {
                    part: round(1000 * v["cores"][part] / v["votes_per_second"], 3)
                    for part in _parts(v["cores"])
                },
                "errors": v["errors"],
            }
            for r, h, v in pairs
        ],  # fmt: skip
        "median_round": (health, vote),
    }


def rounds_markdown(report: dict) -> str:
    rounds = report.get("rounds")
    if not rounds:
        return ""
    lines = [
        "| round | healthz/s | votes/s | N | CPU ms per healthz / per vote | … per vote: web / PostgreSQL "
        "| errors |",
        "|---|---|---|---|---|---|---|",
    ]
    disturbed = rounds.get("disturbed", [])
    for number, row in enumerate(rounds["each"], start=1):
        parts = row.get("vote_ms_by_part", {})
        mark = " (healthz disturbed: left out)" if number in disturbed else ""
        lines.append(
            f"| {number}{mark} | {row['healthz_per_second']:,.0f} | {row['votes_per_second']:,.1f} | {row['ratio']:.2f} "
            f"| {row['cpu_ms_per_healthz']:.2f} / {row['cpu_ms_per_vote']:.2f} "
            f"| {parts.get('web', 0):.2f} / {parts.get('postgres', 0):.2f} | {row['errors']} |"
        )
    low, high = rounds["range"]
    lines.append(f"| median | | | **{rounds['median']:.2f}** ({low:.2f} to {high:.2f}) | | | |")
    return "\n".join(lines)


def wrk_crowd_phase(
    base_url: str,
    slug: str,
    *,
    annotators: int,
    think_ms: float,
    seconds: float,
    prefix: str,
    run_dir: Path,
    meter=None,
) -> dict:
    """The crowd phase with wrk as the generator: ``annotators`` join (from Python), then two runs of
    wrk. The first, the arrivals: each annotator's first GET next at a uniform time within one think
    time, then judgements with think time for one think time more (its latencies are those of the
    arrivals and of the first judgements). The second, measured: the same annotators, each starting
    from the comparison they held, judge for ``seconds``. On two cores the Python generator of the
    crowd phase takes half a core from the server; wrk takes a few hundredths."""
    credentials = joined_credentials(base_url, slug, annotators=annotators, prefix=prefix, run_dir=run_dir)
    held = run_dir / f"{prefix}-held.txt"
    arrivals = run_judgements_wrk(
        base_url, slug, credentials=credentials, annotators=annotators, seconds=2 * think_ms / 1000,
        think_ms=think_ms, spread_ms=think_ms, held_out=held,
    )  # fmt: skip
    steady = run_judgements_wrk(
        base_url, slug, credentials=credentials, annotators=annotators, seconds=seconds,
        think_ms=think_ms, held_in=held, seed=1, meter=meter,
    )  # fmt: skip
    return {**steady, "joined": annotators, "arrivals": arrivals}


def staff_token(stack: Stack) -> str:
    """A staff account in the stack's database and its API token: the live-wrk phase's researcher."""
    code = (
        "from django.contrib.auth import get_user_model\n"
        "from rest_framework.authtoken.models import Token\n"
        "user, _ = get_user_model().objects.get_or_create(username='bench-researcher', defaults={'is_staff': True})\n"
        "print(Token.objects.get_or_create(user=user)[0].key)\n"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT, env=stack.app_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"no staff token:\n{result.stdout}{result.stderr}")
    return result.stdout.strip().splitlines()[-1]


class LivePoller(threading.Thread):
    """One researcher reading ``url`` every ``period`` seconds until stopped: latencies and statuses."""

    def __init__(self, url: str, token: str, period: float):
        super().__init__(daemon=True)
        self.url, self.token, self.period = url, token, period
        self.stopped = threading.Event()
        self.seconds: list[float] = []
        self.statuses: dict[str, int] = {}

    def run(self) -> None:
        headers = {"Authorization": f"Token {self.token}"}
        with httpx.Client(headers=headers, timeout=30) as client:
            next_at = time.monotonic()
            while not self.stopped.wait(max(0.0, next_at - time.monotonic())):
                next_at += self.period
                started = time.perf_counter()
                try:
                    status = str(client.get(self.url).status_code)
                except httpx.HTTPError as error:
                    status = type(error).__name__
                self.seconds.append(time.perf_counter() - started)
                self.statuses[status] = self.statuses.get(status, 0) + 1


def wrk_live_phase(stack: Stack, slug: str, *, seconds: float, meter=None, log=print) -> dict:
    """The live view's cost: wrk on /healthz/ and then on the live endpoint (both idle otherwise), and
    the crowd of crowd-wrk on ``slug`` while a researcher polls its live view every 2 s."""
    token = staff_token(stack)
    path = f"/api/studies/{slug}/live/"
    health = wrk_phase(stack.base_url, clients=HEALTH_CLIENTS, seconds=seconds, meter=meter)
    live = wrk_phase(
        stack.base_url, clients=HEALTH_CLIENTS, seconds=seconds, meter=meter, path=path,
        header=f"Authorization: Token {token}",
    )  # fmt: skip
    log(f"live-wrk: healthz {health['requests_per_second']}/s, live {live['requests_per_second']}/s")
    poller = LivePoller(f"{stack.base_url}{path}", token, LIVE_POLL_SECONDS)
    poller.start()
    try:
        crowd = wrk_crowd_phase(
            stack.base_url, slug, annotators=CROWD_ANNOTATORS, think_ms=CROWD_THINK_MS, seconds=seconds,
            prefix=slug, run_dir=stack.run_dir, meter=meter,
        )  # fmt: skip
    finally:
        poller.stopped.set()
        poller.join()

    def server_cpu_ms(phase: dict, rate: str = "requests_per_second") -> float | None:
        # The stack's processes (not wrk, not the parts listed twice as "postgres/…") per request.
        cores = sum(v for part, v in phase["cores"].items() if "/" not in part and part != "generator")
        return round(1000 * cores / phase[rate], 3) if phase[rate] else None

    return {
        "health": health,
        "live": live,
        "cpu_ms_per_healthz": server_cpu_ms(health),
        "cpu_ms_per_live_read": server_cpu_ms(live),
        "cpu_ms_per_vote_polled": server_cpu_ms(crowd, "votes_per_second"),
        "healthz_per_live_read": round(health["requests_per_second"] / live["requests_per_second"], 2)
        if live["requests_per_second"]
        else None,
        "crowd": crowd,
        "poll": {
            **latency_figures(poller.seconds),
            "statuses": poller.statuses,
            "period_s": LIVE_POLL_SECONDS,
        },
    }


def ballot_timeline(database_url: str, slug: str) -> list[dict]:
    """The study's ballots in order: when each opened and closed, what its close took, its first and
    last votes, the vote with a tenth of them still to come, and each annotator's first vote in it
    (in time order)."""
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(database_url, autocommit=True, row_factory=dict_row) as db:
        return db.execute(
            """SELECT b.number, b.status, b.comparison_count, b.opened_at, b.closed_at, b.close_seconds,
                      (SELECT count(*) FROM collection_vote v WHERE v.ballot_id = b.id) AS votes,
                      (SELECT min(v.created_at) FROM collection_vote v WHERE v.ballot_id = b.id) AS first_vote,
                      (SELECT max(v.created_at) FROM collection_vote v WHERE v.ballot_id = b.id) AS last_vote,
                      (SELECT percentile_disc(0.9) WITHIN GROUP (ORDER BY v.created_at)
                       FROM collection_vote v WHERE v.ballot_id = b.id) AS tenth_left_vote,
                      (SELECT array_agg(first ORDER BY first) FROM (
                           SELECT min(v.created_at) AS first FROM collection_vote v WHERE v.ballot_id = b.id
                           GROUP BY v.annotator_id) AS firsts) AS annotator_first_votes
               FROM collection_ballot b JOIN collection_study s ON s.id = b.study_id
               WHERE s.slug = %s ORDER BY b.number""",
            [slug],
        ).fetchall()


def ballot_boundaries(rows: list[dict]) -> list[dict]:
    """Per closed ballot (``ballot_timeline``'s rows), in seconds: how long its last tenth of votes
    took (the annotators who hold its last comparisons: everyone else finds them leased), its close's
    own time (the task's),
    from its last vote to its close, to the next ballot's opening, to the next ballot's first vote, and
    to the first votes in it of half and of all of the annotators who voted in it (the pause each saw,
    at least: one who came back later had stopped on their own)."""

    def seconds(start, end):
        return None if start is None or end is None else round((end - start).total_seconds(), 2)

    boundaries = []
    for ballot, following in zip(rows, [*rows[1:], None], strict=True):
        if ballot["status"] != "closed":
            continue
        following = following or {}
        firsts = following.get("annotator_first_votes") or []
        half = firsts[(len(firsts) - 1) // 2] if firsts else None
        boundaries.append(
            {
                "ballot": ballot["number"],
                "comparisons": ballot["comparison_count"],
                "votes": ballot["votes"],
                "last_tenth_s": seconds(ballot["tenth_left_vote"], ballot["last_vote"]),
                "close_task_s": None
                if ballot["close_seconds"] is None
                else round(ballot["close_seconds"], 2),
                "last_vote_to_closed_s": seconds(ballot["last_vote"], ballot["closed_at"]),
                "last_vote_to_next_open_s": seconds(ballot["last_vote"], following.get("opened_at")),
                "last_vote_to_next_vote_s": seconds(ballot["last_vote"], following.get("first_vote")),
                "next_open_to_next_vote_s": seconds(following.get("opened_at"), following.get("first_vote")),
                "last_vote_to_half_back_s": seconds(ballot["last_vote"], half),
                "last_vote_to_all_back_s": seconds(ballot["last_vote"], firsts[-1] if firsts else None),
                "annotators_back": len(firsts),
            }
        )
    return boundaries


def study_finished(database_url: str, slug: str) -> bool:
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as db:
        (status,) = db.execute("SELECT status FROM collection_study WHERE slug = %s", [slug]).fetchone()
    return status == "finished"


def wrk_ballots_phase(
    base_url: str,
    database_url: str,
    slug: str,
    *,
    annotators: int,
    think_ms: float,
    seconds: float,
    prefix: str,
    run_dir: Path,
    meter=None,
) -> dict:
    """A whole study voted through by ``annotators`` driven by wrk (``judgements.lua``), thinking
    ``think_ms`` on average per judgement, their arrivals spread over one think time: one run of wrk,
    stopped once the study is finished, or after ``seconds``. Returns its votes, answers and
    latencies, and the ballots' boundaries."""
    credentials = joined_credentials(base_url, slug, annotators=annotators, prefix=prefix, run_dir=run_dir)
    report = run_judgements_wrk(
        base_url, slug, credentials=credentials, annotators=annotators, think_ms=think_ms,
        spread_ms=think_ms, seconds=seconds, meter=meter, until=lambda: study_finished(database_url, slug),
    )  # fmt: skip
    timeline = ballot_timeline(database_url, slug)
    return {
        **report,
        "finished": study_finished(database_url, slug),
        "ballots_closed": sum(row["status"] == "closed" for row in timeline),
        "ballots": len(timeline),
        "boundaries": ballot_boundaries(timeline),
        "joined": annotators,
    }


LAG_PROBE_SECONDS = 0.01


async def event_loop_lag(lags: list[float], stop: asyncio.Event) -> None:
    """Until ``stop``: how late the generator's own event loop wakes a 10 ms sleep, in seconds. A
    response that arrives while the loop is busy with other annotators waits that long before it is
    read, and its measured latency includes the wait: the generator's share of the percentiles."""
    while not stop.is_set():
        asked = time.monotonic()
        await asyncio.sleep(LAG_PROBE_SECONDS)
        lags.append(max(0.0, time.monotonic() - asked - LAG_PROBE_SECONDS))


async def annotator_phase(
    base_url: str, slug: str, *, annotators: int, think_ms: float, seconds: float, prefix: str, meter=None
) -> dict:
    """``annotators`` join (timed apart), then judge for ``seconds``; the figures of that window."""
    recorder, stop = Recorder(), asyncio.Event()
    config = LoadConfig(
        base_url=base_url,
        slug=slug,
        annotators=annotators,
        seconds=seconds,
        think_ms=think_ms,
        participant_prefix=prefix,
    )
    players = [Annotator(number, config, recorder, stop) for number in range(annotators)]
    gate = asyncio.Semaphore(JOIN_CONCURRENCY)

    async def join(player: Annotator) -> bool:
        async with gate:
            return await player.join()

    joined_started = time.monotonic()
    joined = await asyncio.wait_for(asyncio.gather(*(join(p) for p in players)), timeout=300)
    join_seconds = time.monotonic() - joined_started

    async def judge(player: Annotator) -> None:
        # With think time, the first comparisons are spread over one think time, as arrivals are:
        # the crowd does not all click at the same instant.
        await asyncio.sleep(player.random.uniform(0, think_ms / 1000))
        await player.judge()

    tasks = [asyncio.create_task(judge(p)) for p, ok in zip(players, joined, strict=True) if ok]
    await asyncio.sleep(think_ms / 1000)  # the spread start is not measured
    window_start = recorder.now()
    cpu, started = time.process_time(), time.monotonic()
    cpu_before = meter() if meter else None
    lags: list[float] = []
    lag_task = asyncio.create_task(event_loop_lag(lags, stop))
    await asyncio.wait(tasks, timeout=seconds)
    window_end = recorder.now()
    elapsed = time.monotonic() - started
    generator_cpu = time.process_time() - cpu
    cores = cpu_per_second(cpu_before, meter(), elapsed) if meter else None
    stop.set()
    await lag_task
    await asyncio.wait(tasks, timeout=10)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(p.client.aclose() for p in players))

    # Counted by when they ended: the votes and outcomes of the window. Timed only if they also began
    # in it: a request sent during the spread start (the crowd's first comparisons, 500 in 2 s), which
    # waited behind the others sent then, is timed apart as an arrival.
    window = recorder.window(window_start, window_end)
    timed = [s for s in window if s.at - s.seconds >= window_start]
    timed_ids = {id(s) for s in timed}
    arrivals = [
        s for s in recorder.window(0.0, window_end) if s.endpoint != "join" and id(s) not in timed_ids
    ]
    by_endpoint = {endpoint: [s for s in timed if s.endpoint == endpoint] for endpoint in ("next", "vote")}
    outcomes: dict[str, int] = {}
    for sample in window:
        key = f"{sample.endpoint} {sample.outcome}"
        outcomes[key] = outcomes.get(key, 0) + 1
    errors = sum(1 for s in window + arrivals if not s.outcome.isdigit() or s.outcome.startswith("5"))
    votes = sum(1 for s in window if s.endpoint == "vote" and s.outcome == "201")
    return {
        "cores": cores,
        "annotators": annotators,
        "joined": sum(joined),
        "think_ms": think_ms,
        "join_seconds": round(join_seconds, 1),
        "join": latency_figures([s.seconds for s in recorder.samples if s.endpoint == "join"]),
        "seconds": round(elapsed, 1),
        "votes": votes,
        "votes_per_second": round(votes / elapsed, 1),
        "next": latency_figures([s.seconds for s in by_endpoint["next"]]),
        "vote": latency_figures([s.seconds for s in by_endpoint["vote"]]),
        "all": latency_figures([s.seconds for s in by_endpoint["next"] + by_endpoint["vote"]]),
        "arrivals": latency_figures([s.seconds for s in arrivals]),
        "errors": errors,
        "outcomes": dict(sorted(outcomes.items())),
        "generator_cpu_percent": round(100 * generator_cpu / elapsed),
        "generator_lag": latency_figures(lags),
    }


# --- the server's processes and the database ---------------------------------------------------


def worker_rss_mb(stack: Stack) -> list[float]:
    """Resident memory (VmRSS, MB) of every gunicorn worker: the children of the master."""
    sizes = []
    for pid in stack.children("web"):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        kilobytes = int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1))
        sizes.append(round(kilobytes / 1024, 1))
    return sizes


def settle(stack: Stack, slugs: list[str], timeout: float) -> None:
    """Waits until no ballot is fully voted and still open (its close has run), at most ``timeout``."""
    import psycopg

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with psycopg.connect(stack.database_url, autocommit=True) as db:
            (pending,) = db.execute(
                """SELECT count(*) FROM collection_ballot b JOIN collection_study s ON s.id = b.study_id
                   WHERE s.slug = ANY(%s) AND b.status = 'open'
                     AND (SELECT COALESCE(SUM(part.votes), 0) FROM collection_ballotcounter part
                          WHERE part.ballot_id = b.id) >= b.comparison_count""",
                [slugs],
            ).fetchone()
        if pending == 0:
            return
        time.sleep(0.5)


def _process_cpu_seconds(pid: int, *, with_children: bool) -> float:
    """utime + stime of ``pid`` (+ cutime + cstime: its children that have ended), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
    if with_children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid`` and every process below it, ended children included."""
    total = _process_cpu_seconds(pid, with_children=True)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return total + sum(_tree_cpu_seconds(int(child)) for child in children)


# PostgreSQL's processes by the title each gives itself (``postgres: walwriter``); a client's
# connection is titled with its user, database and address, and counts as a backend.
_POSTGRES_KINDS = {
    "checkpointer": "checkpointer",
    "background writer": "background writer",
    "walwriter": "walwriter",
    "autovacuum": "autovacuum",
}


def _postgres_cpu_seconds(postmaster: int) -> dict[str, float]:
    """CPU seconds of PostgreSQL's processes by kind, as ``postgres/<kind>`` (they add up to
    ``postgres``): the client backends, autovacuum, the WAL writer, the checkpointer, the background
    writer, and ``ended`` (the postmaster and the processes that have exited, autovacuum workers and
    closed connections among them: it cannot tell them apart)."""
    figures = {f"postgres/{kind}": 0.0 for kind in [*sorted(set(_POSTGRES_KINDS.values())), "backends"]}
    figures["postgres/ended"] = _process_cpu_seconds(postmaster, with_children=True)
    try:
        children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
    except OSError:
        children = []
    for child in children:
        try:
            title = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        title = title.removeprefix("postgres: ")
        kind = next((kind for prefix, kind in _POSTGRES_KINDS.items() if prefix in title), "backends")
        figures[f"postgres/{kind}"] += _tree_cpu_seconds(int(child))
    return figures


def _parts(figures: dict[str, float]) -> list[str]:
    """The stack's parts in a snapshot, without PostgreSQL's breakdown (``postgres/<kind>``)."""
    return sorted(name for name in figures if "/" not in name)


def cpu_snapshot(stack: Stack) -> dict[str, float]:
    """CPU seconds used so far by each part of the stack and by this load generator."""
    roots = {name: process.pid for name, process in stack.processes.items()}
    try:  # pg_ctl starts the postmaster as a daemon: its pid is the first line of postmaster.pid
        roots["postgres"] = int((stack.pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    snapshot = {name: _tree_cpu_seconds(pid) for name, pid in roots.items()}
    if "postgres" in roots:
        snapshot.update(_postgres_cpu_seconds(roots["postgres"]))
    times = os.times()
    snapshot["generator"] = times.user + times.system
    return snapshot


def wait_until_quiet(stack: Stack, *, timeout: float = 300.0, log=print) -> float:
    """Waits until the stack's processes use under a tenth of a core (a Celery worker compiles the
    metrics kernels as it starts: measured beside the server, that work would lower its floor).
    Returns the seconds waited."""
    started = time.monotonic()
    before = cpu_snapshot(stack)
    while time.monotonic() - started < timeout:
        time.sleep(2.0)
        after = cpu_snapshot(stack)
        busy = sum(after[name] - before.get(name, 0.0) for name in _parts(after) if name != "generator") / 2.0
        if busy < 0.1:
            return time.monotonic() - started
        before = after
    log(f"the stack was still busy after {timeout:.0f} s; measuring anyway")
    return time.monotonic() - started


def cpu_per_second(before: dict[str, float], after: dict[str, float], seconds: float) -> dict[str, float]:
    """Cores used by each part during a phase: CPU seconds per second of wall time."""
    return {name: round((after[name] - before.get(name, 0.0)) / seconds, 3) for name in sorted(after)}


# --- the report --------------------------------------------------------------------------------


def _ms(figures: dict, key: str) -> str:
    return f"{figures[key]:,.0f}" if key in figures else "–"


def markdown(report: dict) -> str:
    rows = [("figure", "value", "goal")]
    health, vote, crowd = report.get("health"), report.get("vote"), report.get("crowd")
    if health:
        rows.append(
            (
                f"`/healthz/` requests/s ({health['clients']} clients)",
                f"{health['requests_per_second']:,.0f}",
                "",
            )
        )
    if vote:
        rows += [
            (
                f"votes/s ({vote['annotators']} annotators, no think time)",
                f"{vote['votes_per_second']:,.1f}",
                "",
            ),
            ("`vote` p50 / p95 ms", f"{_ms(vote['vote'], 'p50_ms')} / {_ms(vote['vote'], 'p95_ms')}", ""),
            ("`next` p50 / p95 ms", f"{_ms(vote['next'], 'p50_ms')} / {_ms(vote['next'], 'p95_ms')}", ""),
            ("joining (entry page, consent) p50 ms", _ms(vote["join"], "p50_ms"), ""),
        ]
    if health and vote and vote["votes_per_second"]:
        rows.append(
            (
                "**a vote costs N healthz requests**",
                SHORT if ran_short(vote) else f"**{report['healthz_per_vote']:.1f}**",
                f"≤ {GOAL_HEALTHZ_PER_VOTE:g}",
            )
        )
    wrk = report.get("health_wrk")
    if wrk:
        rows.append(
            (
                f"`/healthz/` requests/s, wrk ({wrk['clients']} connections)",
                f"{wrk['requests_per_second']:,.0f}",
                "",
            )
        )
    if wrk and vote and vote["votes_per_second"]:
        rows.append(
            (
                "… a vote costs N of wrk's healthz requests",
                SHORT if ran_short(vote) else f"{report['wrk_healthz_per_vote']:.1f}",
                "",
            )
        )
    vote_wrk = report.get("vote_wrk")
    if vote_wrk:
        rows += [
            (
                f"votes/s, wrk ({vote_wrk['joined']} annotators, no think time)",
                f"{vote_wrk['votes_per_second']:,.1f}",
                "",
            ),
            ("… `vote` and `next` p50 / p95 ms, errors", f"{vote_wrk['p50_ms']:g} / {vote_wrk['p95_ms']:g}, "
             f"{vote_wrk['errors']}", "0 errors"),
        ]  # fmt: skip
    if wrk and vote_wrk and vote_wrk["votes_per_second"]:
        rows.append(
            (
                "**a vote costs N healthz requests, both from wrk**",
                SHORT if ran_short(vote_wrk) else f"**{report['wrk_healthz_per_wrk_vote']:.1f}**",
                f"≤ {GOAL_HEALTHZ_PER_VOTE:g}",
            )
        )
    if crowd:
        rows += [
            (
                f"{crowd['annotators']} annotators, {crowd['think_ms'] / 1000:g} s think: p50 / p95 ms",
                f"{_ms(crowd['all'], 'p50_ms')} / {_ms(crowd['all'], 'p95_ms')}",
                f"p95 < {GOAL_CROWD_P95_MS:g}",
            ),
            (
                f"… their first comparisons, asked for within {crowd['think_ms'] / 1000:g} s: p50 / p95 ms",
                f"{_ms(crowd['arrivals'], 'p50_ms')} / {_ms(crowd['arrivals'], 'p95_ms')}",
                "",
            ),
            (
                "… votes/s, errors (5xx, network)",
                f"{crowd['votes_per_second']:,.1f}, {crowd['errors']}",
                "0 errors",
            ),
        ]
        if crowd.get("generator_lag", {}).get("requests"):
            lag = crowd["generator_lag"]
            rows.append(
                (
                    "… the generator's own event-loop lag p50 / p95 ms (part of the latencies)",
                    f"{_ms(lag, 'p50_ms')} / {_ms(lag, 'p95_ms')}",
                    "",
                )
            )
    crowd_wrk = report.get("crowd_wrk")
    if crowd_wrk:
        arrivals = crowd_wrk["arrivals"]
        think = f"{crowd_wrk['think_ms'] / 1000:g} s"
        rows += [
            (
                f"{crowd_wrk['joined']} annotators, {think} think, wrk: p50 / p95 ms",
                f"{crowd_wrk['p50_ms']:g} / {crowd_wrk['p95_ms']:g}",
                f"p95 < {GOAL_CROWD_P95_MS:g}",
            ),
            (
                f"… their arrivals within {think} and first judgements: p50 / p95 ms",
                f"{arrivals['p50_ms']:g} / {arrivals['p95_ms']:g}",
                "",
            ),
            (
                "… votes/s, errors (5xx, network) of both",
                f"{crowd_wrk['votes_per_second']:,.1f}, {crowd_wrk['errors'] + arrivals['errors']}",
                "0 errors",
            ),
        ]
    live = report.get("live_wrk")
    if live:
        poll = live["poll"]
        rows += [
            (
                "a live read (`GET /api/studies/<slug>/live/`, wrk, idle server) costs N `/healthz/` requests",
                f"{live['healthz_per_live_read']:g} ({live['live']['requests_per_second']:,.0f} "
                f"vs {live['health']['requests_per_second']:,.0f} requests/s)",
                "",
            ),
            (
                "… the server's CPU per request: live read / `/healthz/` (ms)",
                f"{live['cpu_ms_per_live_read']:g} / {live['cpu_ms_per_healthz']:g}",
                "",
            ),
            (
                f"{live['crowd']['joined']} annotators, wrk, with a researcher polling the live view every "
                f"{poll['period_s']:g} s: p50 / p95 ms",
                f"{live['crowd']['p50_ms']:g} / {live['crowd']['p95_ms']:g}"
                + (f" (without: {crowd_wrk['p50_ms']:g} / {crowd_wrk['p95_ms']:g})" if crowd_wrk else ""),
                f"p95 < {GOAL_CROWD_P95_MS:g}",
            ),
            (
                "… the server's CPU per vote with the researcher polling (ms)",
                f"{live['cpu_ms_per_vote_polled']:g}",
                "",
            ),
            (
                "… the researcher's reads meanwhile: p50 / p95 ms, statuses",
                f"{_ms(poll, 'p50_ms')} / {_ms(poll, 'p95_ms')}, {poll['statuses']}",
                "",
            ),
        ]
    ballots = report.get("ballots_wrk")
    if ballots:
        rows += [
            (
                f"a whole study ({ballots['ballots']} ballots), {ballots['annotators']} annotators, "
                f"{ballots['think_ms'] / 1000:g} s think, wrk: finished",
                f"{'yes' if ballots['finished'] else 'no'}, {ballots['ballots_closed']} ballots closed "
                f"in {ballots['seconds']:g} s",
                "yes",
            ),
            (
                "… votes/s (arrivals and the pauses between ballots included); p50 / p95 ms; errors",
                f"{ballots['votes_per_second']:,.1f}; {ballots['p50_ms']:g} / {ballots['p95_ms']:g}; "
                f"{ballots['errors']}",
                "0 errors",
            ),
        ]
    if report.get("worker_rss_mb"):
        sizes = report["worker_rss_mb"]
        rows.append(
            ("web worker RSS after the load, MB (max)", f"{max(sizes):,.0f}", f"< {GOAL_WORKER_RSS_MB:g}")
        )
    if "invariants_held" in report:
        rows.append(
            ("invariants after the load", "held" if report["invariants_held"] else "**broken**", "held")
        )
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |" for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def boundaries_markdown(report: dict) -> str:
    """The ballots-wrk phase's ballot boundaries, one row per closed ballot."""
    ballots = report.get("ballots_wrk")
    if not ballots or not ballots["boundaries"]:
        return ""
    lines = [
        "| ballot | comparisons | its last tenth of votes s | close task s | last vote → closed s "
        "| → next ballot open s | → its first vote s | → half the annotators back s | → all back s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in ballots["boundaries"]:
        cells = [
            row["ballot"], f"{row['comparisons']:,}", row["last_tenth_s"], row["close_task_s"],
            row["last_vote_to_closed_s"],
            row["last_vote_to_next_open_s"], row["last_vote_to_next_vote_s"], row["last_vote_to_half_back_s"],
            None if row["last_vote_to_all_back_s"] is None
            else f"{row['last_vote_to_all_back_s']} ({row['annotators_back']})",
        ]  # fmt: skip
        lines.append("| " + " | ".join("–" if cell is None else str(cell) for cell in cells) + " |")
    return "\n".join(lines)


def cpu_markdown(report: dict) -> str:
    """Where the CPU went: cores used by each part, and CPU ms per healthz request and per vote."""
    phases = [
        (name, report[name], rate)
        for name, rate in (
            ("health", "requests_per_second"),
            ("health_wrk", "requests_per_second"),
            ("vote", "votes_per_second"),
            ("vote_wrk", "votes_per_second"),
            ("crowd_wrk", "votes_per_second"),
        )
        if report.get(name, {}).get("cores") and report[name].get(rate)
    ]
    if not phases:
        return ""
    parts = sorted({part for _, figures, _ in phases for part in _parts(figures["cores"])})
    kinds = sorted({part for _, figures, _ in phases for part in figures["cores"]} - set(parts))
    header = ["part"] + [
        f"{name}: cores, CPU ms per {'request' if name.startswith('health') else 'vote'}"
        for name, _, _ in phases
    ]
    rows = [header]
    for part in [*parts, "all", *kinds]:
        cells = [part.replace("postgres/", "… postgres: ")]
        for _, figures, rate in phases:
            cores = figures["cores"].get(part, 0.0)
            if part == "all":
                cores = sum(figures["cores"][name] for name in _parts(figures["cores"]))
            cells.append(f"{cores:.2f}, {1000 * cores / figures[rate]:.2f}")
        rows.append(cells)
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    lines.insert(1, "|" + "|".join("---" for _ in header) + "|")
    return "\n".join(lines)


# --- the database's statements (--statements) ---------------------------------------------------

STATEMENT_SETTINGS = {"shared_preload_libraries": "'pg_stat_statements'", "pg_stat_statements.track": "all"}
STATEMENTS_SHOWN = 30


def statements_reset(stack: Stack) -> None:
    import psycopg

    with psycopg.connect(stack.database_url, autocommit=True) as db:
        db.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        db.execute("SELECT pg_stat_statements_reset()")


def statements_read(stack: Stack, votes: int) -> list[dict]:
    """The statements the database ran since the reset, by their time (planning and running, which is
    not all of the server's CPU: parsing, the protocol and the commit are not in it), per vote."""
    import psycopg

    with psycopg.connect(stack.database_url, autocommit=True) as db:
        rows = db.execute(
            """SELECT calls, total_exec_time + total_plan_time, regexp_replace(query, '\\s+', ' ', 'g')
               FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
               ORDER BY 2 DESC LIMIT %s""",
            [STATEMENTS_SHOWN],
        ).fetchall()
    return [
        {"calls_per_vote": calls / votes, "ms_per_vote": total / votes, "statement": query[:140]}
        for calls, total, query in rows
    ]


def statements_markdown(report: dict) -> str:
    lines = []
    for phase in ("vote", "vote_wrk"):
        rows = report.get(phase, {}).get("statements")
        if rows:
            lines += [f"| {phase}: statement | calls per vote | ms per vote |", "|---|---|---|"]
            lines += _statement_rows(rows)
    return "\n".join(lines)


def _statement_rows(rows: list[dict]) -> list[str]:
    lines = []
    for row in rows:
        text = row["statement"].replace("|", "\\|")
        lines.append(f"| `{text}` | {row['calls_per_vote']:.2f} | {row['ms_per_vote']:.3f} |")
    return lines


# --- the run -----------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    main = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    main.add_argument("--label", default="", help="a name for this run in the report")
    main.add_argument(
        "--phases",
        default=None,
        help="comma-separated: health, health-wrk, vote, vote-wrk, crowd (default: all; the wrk phases if wrk "
        "is installed)",
    )
    main.add_argument(
        "--statements",
        action="store_true",
        help="load pg_stat_statements and print the vote phase's statements, by time per vote",
    )
    main.add_argument("--seconds", type=float, default=30, help="measured seconds of each phase")
    main.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run health-wrk and vote-wrk this many times, alternated, on one stack; N is the median of "
        "the rounds' ratios (the machine's drift between two phases is what makes one ratio noisy)",
    )
    main.add_argument(
        "--crowd-seconds", type=float, default=None, help="of the crowd phase (default: --seconds)"
    )
    main.add_argument("--web-workers", type=int, default=None, help="gunicorn processes (default: compose's)")
    main.add_argument(
        "--threads", type=int, default=None, help="gunicorn threads per process (default: compose's)"
    )
    main.add_argument("--worker-class", default=None, help="gunicorn worker class, e.g. sync or gthread")
    main.add_argument(
        "--no-nginx", action="store_true", help="clients reach gunicorn directly, not through nginx"
    )
    main.add_argument(
        "--throttle-rate",
        default="1000000/s",
        help='every THROTTLE_* rate; "off" for none (the N of the guard)',
    )
    main.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="for web, worker, beat"
    )
    main.add_argument(
        "--postgres-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="added to the cluster's postgresql.conf as written (quote strings), e.g. commit_delay=20",
    )
    main.add_argument("--postgres-port", type=int, default=5514)
    main.add_argument("--redis-port", type=int, default=6314)
    main.add_argument("--web-port", type=int, default=8114)
    main.add_argument("--time-limit", type=float, default=900, help="seconds before the whole run is stopped")
    main.add_argument("--keep", action="store_true", help="keep the run directory (logs, database)")
    main.add_argument("--json", type=Path, default=None, help="also write every figure here")
    return main


def _stop_at_time_limit(signum, frame):
    raise KeyboardInterrupt(f"the time limit ran out (signal {signum})")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not 1 <= args.rounds <= MAX_ROUNDS:
        raise SystemExit(f"--rounds must be 1 to {MAX_ROUNDS}, got {args.rounds}")
    phases = {phase.strip() for phase in (args.phases or DEFAULT_PHASES).split(",") if phase.strip()}
    if args.phases is None and shutil.which("wrk") is None:
        phases -= WRK_PHASES
        print("wrk is not installed: the health-wrk and vote-wrk phases are left out", file=sys.stderr)
    environment = {}
    for name in DEPLOYED_VARIABLES:  # as docker-compose.yml deploys it, unless --env says otherwise
        if (value := compose_default(name)) is not None:
            environment[name] = value
    environment.update(item.split("=", 1) for item in args.env)
    web_workers = args.web_workers or int(compose_default("WEB_CONCURRENCY") or 4)
    gunicorn_args = []  # the stack binds gunicorn behind nginx
    if args.threads is not None:
        gunicorn_args.append(f"--threads={args.threads}")
    if args.worker_class is not None:
        gunicorn_args.append(f"--worker-class={args.worker_class}")
    environment["GUNICORN_CMD_ARGS"] = " ".join(gunicorn_args)
    config = StackConfig(
        postgres_port=args.postgres_port,
        redis_port=args.redis_port,
        web_port=args.web_port,
        nginx=not args.no_nginx,
        throttle_rate=args.throttle_rate,
        web_workers=web_workers,
        environment=environment,
        keep=args.keep,
        postgres_settings={
            **(STATEMENT_SETTINGS if args.statements else {}),
            **dict(item.split("=", 1) for item in args.postgres_setting),
        },
    )
    signal.signal(signal.SIGALRM, _stop_at_time_limit)
    signal.signal(signal.SIGTERM, _stop_at_time_limit)
    signal.alarm(math.ceil(args.time_limit))
    log = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    report: dict = {
        "label": args.label,
        "machine": machine(),
        "web_workers": web_workers,
        "gunicorn_args": gunicorn_args,
        "nginx": not args.no_nginx,
        "throttle_rate": args.throttle_rate,
        "environment": {k: v for k, v in environment.items() if k != "GUNICORN_CMD_ARGS"},
        "postgres_settings": config.postgres_settings,
    }
    stack = Stack(config, log=log)
    meter = lambda: cpu_snapshot(stack)  # noqa: E731
    try:
        stack.start()
        slugs = []
        for slug, used_by in (
            ("bench", {"vote", "vote-wrk"}),
            ("crowd", {"crowd"}),
            ("crowdwrk", {"crowd-wrk"}),
            ("livewrk", {"live-wrk"}),
        ):
            if phases & used_by:
                # Ballot 1 of the vote phases' study outlasts every phase: no ballot closes under them.
                vote_phases = ("vote" in phases) + (args.rounds if "vote-wrk" in phases else 0)
                appearances = bench_appearances(vote_phases, args.seconds) if slug == "bench" else 20
                plan = stack.seed_study(slug=slug, tokens=45, appearances=appearances, ballots=7)
                log(f"seeding {slug}: {plan}")
                slugs.append(slug)
        if "ballots-wrk" in phases:
            report["ballots_plan"] = stack.seed_study(slug="ballots", **BALLOTS_PLAN)
            log(f"seeding ballots: {report['ballots_plan']}")
            slugs.append("ballots")
        asyncio.run(health_phase(stack.base_url, clients=HEALTH_CLIENTS, seconds=3))  # warm-up
        report["quiet_after_seconds"] = round(wait_until_quiet(stack, log=log), 1)
        if "health" in phases:
            report["health"] = asyncio.run(
                health_phase(stack.base_url, clients=HEALTH_CLIENTS, seconds=args.seconds, meter=meter)
            )
            log(f"health: {report['health']}")
        if {"health-wrk", "vote-wrk"} <= phases and args.rounds > 1:
            report["rounds"] = wrk_rounds(
                stack, rounds=args.rounds, seconds=args.seconds, meter=meter, log=log
            )
            report["health_wrk"], report["vote_wrk"] = report["rounds"].pop("median_round")
        elif "health-wrk" in phases:
            report["health_wrk"] = wrk_phase(
                stack.base_url, clients=HEALTH_CLIENTS, seconds=args.seconds, meter=meter
            )
            log(f"health-wrk: {report['health_wrk']}")
        if "vote" in phases:
            if args.statements:
                statements_reset(stack)
            report["vote"] = asyncio.run(
                annotator_phase(
                    stack.base_url, "bench", annotators=VOTE_ANNOTATORS, think_ms=0,
                    seconds=args.seconds, prefix="bench", meter=meter,
                )
            )  # fmt: skip
            if args.statements and report["vote"].get("votes"):
                report["vote"]["statements"] = statements_read(stack, report["vote"]["votes"])
            log(f"vote: {report['vote']}")
        if "vote-wrk" in phases and "rounds" not in report:
            if args.statements:
                statements_reset(stack)
            report["vote_wrk"] = wrk_vote_phase(
                stack.base_url, "bench", annotators=VOTE_ANNOTATORS, seconds=args.seconds,
                prefix="wrk", run_dir=stack.run_dir, meter=meter,
            )  # fmt: skip
            if args.statements and report["vote_wrk"].get("votes"):
                report["vote_wrk"]["statements"] = statements_read(stack, report["vote_wrk"]["votes"])
            log(f"vote-wrk: {report['vote_wrk']}")
        if "rounds" in report:
            report["wrk_healthz_per_wrk_vote"] = report["rounds"]["median"]
        elif "health_wrk" in report and report.get("vote_wrk", {}).get("votes_per_second"):
            report["wrk_healthz_per_wrk_vote"] = round(
                report["health_wrk"]["requests_per_second"] / report["vote_wrk"]["votes_per_second"], 2
            )
        if "health" in report and report.get("vote", {}).get("votes_per_second"):
            report["healthz_per_vote"] = round(
                report["health"]["requests_per_second"] / report["vote"]["votes_per_second"], 2
            )
        if "health_wrk" in report and report.get("vote", {}).get("votes_per_second"):
            report["wrk_healthz_per_vote"] = round(
                report["health_wrk"]["requests_per_second"] / report["vote"]["votes_per_second"], 2
            )
        if "crowd" in phases:
            report["crowd"] = asyncio.run(
                annotator_phase(
                    stack.base_url, "crowd", annotators=CROWD_ANNOTATORS, think_ms=CROWD_THINK_MS,
                    seconds=args.crowd_seconds or args.seconds, prefix="crowd", meter=meter,
                )
            )  # fmt: skip
            log(f"crowd: {report['crowd']}")
        if "crowd-wrk" in phases:
            report["crowd_wrk"] = wrk_crowd_phase(
                stack.base_url, "crowdwrk", annotators=CROWD_ANNOTATORS, think_ms=CROWD_THINK_MS,
                seconds=args.crowd_seconds or args.seconds, prefix="crowdwrk", run_dir=stack.run_dir,
                meter=meter,
            )  # fmt: skip
            log(f"crowd-wrk: {report['crowd_wrk']}")
        if "live-wrk" in phases:
            report["live_wrk"] = wrk_live_phase(
                stack, "livewrk", seconds=args.crowd_seconds or args.seconds, meter=meter, log=log
            )
            log(f"live-wrk: {report['live_wrk']}")
        if "ballots-wrk" in phases:
            report["ballots_wrk"] = wrk_ballots_phase(
                stack.base_url, stack.database_url, "ballots", annotators=CROWD_ANNOTATORS,
                think_ms=CROWD_THINK_MS, seconds=BALLOTS_SECONDS, prefix="ballotswrk", run_dir=stack.run_dir,
                meter=meter,
            )  # fmt: skip
            log(f"ballots-wrk: {report['ballots_wrk']}")
        report["worker_rss_mb"] = worker_rss_mb(stack)
        if slugs:
            settle(stack, slugs, timeout=3 * stack.config.sweep_seconds)
            results = {slug: invariants.check(stack.database_url, study=slug) for slug in slugs}
            report["invariants"] = {
                f"{slug}: {r.name}": "held" if r.held else r.offending[:5]
                for slug, checked in results.items()
                for r in checked
            }
            report["invariants_held"] = all(r.held for checked in results.values() for r in checked)
    finally:
        signal.alarm(0)
        stack.stop()
    print(
        f"\n{args.label or 'bench_load'}: {report['machine']}; gunicorn {web_workers} workers {' '.join(gunicorn_args[1:])}"
    )
    print(markdown(report))
    if table := cpu_markdown(report):
        print("\nWhere the CPU went (all processes of the stack, and the load generator):\n")
        print(table)
    if table := rounds_markdown(report):
        print("\nThe rounds, alternated (the figures above are the median round's):\n")
        print(table)
    if table := boundaries_markdown(report):
        print(
            "\nThe ballots-wrk study's ballot boundaries (annotators wait the Retry-After they are told; "
            f"the longest told: {report['ballots_wrk']['longest_retry_after_s']} s):\n"
        )
        print(table)
    if table := statements_markdown(report):
        print("\nThe database's statements in the vote phase (pg_stat_statements: planning and running):\n")
        print(table)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    return 0 if report.get("invariants_held", True) else 1


if __name__ == "__main__":
    raise SystemExit(main())
