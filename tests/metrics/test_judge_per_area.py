"""In a study ranked per area, a judge's page shows its coefficients in each area (over the development
part of a study that keeps a hidden one), and the test part's section shows none per area."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from collection.models import Study
from metrics import services
from metrics.models import Submission
from tests.metrics.conftest import study_voted_to_the_end
from tests.metrics.judge_helpers import reference_rows
from tests.metrics.test_pages import page

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def per_area_study(django_db_setup, django_db_blocker):
    yield from study_voted_to_the_end(
        django_db_blocker,
        voters=10,
        crowd_seed=9,
        tokens=5,
        areas=2,
        ballot_count=2,
        appearances=16,
        seed=17,
        allow_ties=True,
        hidden_share=0.4,
        ranking_scope=Study.RankingScope.PER_AREA,
    )


def test_the_judges_page_shows_each_areas_coefficients_of_the_development_part(per_area_study, db):
    owner = User.objects.create_user("owner")
    judge = services.judge_create(
        study=per_area_study,
        owner=owner,
        judge_name="judge",
        data=reference_rows(per_area_study),
        source_format="json",
    )
    assert judge.status == Submission.Status.DONE, judge.error
    client = Client()
    client.force_login(owner)
    found = page(client.get(f"/models/judges/{judge.pk}/"))
    result = judge.evaluations.get(part="development", weight_offset=2.0).result
    rows = found.tables["areas"][1:]
    assert [row[0] for row in rows] == [entry["area"] for entry in result["areas"]] == ["Area0", "Area1"]
    first = result["areas"][0]["rho_w"]
    assert rows[0][1] == f"{first['value']:.3f} [{first['interval'][0]:.3f}, {first['interval'][1]:.3f}]"
    assert "test-part-areas" not in found.tables
    assert "test-part-coefficients" in found.tables
