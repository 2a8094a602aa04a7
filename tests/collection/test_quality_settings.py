"""The quality-control thresholds of a study: bounded in the API, the admin form and the database,
blank turns a check off, they may change in every state, and a duplicate keeps them."""

import pytest
from django.db import IntegrityError, transaction

from collection import limits
from collection.models import Study
from collection.studies import study_duplicate, study_update
from tests.collection.test_api import staff_client  # noqa: F401  (fixture)
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db


def test_a_new_study_has_the_documented_defaults():
    study = make_study(start=False)
    assert (
        study.quality_fast_ms,
        study.quality_max_fast_share,
        study.quality_position_alpha,
        study.quality_min_majority_agreement,
        study.quality_min_self_agreement,
    ) == (1000, 0.25, 0.05, 0.6, None)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("quality_fast_ms", 0, limits.QUALITY_FAST_MS_MESSAGE),
        ("quality_fast_ms", 60_001, limits.QUALITY_FAST_MS_MESSAGE),
        ("quality_max_fast_share", 1.5, limits.QUALITY_SHARE_MESSAGE.format(name="quality_max_fast_share")),
        (
            "quality_min_majority_agreement",
            -0.1,
            limits.QUALITY_SHARE_MESSAGE.format(name="quality_min_majority_agreement"),
        ),
        ("quality_position_alpha", 0, f"{limits.QUALITY_ALPHA_MESSAGE} Got 0."),
        ("quality_position_alpha", 1, f"{limits.QUALITY_ALPHA_MESSAGE} Got 1."),
    ],
)
def test_the_api_refuses_a_threshold_out_of_bounds_with_why(staff_client, field, value, message):  # noqa: F811
    study = make_study(start=False)

    response = staff_client.patch(
        f"/api/studies/{study.slug}/", {field: value}, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [f"{field}: {message}"]
    assert getattr(Study.objects.get(pk=study.pk), field) == getattr(study, field)


def test_the_api_turns_a_check_off_with_null_while_the_study_runs(staff_client):  # noqa: F811
    study = make_study()
    response = staff_client.patch(
        f"/api/studies/{study.slug}/",
        {"quality_position_alpha": None, "quality_min_self_agreement": 0.8},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert (response.json()["quality_position_alpha"], response.json()["quality_min_self_agreement"]) == (
        None,
        0.8,
    )


def test_thresholds_change_after_the_study_finished_and_the_change_is_recorded():
    study = make_study()
    vote_until(study, voters=annotators(study, 5))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    version = study.settings_version

    saved = study_update(study=study, changes={"quality_fast_ms": 1500}, channel="api")

    assert saved.quality_fast_ms == 1500
    assert saved.settings_version != version
    assert list(saved.changes.values_list("setting", "old_value", "new_value")) == [
        ("quality_fast_ms", 1000, 1500)
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("quality_fast_ms", 0),
        ("quality_max_fast_share", 2.0),
        ("quality_position_alpha", 0.0),
        ("quality_min_self_agreement", -1.0),
    ],
)
def test_the_database_refuses_a_threshold_out_of_bounds(field, value):
    study = make_study(start=False)
    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=study.pk).update(**{field: value})


def test_a_duplicate_keeps_the_thresholds():
    study = make_study(start=False, quality_fast_ms=800, quality_min_self_agreement=0.7)
    copy = study_duplicate(study=study)
    assert (copy.quality_fast_ms, copy.quality_min_self_agreement) == (800, 0.7)
