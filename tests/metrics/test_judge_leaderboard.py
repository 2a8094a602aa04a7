"""The judges' leaderboard, public as the models' is: judges ranked by a coefficient of their ranking,
with the paired-bootstrap intervals of models, their agreement with the crowd and their verdict; as JSON
and as a CSV download."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import User
from django.test import Client

from metrics import services
from metrics.leaderboard import leaderboard_for
from metrics.models import Evaluation, Kind
from tests.metrics.judge_helpers import csv_bytes, reference_rows

pytestmark = pytest.mark.django_db


def judges(study) -> None:
    owner = User.objects.create_user("owner")
    for name, flip in (("with the ranking", False), ("against it", True)):
        services.judge_create(
            study=study,
            owner=owner,
            judge_name=name,
            data=csv_bytes(reference_rows(study, flip=flip)),
            source_format="file",
        )


def test_a_judge_that_decides_by_the_ranking_ranks_above_one_that_decides_against_it(study):
    judges(study)
    board = Client().get(f"/api/studies/{study.slug}/judges/leaderboard/?metric=rho_w&n0=2").json()
    assert [row["judge_name"] for row in board["rows"]] == ["with the ranking", "against it"]
    assert [row["rank"] for row in board["rows"]] == [1, 2]
    first = board["rows"][0]
    stored = Evaluation.objects.get(submission__model_name="with the ranking", weight_offset=2.0).result
    assert first["metrics"]["rho_w"]["value"] == stored["ranking"]["rho_w"]["value"]
    assert first["judge"]["kappa"] == stored["agreement"]["kappa"]
    assert first["judge"]["verdict"] == stored["verdict"]
    assert [row["judge_name"] for row in board["submissions"]] == ["with the ranking", "against it"]


def test_the_csv_gives_one_row_per_judge_with_its_agreement_and_verdict(study):
    judges(study)
    response = Client().get(f"/api/studies/{study.slug}/judges/leaderboard/?format=csv&metric=tau_w")
    assert response.status_code == 200
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="{study.slug}-judges-leaderboard-tau_w-n0-2.csv"'
    )
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    board = leaderboard_for(study=study, metric="tau_w", kind=Kind.JUDGE)
    assert [row["judge_name"] for row in rows] == [row["model_name"] for row in board["rows"]]
    for row, expected in zip(rows, board["rows"], strict=True):
        judge = expected["judge"]
        assert float(row["value"]) == pytest.approx(expected["value"])
        assert float(row["kappa"]) == pytest.approx(judge["kappa"]["value"])
        assert float(row["crowd_kappa"]) == pytest.approx(judge["kappa"]["crowd"]["value"])
        assert float(row["majority_accuracy"]) == pytest.approx(judge["majority"]["value"])
        assert row["indistinguishable_from_crowd"] == (
            "yes" if judge["verdict"]["indistinguishable"] else "no"
        )
        assert row["verdict"] == judge["verdict"]["sentence"]


def test_an_n0_the_leaderboard_does_not_offer_is_refused(study):
    response = Client().get(f"/api/studies/{study.slug}/judges/leaderboard/?n0=3")
    assert response.status_code == 400
