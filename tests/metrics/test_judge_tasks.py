"""A judge's evaluation is a task like a model's: a lost task is sent again by the sweep, a task run twice
stores nothing twice, and a failure on our side frees the judge's name."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from metrics import services
from metrics.leaderboard import LEADERBOARD_WEIGHT_OFFSETS
from metrics.models import Evaluation, Standing, StudyFigure, Submission
from tests.metrics.judge_helpers import csv_bytes, reference_rows
from tests.metrics.test_failed_evaluations import FAILED, RefusedStandings

pytestmark = pytest.mark.django_db


def judge(study, name: str = "judge", *, flip: bool = False) -> Submission:
    owner, _ = User.objects.get_or_create(username="owner")
    return services.judge_create(
        study=study, owner=owner, judge_name=name, data=csv_bytes(reference_rows(study, flip=flip)), source_format="file"
    )


def written_rows() -> tuple[int, int, int, int]:
    return Submission.objects.count(), Evaluation.objects.count(), Standing.objects.count(), StudyFigure.objects.count()


def test_a_large_judge_waits_for_its_task_and_the_sweep_sends_a_lost_one_again(study, monkeypatch):
    monkeypatch.setattr(services, "SYNC_EVALUATION_PAIRS", 10)
    pending = judge(study)  # its task was never sent (no commit in a test)
    assert (pending.status, pending.progress) == (Submission.Status.PENDING, 0)
    assert services.submissions_sweep() == 0  # recent: left to its task

    started = services.submissions_sweep(now=timezone.now() + timedelta(minutes=2))

    assert started == 1
    pending.refresh_from_db()
    assert (pending.status, pending.progress) == (Submission.Status.DONE, 100)
    assert Standing.objects.filter(submission=pending).count() == 1  # the default n0's, with the evaluation
    assert services.submissions_sweep(now=timezone.now() + timedelta(minutes=2)) == 1  # its other standings
    assert Standing.objects.filter(submission=pending).count() == len(LEADERBOARD_WEIGHT_OFFSETS)


def test_the_evaluation_and_the_standings_run_twice_store_nothing_twice(study):
    done = judge(study)
    services.submission_standings(submission_id=done.pk)
    before = written_rows()
    evaluation = Evaluation.objects.get(submission=done, weight_offset=2.0)

    services.submission_evaluate(submission_id=done.pk)
    assert services.submission_standings(submission_id=done.pk) == 0

    assert written_rows() == before
    assert Evaluation.objects.get(submission=done, weight_offset=2.0).result == evaluation.result


def test_a_failure_on_our_side_frees_the_judges_name_and_keeps_no_figure(study):
    refused = RefusedStandings()  # the database refuses the standing's row: a server error
    with pytest.raises(services.EvaluationFailed) as failed:
        judge(study)
    assert failed.value.status == 500
    stored = Submission.objects.get()
    assert (stored.status, stored.error) == (Submission.Status.FAILED, failed.value.message)
    assert FAILED.fullmatch(stored.error)
    assert not Evaluation.objects.exists() and not Standing.objects.exists()
    refused.lift()
    assert judge(study).status == Submission.Status.DONE  # the same name again
