"""A submission whose evaluation fails through no fault of its owner (a server error: here the database
refuses the standing's row, as it refused NaN) shows a plain message with a reference, never SQL or a
traceback; it does not count against the owner's cap of variants, does not hold its name or its seal,
and is not counted as a variant on the leaderboard."""

from __future__ import annotations

import hashlib
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from collection.models import Study
from common.errors import ServiceError
from metrics import services
from metrics.leaderboard import leaderboard_for
from metrics.models import Evaluation, Seal, Standing, Submission
from tests.metrics.test_api import final_scores, json_rows, owner_client, submit_csv, submit_json
from tests.metrics.test_pages import logged_in, page

pytestmark = pytest.mark.django_db

# What the database says, which the owner must never read.
DATABASE_MESSAGE = 'CHECK constraint failed: (JSON_VALID("coefficients") OR "coefficients" IS NULL)'
FAILED = re.compile(
    r"the evaluation failed on our side \(reference ([0-9a-f]{12})\): it does not count against your models "
    r"for this study, and its name is free; submit it again, and if it fails again, send us the reference"
)

ON_A_PAGE = re.compile(FAILED.pattern.replace("the evaluation", "The evaluation", 1) + r"\.?")


class RefusedStandings:
    """A trigger that makes the database refuse every standing's row, until ``lift()``."""

    def __init__(self):
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    "CREATE FUNCTION refuse_standing() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    f"RAISE EXCEPTION '{DATABASE_MESSAGE}'; END $$"
                )
                cursor.execute(
                    "CREATE TRIGGER refuse_standing BEFORE INSERT ON metrics_standing "
                    "FOR EACH ROW EXECUTE FUNCTION refuse_standing()"
                )
            else:
                cursor.execute(
                    "CREATE TRIGGER refuse_standing BEFORE INSERT ON metrics_standing "
                    f"BEGIN SELECT RAISE(ABORT, '{DATABASE_MESSAGE}'); END"
                )

    def lift(self):
        with connection.cursor() as cursor:
            cursor.execute(
                "DROP TRIGGER refuse_standing ON metrics_standing"
                if connection.vendor == "postgresql"
                else "DROP TRIGGER refuse_standing"
            )


@pytest.fixture
def refused_standings(db):
    return RefusedStandings()  # the test's transaction takes the trigger back


def capped(study: Study, variants: int) -> Study:
    Study.objects.filter(pk=study.pk).update(max_variants_per_owner=variants)
    return Study.objects.get(pk=study.pk)  # the module's shared instance stays as it was


def test_a_server_error_shows_a_plain_message_with_a_reference_and_frees_the_name_and_the_cap(
    study, django_user_model, refused_standings, caplog
):
    study = capped(study, 1)
    owner = owner_client(django_user_model)
    rows = json_rows(final_scores(study))

    response = submit_json(owner, study, "truth", rows)

    assert response.status_code == 500
    detail = response.json()["detail"]
    reference = FAILED.fullmatch(detail)[1]
    failed = Submission.objects.get()
    assert (failed.status, failed.error) == ("failed", detail)
    assert owner.get("/api/submissions/").json()["results"][0]["error"] == detail
    assert owner.get(f"/api/submissions/{failed.pk}/").json()["error"] == detail
    assert (Evaluation.objects.count(), Standing.objects.count()) == (0, 0)  # no figure of it is kept
    (logged,) = [record for record in caplog.records if reference in record.getMessage()]
    assert logged.exc_info is not None and DATABASE_MESSAGE in str(logged.exc_info[1])  # for the operator

    refused_standings.lift()
    retry = submit_json(owner, study, "truth", rows)

    assert retry.status_code == 201, retry.content
    (row,) = leaderboard_for(study=study, metric="tau_w")["rows"]
    assert (row["model_name"], row["variants"]) == ("truth", 1)
    assert row["interval_adjusted"] == pytest.approx(row["interval"])  # one variant: not widened


def test_the_submission_page_shows_the_plain_message_and_no_sql(study, django_user_model, refused_standings):
    client = logged_in(django_user_model)
    scores = "item,score\n" + "".join(f"{pk},{score}\n" for pk, score in final_scores(study).items())
    upload = SimpleUploadedFile("scores.csv", scores.encode(), content_type="text/csv")

    response = client.post(f"/models/studies/{study.slug}/submit/", {"model_name": "truth", "file": upload})

    assert response.status_code == 500
    shown = page(response)
    assert ON_A_PAGE.fullmatch(shown.text["submission-problem"])
    assert "CHECK" not in response.content.decode() and "Traceback" not in response.content.decode()
    failed = Submission.objects.get()
    submission_page = page(client.get(f"/models/submissions/{failed.pk}/"))
    assert ON_A_PAGE.fullmatch(submission_page.text["evaluation-failed"])


def test_a_sealed_model_whose_evaluation_failed_can_reveal_its_seal_again(
    study, django_user_model, refused_standings
):
    study = capped(study, 1)
    owner = owner_client(django_user_model)
    text = "item,score\n" + "".join(f"{pk},{score}\n" for pk, score in final_scores(study).items())
    digest = hashlib.sha256(text.encode()).hexdigest()
    sealed = owner.post(
        f"/api/studies/{study.slug}/seals/",
        {"model_name": "sealed", "sha256": digest},
        content_type="application/json",
    )
    assert sealed.status_code == 201, sealed.content

    assert submit_csv(owner, study, "sealed", text).status_code == 500
    assert Submission.objects.get().seal is None

    refused_standings.lift()
    retry = submit_csv(owner, study, "sealed", text)

    assert retry.status_code == 201, retry.content
    assert Seal.objects.get().submission.pk == retry.json()["id"]


def test_the_service_raises_the_plain_message_for_a_worker_to_log(study, django_user_model, refused_standings):
    owner = django_user_model.objects.create_user("owner")

    with pytest.raises(ServiceError) as refused:
        services.submission_create(
            study=study, owner=owner, model_name="m", data=json_rows(final_scores(study)), source_format="json"
        )

    assert refused.value.status == 500
    assert FAILED.fullmatch(refused.value.message)
    assert Submission.objects.get().status == "failed"
