"""A running study's live view through the client and the command line."""

from __future__ import annotations

import io

import pytest
from yardstick_client import ApiError
from yardstick_client.cli import main

from collection.models import Comparison, Vote
from tests.factories import annotators, make_study, vote_until


@pytest.fixture
def running_study(transactional_db):
    """15 items in ballots of 15, 8 and 4: the first ballot voted through by 5 annotators."""
    study = make_study(tokens=6)
    first = Comparison.objects.filter(ballot__study=study, ballot__number=1).count()
    vote_until(study, voters=annotators(study, 5), max_votes=first)
    return study


def test_a_researcher_reads_the_live_view(connect, server, staff_token, running_study):
    live = connect(server, staff_token).live(running_study.slug)

    votes = Vote.objects.filter(ballot__study=running_study).count()
    assert (live["study"], live["status"], live["votes"]) == (running_study.slug, "running", votes)
    assert [(b["number"], b["status"]) for b in live["ballots"]] == [
        (1, "closed"),
        (2, "open"),
        (3, "planned"),
    ]
    assert live["annotators"]["total"] == 5


def test_a_model_owner_cannot_read_the_live_view(connect, server, owner_token, running_study):
    with pytest.raises(ApiError) as refusal:
        connect(server, owner_token).live(running_study.slug)

    assert refusal.value.status == 403


def test_the_command_prints_the_live_view(server, staff_token, running_study):
    out, err = io.StringIO(), io.StringIO()

    status = main(
        ["--url", server, "--token", staff_token, "--quiet", "study", "live", running_study.slug],
        out=out,
        err=err,
    )

    lines = out.getvalue().splitlines()
    assert (status, err.getvalue()) == (0, "")
    assert lines[0].startswith(f"{running_study.slug}: running, ")
    assert lines[1].startswith("  ballot 1 closed  ")
    assert lines[-1].startswith("annotators: 5 in all, ")
