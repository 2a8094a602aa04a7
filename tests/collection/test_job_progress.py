"""A job on a study's pools (generating items) shows its progress from 0 to all of it: the task reports
it once per batch of items written, the admin's job line (which its script refreshes) and the API read
it, and the line stops asking to be refreshed once the job is done."""

import pytest
from django.test import Client

from collection.jobs import items_generate_start, study_job_run
from collection.models import Study, StudyJob
from collection.pools import items_generate, tokens_import
from tests.factories import tokens_csv

pytestmark = pytest.mark.django_db

TOKENS = 110  # 110 · 109 / 2 = 5,995 items: more than a request makes (limits.SYNC_GENERATION_ITEMS)
ITEMS = 5_995


@pytest.fixture
def staff():
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.create_superuser("admin", password="pw"))
    return client


def test_generation_reports_its_progress_once_per_batch_up_to_every_item():
    study = Study.objects.create(name="Big", slug="big")
    tokens_import(study=study, data=tokens_csv({"A": TOKENS}))
    reported = []

    items_generate(study=study, progress=lambda done, total: reported.append((done, total)))

    # Batches of 2,000 items: 2,000, 4,000 and the last 1,995.
    assert reported == [(2000, ITEMS), (4000, ITEMS), (ITEMS, ITEMS)]


def test_the_job_line_and_the_api_go_from_nothing_done_to_all_of_it(staff):
    study = Study.objects.create(name="Big", slug="big")
    tokens_import(study=study, data=tokens_csv({"A": TOKENS}))
    job = items_generate_start(study=study)  # its task waits for a commit that never comes here
    line_url = f"/admin/collection/study/{study.pk}/job/"

    before = staff.get(line_url).content.decode()
    api_before = staff.get(f"/api/studies/{study.slug}/jobs/{job.pk}/").json()
    study_job_run(job_id=job.pk)
    after = staff.get(line_url).content.decode()
    api_after = staff.get(f"/api/studies/{study.slug}/jobs/{job.pk}/").json()

    assert isinstance(job, StudyJob)
    assert f'data-refresh-url="{line_url}"' in before
    assert f'<progress value="0" max="{ITEMS}">0%</progress>' in before
    assert (api_before["done"], api_before["percent"]) == (0, 0)
    assert "data-refresh-url" not in after
    assert "is done" in after
    assert (api_after["done"], api_after["percent"]) == (ITEMS, 100)
    assert StudyJob.objects.get(pk=job.pk).status == StudyJob.Status.DONE


def test_the_job_line_is_for_staff(client):
    study = Study.objects.create(name="Big", slug="big")
    response = client.get(f"/admin/collection/study/{study.pk}/job/")
    assert response.status_code == 302  # to the admin's login
