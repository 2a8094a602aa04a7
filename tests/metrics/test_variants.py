"""Every submission counts (but one that failed on our side): a cap on an owner's models per study, all of
them listed, and the leaderboard's interval widened for the owner's variants (Bonferroni)."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client

from collection.models import Study
from common.errors import StudyStateError
from metrics.evaluation import variant_adjusted_interval
from metrics.leaderboard import leaderboard_for
from metrics.models import Submission
from tests.metrics.test_api import submit_json
from tests.metrics.test_leaderboard import noisy, submit

pytestmark = pytest.mark.django_db


def test_one_variant_is_the_95_percent_interval_and_five_widen_it_to_z_2_576():
    # SD of (0.1, 0.3, 0.5) with ddof 1 is 0.2 (as _standard_error computes it).
    values = np.array([0.1, 0.3, 0.5])
    assert variant_adjusted_interval(0.4, values, 1) == pytest.approx(
        [0.4 - 1.959964 * 0.2, 0.4 + 1.959964 * 0.2]
    )
    z5 = NormalDist().inv_cdf(1 - 0.005)  # 2.5758…
    assert z5 == pytest.approx(2.5758293, abs=1e-6)
    assert variant_adjusted_interval(0.4, values, 5) == pytest.approx([0.4 - z5 * 0.2, 0.4 + z5 * 0.2])
    assert variant_adjusted_interval(0.9, values, 5)[1] == 1.0  # clipped to a coefficient's range
    with pytest.raises(ValueError):
        variant_adjusted_interval(0.4, values, 0)


def test_an_owner_cannot_pass_the_studys_cap_but_one_that_failed_on_our_side_does_not_count(study):
    Study.objects.filter(pk=study.pk).update(max_variants_per_owner=2)
    study = Study.objects.get(pk=study.pk)  # the module's shared instance stays as it was
    first = submit(study, "first", noisy(study, 1))
    Submission.objects.filter(pk=first.pk).update(status=Submission.Status.FAILED)  # a server error
    submit(study, "second", noisy(study, 2))
    submit(study, "first", noisy(study, 1))  # its name is free again
    with pytest.raises(
        StudyStateError, match=r"submitted 2 models for this study, its limit per owner \(2\)"
    ):
        submit(study, "third", noisy(study, 3))
    assert Submission.objects.filter(study=study).exclude(status=Submission.Status.FAILED).count() == 2
    submit(study, "another's", noisy(study, 4), owner="someone-else")  # the cap is per owner


def test_the_api_refuses_a_submission_past_the_cap_with_409_and_says_why(study):
    Study.objects.filter(pk=study.pk).update(max_variants_per_owner=1)
    user = User.objects.create_user("modeller", password="x")
    client = Client()
    client.force_login(user)
    first = submit_json(client, study, "one", noisy(study, 5))
    assert first.status_code == 201, first.content
    again = submit_json(client, study, "two", noisy(study, 6))
    assert again.status_code == 409
    assert "its limit per owner (1)" in again.json()["detail"]


def test_the_leaderboard_counts_each_owners_variants_lists_every_submission_and_widens_their_intervals(study):
    # Every submission is listed; one that failed on our side is not a variant.
    study = Study.objects.get(pk=study.pk)
    for seed in range(3):
        submit(study, f"variant {seed}", noisy(study, seed), owner="tuner")
    submit(study, "single", noisy(study, 9), owner="honest")
    pending = submit(study, "variant 3", noisy(study, 7), owner="tuner")
    Submission.objects.filter(pk=pending.pk).update(status=Submission.Status.FAILED)

    board = leaderboard_for(study=study, metric="tau_w", weight_offset=2.0)
    rows = {row["name"]: row for row in board["rows"]}
    assert {name: row["variants"] for name, row in rows.items()} == {  # variant 3 failed on our side
        "variant 0 (tuner)": 3,
        "variant 1 (tuner)": 3,
        "variant 2 (tuner)": 3,
        "single (honest)": 1,
    }
    single = rows["single (honest)"]
    assert single["interval_adjusted"] == pytest.approx(single["interval"])
    tuned = rows["variant 0 (tuner)"]
    # The lower side (the upper one may be clipped at 1): z·SE below the value, z from 1.96 to z(3).
    half_width = tuned["value"] - tuned["interval"][0]
    widened = tuned["value"] - tuned["interval_adjusted"][0]
    assert tuned["interval_adjusted"][0] > -1.0
    assert widened / half_width == pytest.approx(NormalDist().inv_cdf(1 - 0.025 / 3) / 1.959963984540054)
    assert [(s["model_name"], s["status"]) for s in board["submissions"]] == [
        ("variant 0", "done"),
        ("variant 1", "done"),
        ("variant 2", "done"),
        ("single", "done"),
        ("variant 3", "failed"),
    ]
    page = Client().get(f"/models/studies/{study.slug}/leaderboard/").content.decode()
    assert 'id="all-submissions"' in page and "variant 3" in page and "failed" in page
    csv_text = Client().get(f"/api/studies/{study.slug}/leaderboard/", {"format": "csv"}).content.decode()
    assert csv_text.splitlines()[0].endswith("variants,adjusted_interval_low,adjusted_interval_high,undefined")


@pytest.mark.parametrize("value", [0, 1001])
def test_the_cap_is_bounded_by_the_api_and_the_database(value, django_user_model):
    from django.db import IntegrityError, transaction

    from tests.factories import make_study

    staff = django_user_model.objects.create_user("researcher", password="x", is_staff=True)
    client = Client()
    client.force_login(staff)
    draft = make_study(start=False)
    response = client.patch(
        f"/api/studies/{draft.slug}/", {"max_variants_per_owner": value}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "max_variants_per_owner" in response.content.decode()
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=draft.pk).update(max_variants_per_owner=value)
