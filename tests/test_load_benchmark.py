"""The load benchmark (tests/reliability/bench_load.py): the seconds of each ballot boundary, worked out
by hand from a timeline, and a generator run until a condition holds."""

import signal
import sys
import time
from datetime import UTC, datetime, timedelta

from tests.reliability.bench_load import (
    SHORT,
    _run_until,
    ballot_boundaries,
    bench_appearances,
    markdown,
    ran_short,
)

T0 = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def ballot(number, status, *, opened, closed=None, close_seconds=None, first=None, tenth=None, last=None,
           firsts=()):  # fmt: skip
    return {
        "number": number, "status": status, "comparison_count": 100 // number, "votes": 100 // number,
        "opened_at": at(opened), "closed_at": closed and at(closed), "close_seconds": close_seconds,
        "first_vote": first and at(first), "tenth_left_vote": tenth and at(tenth), "last_vote": last and at(last),
        "annotator_first_votes": [at(s) for s in firsts] or None,
    }  # fmt: skip


def test_each_closed_ballot_says_how_long_its_tail_its_close_and_the_annotators_return_took():
    rows = [
        ballot(1, "closed", opened=0, closed=30.2, close_seconds=0.15, first=1, tenth=18, last=30),
        # Four annotators came back: their first votes at 31, 32.5, 34 and 42 s.
        ballot(
            2,
            "closed",
            opened=30.4,
            closed=51.05,
            close_seconds=0.04,
            first=31,
            tenth=45,
            last=51,
            firsts=(31, 32.5, 34, 42),
        ),  # fmt: skip
        ballot(3, "open", opened=51.1, first=53, last=60, firsts=(53, 54, 55)),
    ]

    first, second = ballot_boundaries(rows)

    assert first == {
        "ballot": 1, "comparisons": 100, "votes": 100,
        "last_tenth_s": 12.0,  # 18 → 30
        "close_task_s": 0.15,
        "last_vote_to_closed_s": 0.2,
        "last_vote_to_next_open_s": 0.4,
        "last_vote_to_next_vote_s": 1.0,
        "next_open_to_next_vote_s": 0.6,
        "last_vote_to_half_back_s": 2.5,  # the second of four (the lower median): 32.5 − 30
        "last_vote_to_all_back_s": 12.0,  # 42 − 30
        "annotators_back": 4,
    }  # fmt: skip
    assert second["ballot"] == 2 and second["last_tenth_s"] == 6.0
    assert (second["last_vote_to_next_open_s"], second["last_vote_to_half_back_s"]) == (0.1, 3.0)
    # The open ballot has no boundary yet.
    assert [row["ballot"] for row in ballot_boundaries(rows)] == [1, 2]


def test_the_last_ballot_of_a_finished_study_has_no_next_one():
    rows = [ballot(1, "closed", opened=0, closed=10.5, close_seconds=0.1, first=1, tenth=8, last=10)]

    (only,) = ballot_boundaries(rows)

    assert (only["last_vote_to_closed_s"], only["last_vote_to_next_open_s"], only["annotators_back"]) == (
        0.5,
        None,
        0,
    )
    assert only["last_vote_to_half_back_s"] is None and only["last_vote_to_all_back_s"] is None


def test_a_generator_stopped_by_condition_is_never_blocked_by_what_it_prints():
    # judgements.lua writes every unexpected answer to stderr: 200 KB is more than a pipe holds, and
    # a generator blocked on a full pipe that nothing reads would never end.
    command = [sys.executable, "-c", "import sys; sys.stderr.write('x' * 200_000); print('done')"]

    finished = _run_until(command, until=lambda: False)

    assert (finished.returncode, finished.stdout, len(finished.stderr)) == (0, "done\n", 200_000)


def test_a_generator_is_interrupted_once_its_condition_holds_and_still_reports(tmp_path):
    # wrk reports when interrupted (SIGINT); this stand-in prints on KeyboardInterrupt the same way. The
    # condition is that it is running (its file written): on a loaded machine the interpreter may still
    # be starting a second after the launch, and a signal then would not reach the stand-in's handler.
    ready = tmp_path / "ready"
    script = (
        "import pathlib, sys, time\ntry:\n    pathlib.Path(sys.argv[1]).touch()\n    time.sleep(60)\n"
        "except KeyboardInterrupt:\n    print('report')\n"
    )
    started = time.monotonic()
    # Run as a shell runs a command in the background, with SIGINT ignored: the generator gets it anyway.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        finished = _run_until([sys.executable, "-c", script, str(ready)], until=ready.exists)
    finally:
        signal.signal(signal.SIGINT, previous)

    assert finished.stdout == "report\n"
    assert time.monotonic() - started < 10


def test_rounds_report_the_median_ratio_and_the_median_rounds_phases(monkeypatch):
    """--rounds: four rounds whose ratios are worked out by hand (healthz/s over votes/s): 5, 6, 4 and
    8. The median is 5.5, the range 4 to 8, and the phases reported are the lower middle round's (5)."""
    from tests.reliability import bench_load

    healthz_rates = iter([3000, 3000, 2400, 2400])
    vote_rates = {"wrk1": 600, "wrk2": 500, "wrk3": 600, "wrk4": 300}
    phases = []

    def health(base_url, *, clients, seconds, meter=None):
        phases.append(("health", None))
        cores = {"web": 1.5, "postgres": 0.2, "postgres/backends": 0.2}
        return {"requests_per_second": next(healthz_rates), "cores": cores}

    def vote(base_url, slug, *, annotators, seconds, prefix, run_dir, meter=None):
        phases.append(("vote", prefix))
        cores = {"web": 1.0, "postgres": 0.6}
        return {"votes_per_second": vote_rates[prefix], "cores": cores, "errors": 0}

    monkeypatch.setattr(bench_load, "wrk_phase", health)
    monkeypatch.setattr(bench_load, "wrk_vote_phase", vote)

    class FakeStack:
        base_url = "http://127.0.0.1:1"
        run_dir = "/nonexistent"

    rounds = bench_load.wrk_rounds(FakeStack(), rounds=4, seconds=1, meter=None, log=lambda message: None)
    # Alternated, and each round's annotators are new ones.
    assert [kind for kind, _ in phases] == ["health", "vote"] * 4
    assert [value for kind, value in phases if kind == "vote"] == ["wrk1", "wrk2", "wrk3", "wrk4"]
    assert [row["ratio"] for row in rounds["each"]] == [5.0, 6.0, 4.0, 8.0]
    assert rounds["median"] == 5.5
    assert rounds["range"] == [4.0, 8.0]
    health_phase, vote_phase = rounds["median_round"]
    assert (health_phase["requests_per_second"], vote_phase["votes_per_second"]) == (3000, 600)
    # CPU per request: all the parts' cores (postgres once, not its kinds) over the rate.
    assert rounds["each"][0]["cpu_ms_per_healthz"] == round(1000 * 1.7 / 3000, 3)
    assert rounds["each"][0]["cpu_ms_per_vote"] == round(1000 * 1.6 / 600, 3)
    table = bench_load.rounds_markdown({"rounds": rounds})
    assert "**5.50** (4.00 to 8.00)" in table


def test_rounds_whose_healthz_phase_was_disturbed_are_left_out_of_the_median(monkeypatch):
    """The run of 2026-11-25 whose median came out as 1.88: two of its three healthz phases served 898
    and 862 requests/s where the third served 2,329 (and other runs of the same code 2,000 to 2,400).
    Those two rounds' ratios are 898/577.5 = 1.55 and 862/458.4 = 1.88; the third's 2329/597.3 = 3.90.
    Left out (under 60% of 2,329), the median is the one steady round's, 3.90."""
    from tests.reliability import bench_load

    healthz_rates = iter([898, 2329, 862])
    vote_rates = {"wrk1": 577.5, "wrk2": 597.3, "wrk3": 458.4}

    def health(base_url, *, clients, seconds, meter=None):
        return {"requests_per_second": next(healthz_rates), "cores": {"web": 1.2}}

    def vote(base_url, slug, *, annotators, seconds, prefix, run_dir, meter=None):
        return {"votes_per_second": vote_rates[prefix], "cores": {"web": 1.1, "postgres": 0.7}, "errors": 0}

    monkeypatch.setattr(bench_load, "wrk_phase", health)
    monkeypatch.setattr(bench_load, "wrk_vote_phase", vote)

    class FakeStack:
        base_url = "http://127.0.0.1:1"
        run_dir = "/nonexistent"

    said = []
    rounds = bench_load.wrk_rounds(FakeStack(), rounds=3, seconds=1, meter=None, log=said.append)
    assert [row["ratio"] for row in rounds["each"]] == [1.55, 3.9, 1.88]
    assert rounds["disturbed"] == [1, 3]
    assert rounds["median"] == 3.9
    assert rounds["range"] == [3.9, 3.9]
    health_phase, vote_phase = rounds["median_round"]
    assert (health_phase["requests_per_second"], vote_phase["votes_per_second"]) == (2329, 597.3)
    assert any("[1, 3]" in message for message in said)
    table = bench_load.rounds_markdown({"rounds": rounds})
    assert "| 1 (healthz disturbed: left out) |" in table
    assert "| 2 |" in table
    assert "**3.90** (3.90 to 3.90)" in table


def test_the_vote_study_holds_every_vote_phase_in_its_first_ballot():
    # Hand-worked: two phases of 30 s at up to 1,000 votes/s are 60,000 votes; 990 items at M
    # appearances make 495·M comparisons, so M ≥ 121.2: 122 (even), 60,390 comparisons.
    assert bench_appearances(2, 30) == 122
    # Three rounds of 10 s: 30,000 votes, M ≥ 60.6: 62. One short phase: never under the paper's 20.
    assert bench_appearances(3, 10) == 62
    assert bench_appearances(1, 5) == 20
    for phases, seconds in ((1, 7), (2, 30), (5, 12), (4, 61)):
        appearances = bench_appearances(phases, seconds)
        assert appearances % 2 == 0
        assert 990 * appearances / 2 >= phases * seconds * 1000


def test_a_vote_phase_whose_study_ran_short_is_not_reported_as_a_measure():
    # The default run of 2026-11-24 on a fast machine: the Python phase had used up ballot 1, and wrk's
    # annotators were told "all leased" 523 times for 55 votes; N came out as 1,275.
    exhausted = {"votes": 55, "waits": {"all_leased": 523, "ballot_closing": 0, "finished": 0}}
    healthy = {"votes": 14_695, "waits": {"all_leased": 40, "ballot_closing": 0, "finished": 0}}
    python_phase = {"votes": 14_695, "outcomes": {"next 200": 100, "next 204": 51, "vote 201": 14_695}}
    assert ran_short(exhausted) and not ran_short(healthy) and not ran_short(python_phase)
    assert ran_short({"votes": 100, "outcomes": {"next 204": 11}})
    report = {
        "health_wrk": {"clients": 50, "requests_per_second": 2296.0},
        "vote_wrk": {
            **exhausted,
            "joined": 50,
            "votes_per_second": 1.8,
            "p50_ms": 8.1,
            "p95_ms": 92.2,
            "errors": 0,
        },
        "wrk_healthz_per_wrk_vote": 1275.5,
    }
    text = markdown(report)
    assert "1275" not in text and SHORT in text
