"""The public leaderboard only reads: standings stored after each evaluation, none written by a request.

The study: 28 items, 2 ballots, voted to the end by 6 annotators (``conftest.finished_study``).
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from common.errors import ServiceError
from metrics import services
from metrics.leaderboard import LEADERBOARD_WEIGHT_OFFSETS, leaderboard_for
from metrics.models import Evaluation, Standing, StudyFigure, Submission

pytestmark = pytest.mark.django_db

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def truth(study) -> list[dict]:
    """The study's own final scores, by item id: the true ranking."""
    return [{"item": pk, "score": score} for pk, score in study.items.values_list("pk", "final_score")]


def noisy(study, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"item": row["item"], "score": row["score"] + rng.normal(0, 0.2)} for row in truth(study)]


def submit(study, name: str, rows: list[dict], owner: str = "owner") -> Submission:
    user, _ = User.objects.get_or_create(username=owner)
    return services.submission_create(
        study=study, owner=user, model_name=name, data=rows, source_format="json"
    )


def written_rows() -> tuple[int, int, int, int]:
    return (
        Submission.objects.count(),
        Evaluation.objects.count(),
        Standing.objects.count(),
        StudyFigure.objects.count(),
    )


def reads_only(request) -> tuple[int, list[str]]:
    """The status of ``request()`` and the SQL statements it sent that write."""
    with CaptureQueriesContext(connection) as queries:
        status = request().status_code
    return status, [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(WRITES)]


LEADERBOARD_GETS = {
    "json": lambda slug: Client().get(f"/api/studies/{slug}/leaderboard/", {"metric": "rho_w", "n0": "5"}),
    "csv": lambda slug: Client().get(f"/api/studies/{slug}/leaderboard/", {"n0": "0", "format": "csv"}),
    "page": lambda slug: Client().get(f"/models/studies/{slug}/leaderboard/", {"metric": "tau", "n0": "10"}),
}


def test_an_evaluated_submission_gets_a_standing_at_every_n0_the_leaderboard_offers(
    study, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(study, "truth", truth(study))

    standings = {s.weight_offset: s for s in Standing.objects.filter(submission=submission)}
    assert sorted(standings) == list(LEADERBOARD_WEIGHT_OFFSETS)
    default = Evaluation.objects.get(submission=submission, weight_offset=2.0).result
    assert standings[2.0].coefficients == {name: default[name] for name in ("rho_w", "tau_w", "rho", "tau")}
    assert standings[2.0].replicates == default["replicates"]
    assert standings[5.0].coefficients["rho"] == default["rho"]  # ρ and τ do not depend on n0
    assert standings[5.0].coefficients["rho_w"] != default["rho_w"]
    assert Evaluation.objects.filter(submission=submission).count() == 1  # standings are not evaluations


def test_the_standings_task_run_twice_adds_nothing(study, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(study, "truth", truth(study))

    assert services.submission_standings(submission_id=submission.pk) == 0
    assert Standing.objects.filter(submission=submission).count() == len(LEADERBOARD_WEIGHT_OFFSETS)


@pytest.mark.parametrize("kind", sorted(LEADERBOARD_GETS))
def test_a_public_get_of_the_leaderboard_writes_no_row(study, kind, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        submit(study, "truth", truth(study), owner="alice")
        submit(study, "noisy", noisy(study), owner="bob")
    before = written_rows()

    status, writes = reads_only(lambda: LEADERBOARD_GETS[kind](study.slug))

    assert (status, writes) == (200, [])
    assert written_rows() == before


@pytest.mark.parametrize("kind", sorted(LEADERBOARD_GETS))
def test_a_standing_not_stored_yet_is_computed_for_the_response_and_not_stored(study, kind):
    # Without the commit the standings task never runs: only the standing at n0 = 2 is stored. The
    # study's figures go too, so that the request has to compute the bootstrap and the chance level.
    submit(study, "truth", truth(study), owner="alice")
    submit(study, "noisy", noisy(study), owner="bob")
    StudyFigure.objects.all().delete()
    before = written_rows()
    assert before[2] == 2

    status, writes = reads_only(lambda: LEADERBOARD_GETS[kind](study.slug))

    assert (status, writes) == (200, [])
    assert written_rows() == before


def test_stored_and_computed_standings_give_the_same_leaderboard(study):
    for name, rows in (("truth", truth(study)), ("noisy", noisy(study)), ("other", noisy(study, 1))):
        submit(study, name, rows)
    computed = leaderboard_for(study=study, metric="tau_w", weight_offset=5.0)

    for submission in Submission.objects.all():
        services.submission_standings(submission_id=submission.pk)
    stored = leaderboard_for(study=study, metric="tau_w", weight_offset=5.0)

    assert Standing.objects.filter(weight_offset=5.0).count() == 3
    assert stored == computed
    assert stored["rows"][0]["model_name"] == "truth"


def test_a_submission_still_being_evaluated_is_not_ranked(
    study, monkeypatch, django_capture_on_commit_callbacks
):
    submit(study, "truth", truth(study))
    monkeypatch.setattr(services, "SYNC_EVALUATION_ITEMS", 10)  # 28 items now go to the background task
    with django_capture_on_commit_callbacks():  # captured, not run: the task has not started
        submit(study, "big", noisy(study))

    board = leaderboard_for(study=study, metric="rho_w")

    assert Submission.objects.get(model_name="big").status == Submission.Status.PENDING
    assert [row["model_name"] for row in board["rows"]] == ["truth"]


def test_the_sweep_sends_again_a_lost_evaluation_and_lost_standings(study, monkeypatch):
    ranked = submit(study, "truth", truth(study))  # its standings task was never sent (no commit)
    monkeypatch.setattr(services, "SYNC_EVALUATION_ITEMS", 10)
    pending = submit(study, "big", noisy(study))  # its evaluation task was never sent either
    assert Standing.objects.filter(submission=ranked).count() == 1

    started = services.submissions_sweep(now=timezone.now() + timedelta(minutes=2))

    assert started == 2
    pending.refresh_from_db()
    assert pending.status == Submission.Status.DONE
    assert Standing.objects.filter(submission=ranked).count() == len(LEADERBOARD_WEIGHT_OFFSETS)


def without_plain_chance(coefficients: dict) -> dict:
    """Coefficients as stored before ρ and τ had a chance level."""
    plain = ("chance_mean", "chance_sd", "p_value")
    return {
        name: {key: value for key, value in entry.items() if name in ("rho_w", "tau_w") or key not in plain}
        for name, entry in coefficients.items()
    }


def test_results_stored_before_rho_and_tau_had_a_chance_level_are_recomputed_with_it(study):
    submission = submit(study, "noisy", noisy(study))
    services.submission_standings(submission_id=submission.pk)  # every n0: only the outdated one is missing
    evaluation = submission.evaluations.get(weight_offset=2.0)
    current = evaluation.result
    standing = Standing.objects.get(submission=submission, weight_offset=2.0)
    assert set(current["rho"]) >= {"chance_mean", "chance_sd", "p_value"}
    old_result = {**current, **without_plain_chance({name: current[name] for name in standing.coefficients})}
    Evaluation.objects.filter(pk=evaluation.pk).update(result=old_result)
    Standing.objects.filter(pk=standing.pk).update(coefficients=without_plain_chance(standing.coefficients))
    assert leaderboard_for(study=study)["rows"][0]["metrics"]["rho"].get("p_value") is None  # "—" until then

    started = services.submissions_sweep(now=timezone.now() + timedelta(minutes=2))

    assert started == 1
    assert Standing.objects.get(pk=standing.pk).coefficients == standing.coefficients
    assert Standing.objects.filter(submission=submission).count() == len(LEADERBOARD_WEIGHT_OFFSETS)
    again = services.evaluation_for(submission=submission, weight_offset=2.0, top_k=evaluation.top_k)
    assert (again.pk, again.result) == (evaluation.pk, current)  # the same numbers, the chance level back
    assert Evaluation.objects.get(pk=evaluation.pk).result == current


def test_the_sweep_leaves_recent_work_to_its_task(study, monkeypatch):
    submit(study, "truth", truth(study))
    monkeypatch.setattr(services, "SYNC_EVALUATION_ITEMS", 10)
    submit(study, "big", noisy(study))

    assert services.submissions_sweep() == 0


def test_the_leaderboard_offers_only_its_weight_offsets(study):
    with pytest.raises(ServiceError, match="the leaderboard offers n0 = 0, 1, 2, 5, 10, got 3"):
        leaderboard_for(study=study, weight_offset=3.0)
