"""A broker that is down never costs a vote: the vote that completes a ballot is stored and answered 201
at once, the failure is logged, and the sweep closes the ballot later. The site runs in a subprocess with
real (not eager) Celery pointed at a Redis port nobody listens on, and its own SQLite database."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, time
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.test import Client
from collection.identity import SESSION_ANNOTATORS
from collection.models import Ballot, Vote
from collection.identity import annotator_consent, annotator_for
from tests.factories import make_study

study = make_study(tokens=4, ballot_count=2, appearances=2)   # ballot 1: 6 items, 6 comparisons
client = Client(raise_request_exception=False)
session = client.session
annotator = annotator_consent(annotator=annotator_for(study=study, session_key=session.session_key))
session[SESSION_ANNOTATORS] = {str(study.pk): annotator.pk}
session.save()
ballot = Ballot.objects.get(study=study, number=1)
answers = []
for number in range(ballot.comparison_count):
    assignment = client.get(f"/api/studies/{study.slug}/next/").json()["assignment"]
    started = time.perf_counter()
    response = client.post("/api/votes/", {"assignment": assignment, "choice": "left" if number % 3 else "right"},
                           content_type="application/json")
    answers.append([response.status_code, time.perf_counter() - started])
ballot.refresh_from_db()
after_votes = [ballot.status, Vote.objects.filter(ballot=ballot).count(), ballot.votes_recorded]

from config.celery import app
app.conf.task_always_eager = True   # the sweep, as beat would run it once the broker is back
from collection.lifecycle import ballots_sweep
counts = ballots_sweep()
ballot.refresh_from_db()
print(json.dumps({"answers": answers, "after_votes": after_votes, "swept": counts["ballots_closed"],
                  "after_sweep": ballot.status, "next_ballot": Ballot.objects.filter(study=study, number=2).exists()}))
"""


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_completing_vote_is_201_at_once_with_the_broker_down_and_the_sweep_closes_the_ballot(tmp_path):
    port = closed_port()
    environment = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    environment.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        YARDSTICK_DATA_DIR=str(tmp_path),
        REDIS_URL=f"redis://127.0.0.1:{port}/0",
        CELERY_BROKER_URL=f"redis://127.0.0.1:{port}/0",
        CELERY_TASK_ALWAYS_EAGER="false",
        THROTTLE_VOTE_PARTICIPANT="off",
        THROTTLE_NEXT_PARTICIPANT="off",
    )
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=180
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    outcome = json.loads(completed.stdout.strip().splitlines()[-1])

    statuses = [status for status, _ in outcome["answers"]]
    completing_seconds = outcome["answers"][-1][1]
    assert statuses == [201] * 6
    assert completing_seconds < 2.0  # one bounded attempt at the broker, not Celery's publish retries
    assert outcome["after_votes"] == ["open", 6, 6]  # stored, counted; the close could not be sent
    assert "could not start scoring.ballot_close" in completed.stderr  # logged
    assert (outcome["swept"], outcome["after_sweep"], outcome["next_ballot"]) == (1, "closed", True)
