"""The judges' pages: the upload form (with the pairs to decide), a judge's page with its verdict first,
and the public judges' leaderboard, linked from the models' pages; all without JavaScript."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from metrics.leaderboard import leaderboard_for
from metrics.models import Kind, Submission
from tests.factories import make_study
from tests.metrics.judge_helpers import csv_bytes, reference_rows
from tests.metrics.test_pages import logged_in, page

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(django_user_model):
    return logged_in(django_user_model)


def upload(owner, study, name: str, content: bytes):
    file = SimpleUploadedFile("judge.csv", content, content_type="text/csv")
    return owner.post(f"/models/studies/{study.slug}/judges/submit/", {"judge_name": name, "file": file})


def test_the_form_labels_its_fields_and_links_the_pairs_to_decide(study, owner):
    found = page(owner.get(f"/models/studies/{study.slug}/judges/submit/"))
    assert {"id_judge_name", "id_description", "id_file"} <= set(found.attributes)
    assert (
        "Download the study's pairs (CSV)",
        f"/models/studies/{study.slug}/judge-pairs.csv",
    ) in found.links


def test_an_uploaded_judge_leads_to_its_page_with_the_verdict_first(study, owner):
    response = upload(owner, study, "by the ranking", csv_bytes(reference_rows(study)))
    judge = Submission.objects.get(kind=Kind.JUDGE)
    assert (response.status_code, response["Location"]) == (302, f"/models/judges/{judge.pk}/")
    found = page(owner.get(response["Location"]))
    result = judge.evaluations.get(weight_offset=2.0).result
    assert found.text["verdict"] == result["verdict"]["sentence"]
    assert found.text["judge-status"] == "done"
    assert [row[0] for row in found.tables["coefficients"][1:]] == [
        "ρ_w (weighted Spearman)",
        "τ_w (weighted Kendall)",
        "ρ (Spearman)",
        "τ (Kendall)",
    ]
    assert found.tables["agreement"][1][0] == "Accuracy against the crowd's majority"
    assert found.text["recall"] == f"{result['ranking']['retrieval']['recall_at_k']:.3f}"


def test_bad_rows_are_listed_on_the_form_and_nothing_is_stored(study, owner):
    response = upload(owner, study, "bad", b"pair,decision\n1,tie\n99999,left\n")
    assert response.status_code == 400
    found = page(response)
    assert found.text["submission-problems"] == (
        "line 2, pair 1: this study does not allow ties: decide left or right"
        "line 3: pair 99999 is not one of the study's pairs, numbered "
        f"1 to {len(reference_rows(study))}"
    )
    assert not Submission.objects.exists()


def test_the_judges_leaderboard_shows_each_judges_kappa_majority_accuracy_and_verdict(study, owner, client):
    upload(owner, study, "by the ranking", csv_bytes(reference_rows(study)))
    upload(owner, study, "against it", csv_bytes(reference_rows(study, flip=True)))
    found = page(client.get(f"/models/studies/{study.slug}/judges/leaderboard/?metric=rho_w"))
    rows = found.tables["judges-leaderboard"][1:]
    board = leaderboard_for(study=study, metric="rho_w", kind=Kind.JUDGE)
    assert [row[1] for row in rows] == [row["model_name"] for row in board["rows"]]
    first = board["rows"][0]["judge"]
    assert rows[0][7] == first["verdict"]["sentence"]
    assert rows[0][6] == f"{first['kappa']['value']:.3f} ({first['kappa']['crowd']['value']:.3f})"


def test_the_models_pages_link_the_judges_pages(study, owner, client):
    board = page(client.get(f"/models/studies/{study.slug}/leaderboard/"))
    assert ("The judges' leaderboard", f"/models/studies/{study.slug}/judges/leaderboard/") in board.links
    submit = page(owner.get(f"/models/studies/{study.slug}/submit/"))
    assert ("Submit a judge instead", f"/models/studies/{study.slug}/judges/submit/") in submit.links


def test_a_study_that_has_not_finished_has_no_judges_pages(owner, client):
    running = make_study(tokens=5)
    assert owner.get(f"/models/studies/{running.slug}/judges/submit/").status_code == 409
    assert client.get(f"/models/studies/{running.slug}/judges/leaderboard/").status_code == 409
    assert owner.get(f"/models/studies/{running.slug}/judge-pairs.csv").status_code == 409
