"""Judges and models live apart: the database holds each kind to its own data, and no model list,
leaderboard or per-annotator view shows a judge, nor the judges' leaderboard a model."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.test import Client

from metrics import services
from metrics.leaderboard import annotator_view, leaderboard_for
from metrics.models import Kind, Submission
from tests.metrics.judge_helpers import csv_bytes, reference_rows
from tests.metrics.test_api import owner_client
from tests.metrics.test_leaderboard import noisy, submit

pytestmark = pytest.mark.django_db


def both(study):
    model = submit(study, "the model", noisy(study, 1))
    owner = User.objects.get(username="owner")
    judge = services.judge_create(
        study=study,
        owner=owner,
        judge_name="the judge",
        data=csv_bytes(reference_rows(study)),
        source_format="file",
    )
    assert (model.status, judge.status) == (Submission.Status.DONE, Submission.Status.DONE), judge.error
    return model, judge


@pytest.mark.parametrize(
    ("kind", "scores", "decisions"),
    [
        ("judge", [0.5], None),
        ("judge", None, None),
        ("model", None, [1.0]),
        ("model", [0.5], [1.0]),
        ("robot", [0.5], None),
    ],
)
def test_the_database_holds_each_kind_to_its_own_data(study, kind, scores, decisions):
    owner = User.objects.create_user("owner")
    with pytest.raises(IntegrityError), transaction.atomic():
        Submission.objects.create(
            study=study,
            owner=owner,
            kind=kind,
            model_name="x",
            scores=scores,
            decisions=decisions,
            covered=1,
            coverage=0.5,
            source_format="json",
        )


def test_a_judge_is_never_on_the_models_leaderboard_nor_a_model_on_the_judges(study):
    model, judge = both(study)
    models = leaderboard_for(study=study)
    judges = leaderboard_for(study=study, kind=Kind.JUDGE)
    assert [row["model_name"] for row in models["rows"]] == ["the model"]
    assert [row["model_name"] for row in models["submissions"]] == ["the model"]
    assert [row["model_name"] for row in judges["rows"]] == ["the judge"]
    assert [row["model_name"] for row in judges["submissions"]] == ["the judge"]
    assert models["rows"][0]["variants"] == judges["rows"][0]["variants"] == 1
    assert list(annotator_view(study=study)["models"]) == ["the model (owner)"]


def test_the_models_api_and_the_judges_api_list_their_own_kind(study):
    model, judge = both(study)
    client = Client()
    client.force_login(User.objects.get(username="owner"))
    assert [row["id"] for row in client.get("/api/submissions/").json()["results"]] == [model.pk]
    assert [row["id"] for row in client.get("/api/judges/").json()["results"]] == [judge.pk]
    assert client.get(f"/api/submissions/{judge.pk}/").status_code == 404
    assert client.get(f"/api/judges/{model.pk}/").status_code == 404
    assert client.get(f"/models/submissions/{judge.pk}/").status_code == 404
    assert client.get(f"/models/judges/{model.pk}/").status_code == 404
    board = client.get(f"/api/studies/{study.slug}/leaderboard/").json()
    assert [row["model_name"] for row in board["rows"]] == ["the model"]
    judges = client.get(f"/api/studies/{study.slug}/judges/leaderboard/").json()
    assert [row["judge_name"] for row in judges["rows"]] == ["the judge"]


def test_the_index_counts_models_only(study, django_user_model):
    both(study)
    page = owner_client(django_user_model, "reader").get("/models/")
    assert page.status_code == 200
    assert page.context["studies"][0].submission_count == 1
