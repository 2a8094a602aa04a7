"""The runs: a load, and one fault each, on a stack of their own; every run ends with the invariants.

Each scenario starts a fresh ``Stack``, seeds its study, plays annotators against it with
``reliability.load``, injects its fault from a thread while the load runs, and returns a report (a
dict, printed and optionally written as JSON): what clients saw, the recovery time, the invariants.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import threading
import time
from contextlib import contextmanager

import httpx
import psycopg
from psycopg.rows import dict_row

from scoring.plan import ballot_plan  # pure: numpy only
from tests.reliability import invariants
from tests.reliability.load import Annotator, LoadConfig, Recorder, run_load, summarize
from tests.reliability.stack import Stack

POLL_SECONDS = 0.2


class ScenarioFailed(RuntimeError):
    """The scenario could not bring about the situation it is meant to test."""


# --- database helpers ----------------------------------------------------------------------------


def query(stack: Stack, sql: str, params=None) -> list[dict]:
    """Rows of ``sql`` on the stack's database, on a fresh connection (it survives restarts)."""
    with psycopg.connect(stack.database_url, row_factory=dict_row, autocommit=True, connect_timeout=5) as db:
        cursor = db.execute(sql, params)
        return cursor.fetchall() if cursor.description else []


def try_query(stack: Stack, sql: str, params=None) -> list[dict] | None:
    """``query``, or None while the database does not answer (restarting: not yet)."""
    try:
        return query(stack, sql, params)
    except psycopg.OperationalError:
        return None


def ballots(stack: Stack, slug: str) -> list[dict]:
    return query(
        stack,
        """SELECT b.id, b.number, b.status, b.comparison_count, b.opened_at, b.closed_at,
                  (SELECT COALESCE(SUM(part.votes), 0) FROM collection_ballotcounter part
                   WHERE part.ballot_id = b.id) AS votes_recorded,
                  (SELECT max(v.created_at) FROM collection_vote v WHERE v.ballot_id = b.id) AS last_vote
           FROM collection_ballot b JOIN collection_study s ON s.id = b.study_id
           WHERE s.slug = %s ORDER BY b.number""",
        [slug],
    )


def ballot_pauses(rows: list[dict]) -> list[dict]:
    """Per closed ballot: seconds from its last vote to the next ballot opening (annotators wait)."""
    pauses = []
    for ballot, following in zip(rows, rows[1:] + [None], strict=True):
        if ballot["status"] != "closed" or ballot["last_vote"] is None:
            continue
        end = following["opened_at"] if following else ballot["closed_at"]
        pauses.append(
            {
                "ballot": ballot["number"],
                "votes": ballot["votes_recorded"],
                "comparisons": ballot["comparison_count"],
                "seconds_from_last_vote_to_next_ballot": round(
                    (end - ballot["last_vote"]).total_seconds(), 2
                ),
            }
        )
    return pauses


def wait_until(what: str, condition, timeout: float):
    """Polls ``condition`` until it returns something true; a database that does not answer is 'not yet'."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            result = condition()
        except (psycopg.OperationalError, httpx.TransportError, TimeoutError):
            result = None
        if result:
            return result
        time.sleep(POLL_SECONDS)
    raise ScenarioFailed(f"no {what} within {timeout:g} s")


def window_report(recorder: Recorder, start: float, end: float) -> dict:
    """What clients saw between ``start`` and ``end`` (seconds of the run)."""
    samples = recorder.window(start, end)
    report = summarize(samples, max(end - start, 1e-9))
    report["from_s"], report["to_s"] = round(start, 1), round(end, 1)
    report["max_latency_ms"] = round(max((s.seconds for s in samples), default=0) * 1000, 1)
    return report


def settle(stack: Stack, slug: str, timeout: float) -> None:
    """Waits until no ballot of the study is fully voted and still open (its close has run)."""

    def settled():
        rows = ballots(stack, slug)
        return all(not (b["status"] == "open" and b["votes_recorded"] >= b["comparison_count"]) for b in rows)

    try:
        wait_until("settled ballots", settled, timeout)
    except ScenarioFailed:
        pass  # the invariants are checked anyway; the report shows the open ballot


def seed(stack: Stack, args, **options) -> dict:
    """The scenario's study; with ``--analyze``, fresh planner statistics afterwards (a diagnostic:
    the comparisons of a new ballot otherwise wait for autovacuum's ANALYZE, about a minute)."""
    plan = stack.seed_study(**options)
    if getattr(args, "analyze", False):
        query(stack, "ANALYZE")
        plan["analyzed"] = True
    return plan


def finish(stack: Stack, report: dict, slug: str) -> dict:
    results = invariants.check(stack.database_url, study=slug)
    report["invariants"] = {r.name: "held" if r.held else r.offending[:5] for r in results}
    report["invariants_held"] = all(r.held for r in results)
    report["ballots"] = [
        {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items() if k != "id"}
        for row in ballots(stack, slug)
    ]
    report["ballot_pauses"] = ballot_pauses(ballots(stack, slug))
    return report


# --- running a load beside a fault ---------------------------------------------------------------


def load_with(config: LoadConfig, fault) -> tuple[Recorder, object]:
    """Runs the load and, in a thread, ``fault(recorder, stop_load)``; the load ends when ``fault``
    returns (or at ``config.seconds``). Returns the recorder and what ``fault`` returned."""
    recorder = Recorder()
    outcome: dict = {}

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def stop_load():
            loop.call_soon_threadsafe(stop.set)

        def run_fault():
            try:
                outcome["value"] = fault(recorder, stop_load)
            except BaseException as exc:  # re-raised below, after the load has stopped
                outcome["error"] = exc
            finally:
                stop_load()

        thread = threading.Thread(target=run_fault, name="fault", daemon=True)
        thread.start()
        await run_load(config, recorder, stop)
        await asyncio.to_thread(thread.join)

    asyncio.run(main())
    if "error" in outcome:
        raise outcome["error"]
    return recorder, outcome.get("value")


@contextmanager
def time_limit(seconds: float, stack: Stack):
    """Stops the stack and exits with status 3 if the run outlives ``seconds``."""

    def expire():
        print(f"\ntime limit of {seconds:g} s reached: stopping the stack", flush=True)
        try:
            stack.stop()
        finally:
            os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


# --- scenarios -----------------------------------------------------------------------------------


def scenario_load(stack: Stack, args) -> dict:
    """N annotators for a fixed time against the full stack."""
    stack.start()
    cap = args.cap
    if cap is None:  # a cap that binds, yet lets the crowd finish every ballot
        plan = ballot_plan(
            item_count=args.tokens * (args.tokens - 1) // 2,
            ballot_count=args.ballots,
            keep_fraction=0.5,
            appearances=args.appearances,
        )
        cap = max(5, math.ceil(2 * plan.comparisons[0] / args.annotators))
    plan = seed(
        stack,
        args,
        slug="load",
        tokens=args.tokens,
        appearances=args.appearances,
        ballots=args.ballots,
        cap=cap,
    )
    config = LoadConfig(
        base_url=stack.base_url,
        slug="load",
        annotators=args.annotators,
        seconds=args.seconds,
        think_ms=args.think_ms,
    )
    started = time.monotonic()
    recorder, finished = asyncio.run(run_load(config))
    seconds = min(time.monotonic() - started, args.seconds)
    report = {"scenario": "load", "plan": plan, "annotators": args.annotators, "think_ms": args.think_ms}
    report["load"] = summarize(recorder.samples, seconds)
    report["annotators_told_finished"] = finished
    settle(stack, "load", timeout=3 * stack.config.sweep_seconds)
    return finish(stack, report, "load")


def scenario_worker_kill(stack: Stack, args) -> dict:
    """A Celery worker SIGKILLed while a ballot closes; the close then completes exactly once.

    The worker is held back while the crowd fills ballot 1, so that its closing task waits in the
    queue; the harness then takes ballot 1's row lock and starts the worker, whose close blocks inside
    its transaction (seen in pg_stat_activity). The worker is killed there (``--target group``: the
    whole worker, as ``docker kill`` does; ``child``: only the pool process running the task), the lock
    released, and a new worker started (group) or left to the worker's parent (child).
    """
    stack.start(worker=False, beat=True)
    slug = "kill"
    plan = seed(stack, args, slug=slug, tokens=16, appearances=4, ballots=3, cap=40)
    config = LoadConfig(
        base_url=stack.base_url,
        slug=slug,
        annotators=args.annotators,
        seconds=args.time_limit,
        think_ms=args.think_ms,
    )

    def fault(recorder: Recorder, stop_load):
        first = ballots(stack, slug)[0]
        wait_until(
            "fully voted ballot 1",
            lambda: ballots(stack, slug)[0]["votes_recorded"] == first["comparison_count"],
            timeout=120,
        )
        events = {"ballot_full": recorder.event("ballot 1 fully voted; its closing task waits in the queue")}
        lock = psycopg.connect(stack.database_url)
        lock.execute("SELECT id FROM collection_ballot WHERE id = %s FOR UPDATE", [first["id"]])
        recorder.event("the harness holds ballot 1's row lock")
        stack.worker_start("worker-1", concurrency=1)
        events["worker_started"] = recorder.event("worker-1 started")

        def close_blocked():  # the close's lock: FOR NO KEY UPDATE (FOR UPDATE matched too)
            return query(
                stack,
                """SELECT pid, query FROM pg_stat_activity
                   WHERE datname = current_database() AND wait_event_type = 'Lock'
                     AND query LIKE 'SELECT %%FROM "collection_ballot"%%FOR %%UPDATE%%'""",
            )

        blocked = wait_until("close blocked on ballot 1's lock", close_blocked, timeout=60)
        events["close_blocked"] = recorder.event(
            f"a close is blocked inside its transaction: {blocked[0]['query'][:80]}"
        )
        if args.target == "child":
            children = stack.children("worker-1")
            if len(children) != 1:
                raise ScenarioFailed(f"worker-1 should have one pool process, has {children}")
            os.kill(children[0], signal.SIGKILL)
            events["killed"] = recorder.event(f"worker-1's pool process {children[0]} SIGKILLed")
        else:
            stack.kill("worker-1", signal.SIGKILL)
            events["killed"] = recorder.event("worker-1 SIGKILLed (the whole process group)")
        lock.rollback()
        lock.close()
        events["released"] = recorder.event("ballot 1's row lock released")
        if args.target == "group":
            stack.worker_start("worker-2", concurrency=1)
            events["new_worker"] = recorder.event("worker-2 started")

        def closed():
            rows = ballots(stack, slug)
            return rows[0]["status"] == "closed" and len(rows) >= 2

        wait_until("ballot 1 closed and ballot 2 open", closed, timeout=4 * stack.config.sweep_seconds + 60)
        events["closed"] = recorder.event("ballot 1 closed, ballot 2 open")
        time.sleep(args.after)  # votes flow on ballot 2
        stop_load()
        return events

    recorder, events = load_with(config, fault)
    logs = {name: stack.log_path(name).read_text(errors="replace") for name in ("worker-1", "worker-2")
            if stack.log_path(name).exists()}  # fmt: skip
    closer = (
        "the ballots sweep"
        if any("'ballots_closed': 1" in log for log in logs.values())
        else "the redelivered ballot_close task"
    )
    report = {
        "scenario": f"worker-kill ({args.target})",
        "plan": plan,
        "annotators": args.annotators,
        "events": [(round(at, 2), what) for at, what in recorder.events],
        "recovery_seconds_from_kill_to_close": round(events["closed"] - events["killed"], 2),
        "closed_by": closer,
        "worker_lost_logged": any("WorkerLostError" in log for log in logs.values()),
        "clients_during_stall": window_report(recorder, events["ballot_full"], events["closed"]),
        "clients_whole_run": window_report(recorder, 0, recorder.now()),
    }
    settle(stack, slug, timeout=3 * stack.config.sweep_seconds)
    return finish(stack, report, slug)


def _outage(stack: Stack, args, *, slug: str, stop_service, start_service, what: str) -> dict:
    """Load for ``warmup`` s, ``what`` down for ``down`` s, load for ``after`` s more."""
    config = LoadConfig(
        base_url=stack.base_url,
        slug=slug,
        annotators=args.annotators,
        seconds=args.time_limit,
        think_ms=args.think_ms,
    )

    def fault(recorder: Recorder, stop_load):
        time.sleep(args.warmup)
        events = {"down": recorder.event(f"{what} stopped")}
        stop_service()
        time.sleep(args.down)
        start_service()
        events["up"] = recorder.event(f"{what} started again")
        time.sleep(args.after)
        stop_load()
        return events

    recorder, events = load_with(config, fault)
    end = recorder.now()
    first_vote = recorder.first("vote", "201", events["up"])
    baseline = window_report(recorder, max(0, events["down"] - args.warmup / 2), events["down"])
    recovered_rate = None
    if baseline["votes_per_second"]:
        # The first whole second after the restart whose vote rate is at least half the baseline's.
        second = math.floor(events["up"])
        while second + 1 <= end:
            rate = sum(
                1 for s in recorder.window(second, second + 1) if s.endpoint == "vote" and s.outcome == "201"
            )
            if rate >= baseline["votes_per_second"] / 2:
                recovered_rate = round(second + 1 - events["up"], 1)
                break
            second += 1
    # Ballots whose last vote came while the service was down: how long after the restart they closed.
    down_wall, up_wall = recorder.wall(events["down"]), recorder.wall(events["up"])
    rows = ballots(stack, slug)
    closes = []
    for ballot, following in zip(rows, rows[1:] + [None], strict=True):
        if ballot["last_vote"] is None or not down_wall <= ballot["last_vote"] <= up_wall:
            continue
        if ballot["votes_recorded"] < ballot["comparison_count"]:
            continue
        opened = following["opened_at"] if following else ballot["closed_at"]
        closes.append(
            {
                "ballot": ballot["number"],
                "completed_s_after_stop": round((ballot["last_vote"] - down_wall).total_seconds(), 1),
                "next_ballot_s_after_restart": None
                if opened is None
                else round((opened - up_wall).total_seconds(), 1),
            }
        )
    return {
        "annotators": args.annotators,
        "think_ms": args.think_ms,
        "down_seconds": args.down,
        "ballots_completed_while_down": closes,
        "events": [(round(at, 2), what) for at, what in recorder.events],
        "first_vote_after_restart_s": None if first_vote is None else round(first_vote - events["up"], 2),
        "seconds_until_half_the_baseline_vote_rate": recovered_rate,
        "clients_before": baseline,
        "clients_during_outage": window_report(recorder, events["down"], events["up"]),
        "clients_after": window_report(recorder, events["up"], end),
        "clients_whole_run": window_report(recorder, 0, end),
    }


def scenario_postgres_restart(stack: Stack, args) -> dict:
    """PostgreSQL stopped (``pg_ctl stop -m fast``, or ``immediate``: a crash) under load, then started."""
    stack.start()
    slug = "pg"
    plan = seed(
        stack, args, slug=slug, tokens=args.tokens, appearances=args.appearances, ballots=args.ballots
    )
    report = {"scenario": f"postgres-restart ({args.mode}, {args.down:g} s)", "plan": plan}
    report |= _outage(
        stack, args, slug=slug, what="PostgreSQL",
        stop_service=lambda: stack.postgres_stop(mode=args.mode), start_service=stack.postgres_start,
    )  # fmt: skip
    settle(stack, slug, timeout=3 * stack.config.sweep_seconds)
    return finish(stack, report, slug)


def scenario_redis_restart(stack: Stack, args) -> dict:
    """Redis (broker, cache of the rate limits) stopped under load, then started empty; with
    ``--freeze``, stopped with SIGSTOP and resumed with SIGCONT instead (a hung Redis)."""
    stack.start()
    slug = "redis"
    plan = seed(
        stack, args, slug=slug, tokens=args.tokens, appearances=args.appearances, ballots=args.ballots
    )
    if args.freeze:  # the port still accepts connections (the kernel's backlog) and nothing answers
        report = {"scenario": f"redis-freeze ({args.down:g} s)", "plan": plan}
        report |= _outage(
            stack, args, slug=slug, what="Redis (SIGSTOP)",
            stop_service=lambda: stack.kill("redis", signal.SIGSTOP),
            start_service=lambda: stack.kill("redis", signal.SIGCONT),
        )  # fmt: skip
    else:
        report = {"scenario": f"redis-restart ({args.down:g} s)", "plan": plan}
        report |= _outage(
            stack,
            args,
            slug=slug,
            what="Redis",
            stop_service=stack.redis_stop,
            start_service=stack.redis_start,
        )
    closes_after = [
        b for b in ballots(stack, slug) if b["closed_at"] is not None and b["last_vote"] is not None
    ]
    report["closes"] = ballot_pauses(ballots(stack, slug))
    report["ballots_closed"] = len(closes_after)
    worker_log = stack.log_path("worker-1").read_text(errors="replace")
    beat_log = stack.log_path("beat").read_text(errors="replace")
    report["worker_alive"] = stack.processes["worker-1"].poll() is None
    report["beat_alive"] = stack.processes["beat"].poll() is None
    report["worker_reconnect_lines"] = [
        line for line in worker_log.splitlines() if "Connected to redis" in line
    ][-3:]
    report["beat_errors"] = sum(1 for line in beat_log.splitlines() if "ERROR" in line)
    settle(stack, slug, timeout=3 * stack.config.sweep_seconds)
    return finish(stack, report, slug)


async def _joined(
    stack: Stack, number: int, prefix: str, recorder: Recorder, stop: asyncio.Event
) -> Annotator:
    config = LoadConfig(base_url=stack.base_url, slug="dup", participant_prefix=prefix)
    annotator = Annotator(number, config, recorder, stop)
    if not await annotator.join():
        raise ScenarioFailed(f"annotator {prefix}-{number} could not join")
    return annotator


async def _comparison(annotator: Annotator) -> dict:
    response = await annotator.request(
        "next", "GET", f"/api/studies/{annotator.config.slug}/next/", headers={"Accept": "application/json"}
    )
    if response is None or response.status_code != 200:
        raise ScenarioFailed(
            f"no comparison for {annotator.participant}: {response and response.status_code}"
        )
    return response.json()


async def _send_vote(annotator: Annotator, assignment: int) -> tuple[str, int | None]:
    body = {"assignment": assignment, "choice": "left", "client_response_ms": 1000}
    response = await annotator.request(
        "vote", "POST", "/api/votes/", json=body, headers=annotator.csrf_headers()
    )
    if response is None:
        return "network error", None
    vote = response.json().get("vote") if response.status_code in (200, 201) else None
    return str(response.status_code), vote


def _duplicates_and_resends(stack: Stack, args) -> dict:
    """Resends (sequential) and concurrent duplicates of the same vote, and of the same 'next' request,
    while a background crowd votes."""
    stack.start()
    plan = seed(stack, args, slug="dup", tokens=30, appearances=10, ballots=3)
    background = LoadConfig(
        base_url=stack.base_url,
        slug="dup",
        annotators=args.annotators,
        seconds=args.time_limit,
        think_ms=args.think_ms,
    )
    results: dict = {}

    async def probes(recorder: Recorder):
        stop = asyncio.Event()
        if args.scenario == "resend":
            sequences = []
            for number in range(args.assignments):
                annotator = await _joined(stack, number, "resend", recorder, stop)
                comparison = await _comparison(annotator)
                sequences.append(
                    [await _send_vote(annotator, comparison["assignment"]) for _ in range(args.times)]
                )
                await annotator.client.aclose()
            results["resend"] = {
                "assignments": args.assignments,
                "sends_each": args.times,
                "status_sequences": _count(tuple(status for status, _ in seq) for seq in sequences),
                "one_vote_id_per_assignment": all(len({vote for _, vote in seq}) == 1 for seq in sequences),
            }
            return
        for ways in args.ways:
            vote_sets, next_sets = [], []
            for number in range(args.assignments):
                annotator = await _joined(stack, number, f"dup{ways}", recorder, stop)
                # The same 'next' request sent `ways` times at once (two tabs, a double click).
                answers = await asyncio.gather(
                    *[annotator.request("next", "GET", "/api/studies/dup/next/", headers={"Accept": "application/json"})
                      for _ in range(ways)]
                )  # fmt: skip
                statuses = tuple(
                    sorted(str(r.status_code) if r is not None else "network error" for r in answers)
                )
                assignments = {
                    r.json()["assignment"] for r in answers if r is not None and r.status_code == 200
                }
                next_sets.append((statuses, len(assignments)))
                if not assignments:
                    continue
                assignment = (await _comparison(annotator))["assignment"]
                sent = await asyncio.gather(*[_send_vote(annotator, assignment) for _ in range(ways)])
                vote_sets.append(sent)
                await annotator.client.aclose()
            results[f"{ways}-way"] = {
                "votes": {
                    "assignments": len(vote_sets),
                    "statuses": _count(tuple(sorted(status for status, _ in sent)) for sent in vote_sets),
                    "one_vote_id_per_assignment": all(
                        len({vote for _, vote in sent}) == 1 for sent in vote_sets
                    ),
                },
                "next": {
                    "annotators": len(next_sets),
                    "statuses": _count(statuses for statuses, _ in next_sets),
                    "distinct_assignments_handed": _count(count for _, count in next_sets),
                },
            }

    def fault(recorder: Recorder, stop_load):
        time.sleep(2)  # the background crowd is voting
        asyncio.run(probes(recorder))
        stop_load()

    recorder, _ = load_with(background, fault)
    report = {"scenario": args.scenario, "plan": plan, "background_annotators": args.annotators}
    report |= results
    report["clients_whole_run"] = window_report(recorder, 0, recorder.now())
    stored = query(
        stack,
        """SELECT count(*) AS votes, count(DISTINCT assignment_id) AS assignments FROM collection_vote v
           JOIN collection_annotator a ON a.id = v.annotator_id
           WHERE a.participant_id LIKE 'resend-%%' OR a.participant_id LIKE 'dup%%'""",
    )[0]
    report["probe_votes_stored"] = stored
    return finish(stack, report, "dup")


def _count(values) -> dict:
    counts: dict = {}
    for value in values:
        key = " ".join(value) if isinstance(value, tuple) else str(value)
        counts[key] = counts.get(key, 0) + 1
    return counts


scenario_resend = _duplicates_and_resends
scenario_duplicates = _duplicates_and_resends
