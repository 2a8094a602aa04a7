"""The ``yardstick`` command, run through its ``main()`` and once as a process, against a live server."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from yardstick_client import API_VERSION, ApiError
from yardstick_client.cli import main

from collection.models import Study
from metrics.models import Submission

CLIENT_SOURCE = Path(__file__).resolve().parents[2] / "client"


def yardstick(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_a_researcher_creates_plans_starts_and_follows_a_study(server, staff_token, tmp_path, monkeypatch):
    monkeypatch.setenv("YARDSTICK_URL", server)
    monkeypatch.setenv("YARDSTICK_TOKEN", staff_token)
    tokens = tmp_path / "tokens.csv"
    tokens.write_text(
        "token,area\n" + "".join(f"{word},colours\n" for word in ["red", "green", "blue", "cyan"])
    )

    created = yardstick(
        "study", "create", "colours", "--name", "Colours", "--tokens", str(tokens),
        "--set", "ballot_count=2", "--set", "keep_fraction=0.5", "--set", "appearances=2",
        "--set", "votes_per_annotator_per_ballot=null",
    )  # fmt: skip
    started = yardstick("study", "start", "colours")
    progress = yardstick("--json", "study", "progress", "colours")

    plan = Study.objects.get(slug="colours")
    seconds = 9 * plan.seconds_per_comparison  # Eq. 10: N_comp person-seconds
    assert (created[0], created[2]) == (0, "")
    assert created[1].splitlines() == [
        "study 'colours' created (draft)",
        "6 items, 2 ballots, keep 0.5, 2 appearances per item per ballot",
        "ballot sizes: 6, 3",
        "comparisons:  6, 3 (total 9)",
        f"voting time: {seconds / 60:.1f} person-minutes",
        *(
            f"warning: {warning}"
            for warning in json.loads(yardstick("--json", "study", "plan", "colours")[1])["warnings"]
        ),
    ]
    assert started == (0, f"study 'colours' is running: annotators' link {server}/s/colours/\n", "")
    assert Study.objects.get(slug="colours").status == "running"
    assert [(b["number"], b["votes"], b["comparisons"]) for b in json.loads(progress[1])] == [(1, 0, 6)]


def test_a_model_owner_submits_a_csv_and_reads_the_board_and_the_card(
    server, owner_token, finished_study, tmp_path
):
    common = ["--url", server, "--token", owner_token, "--quiet"]
    status, pairs_csv, _ = yardstick(*common, "pairs", finished_study.slug)
    rows = pairs_csv.splitlines()
    scores = tmp_path / "scores.csv"
    scores.write_text(
        "item,score\n" + "".join(f"{row.split(',')[0]},{n}\n" for n, row in enumerate(rows[1:]))
    )

    submitted = yardstick(*common, "submit", finished_study.slug, "by-position", str(scores))
    board = yardstick(*common, "leaderboard", finished_study.slug)
    card = yardstick(*common, "--json", "card", finished_study.slug)
    markdown = yardstick(*common, "card", finished_study.slug)

    assert (status, rows[0], len(rows)) == (0, "item,token_a,token_b,area", 16)
    submission = Submission.objects.get(model_name="by-position")
    assert submitted[0] == 0
    assert submitted[1].startswith(
        f"Submission {submission.pk}, 'by-position' on '{finished_study.slug}': 15 of 15 items; n0 = 2\n"
    )
    assert board[0] == 0 and board[1].splitlines()[-1].endswith("by-position (ann)")
    assert json.loads(card[1])["study"]["slug"] == finished_study.slug
    assert markdown[1].startswith("# ")


def test_a_refusal_exits_1_with_the_apis_message(server, owner_token):
    status, out, err = yardstick("--url", server, "--token", owner_token, "leaderboard", "nope")

    assert (status, out) == (1, "")
    assert err == (
        f"error: HTTP 404 on GET {server}/api/studies/nope/leaderboard/?metric=tau_w: "
        "there is no study 'nope'; /models/ lists the finished studies\n"
    )


def test_login_prints_the_token(server, owner, owner_token, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("another unusual password\n"))

    assert yardstick("--url", server, "login", "ann", "--password-stdin") == (0, owner_token + "\n", "")


def test_the_command_runs_as_a_process(server):
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(CLIENT_SOURCE), os.environ.get("PYTHONPATH", "")]),
    }
    environment["YARDSTICK_URL"] = server

    finished = subprocess.run(
        [sys.executable, "-m", "yardstick_client", "version"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
    )

    assert (finished.returncode, finished.stdout) == (
        0,
        f"client API {API_VERSION}, server API {API_VERSION}\n",
    )


def test_a_newer_server_is_said_on_stderr_and_the_command_goes_on(server, finished_study, settings):
    settings.API_VERSION = "0.9.0"

    status, out, err = yardstick("--url", server, "--quiet", "leaderboard", finished_study.slug)

    assert status == 0
    assert out.startswith("Leaderboard by τ_w, n0 = 2:\n")
    assert err == (
        f"warning: the server is newer than this client: its API is 0.9.0, this client speaks {API_VERSION}; "
        "everything here works, but what the server added since is not in this client: upgrade it to use that\n"
    )


def test_a_study_whose_plan_is_impossible_is_created_and_says_why(connect, server, staff_token, tmp_path):
    tokens = tmp_path / "tokens.csv"
    tokens.write_text("token,area\nred,colours\ngreen,colours\nblue,colours\n")  # three items
    common = ["--url", server, "--token", staff_token]

    create = ["study", "create", "two", "--name", "Two", "--tokens", str(tokens), "--set", "ballot_count=6"]
    status, out, err = yardstick(*common, *create)  # six ballots of three items cannot keep a half each

    with pytest.raises(ApiError) as refused:
        connect(server, staff_token).plan("two")
    assert (status, err) == (0, "")
    assert out == f"study 'two' created (draft)\nno plan yet: {refused.value.detail}\n"
    assert refused.value.status == 400
