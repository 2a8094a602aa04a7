"""Every size has a bound, refused with a 4xx that says the limit and why; large generations run as jobs."""

import itertools

import numpy as np
import pytest
from django.test import Client
from hypothesis import given
from hypothesis import strategies as st

from collection import limits
from collection.jobs import items_generate_start, study_jobs_restart
from collection.models import Item, Study, StudyJob
from collection.pairs import area_pairs, pair_count, pairs_at
from collection.pools import items_generate, tokens_import
from common.errors import ServiceError
from tests.collection.test_api import staff_client  # noqa: F401  (fixture)
from tests.factories import make_study, tokens_csv

pytestmark = pytest.mark.django_db


# --- pagination ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["/api/studies/", "/api/studies/{slug}/tokens/", "/api/studies/{slug}/items/"]
)
@pytest.mark.parametrize("limit", ["100000000000000000000", "0", "-1", "1001", "ten"])
def test_a_limit_outside_1_to_1000_is_400_naming_the_bound(staff_client, url, limit):  # noqa: F811
    study = make_study(start=False)

    response = staff_client.get(url.format(slug=study.slug), {"limit": limit})

    assert response.status_code == 400
    assert response.json()["errors"] == [f"limit: must be a whole number from 1 to 1,000, got {limit!r}"]


def test_an_owners_submission_list_bounds_its_limit_too(django_user_model):
    owner = django_user_model.objects.create_user("owner", password="pw")
    client = Client()
    client.force_login(owner)

    assert client.get("/api/submissions/", {"limit": 10**20}).status_code == 400
    assert client.get("/api/submissions/", {"limit": 1000}).status_code == 200


def test_an_offset_past_the_rows_is_an_empty_page_and_a_huge_one_is_400(staff_client):  # noqa: F811
    study = make_study(start=False)

    past = staff_client.get(f"/api/studies/{study.slug}/items/", {"offset": 1000})
    huge = staff_client.get(f"/api/studies/{study.slug}/items/", {"offset": 10**20})

    assert (past.status_code, past.json()["results"], past.json()["count"]) == (200, [], 15)
    assert huge.status_code == 400


# --- duplicates ------------------------------------------------------------------------------------


def test_duplicating_with_the_longest_slug_and_name_fits_them_and_stays_unique(staff_client):  # noqa: F811
    study = make_study()
    Study.objects.filter(pk=study.pk).update(slug="s" * 80, name="N" * 200)
    slug = "s" * 80

    first = staff_client.post(f"/api/studies/{slug}/duplicate/", {}, content_type="application/json")
    second = staff_client.post(f"/api/studies/{slug}/duplicate/", {}, content_type="application/json")
    given_slug = staff_client.post(
        f"/api/studies/{slug}/duplicate/",
        {"slug": "r" * 80, "name": "M" * 200},
        content_type="application/json",
    )
    again = staff_client.post(
        f"/api/studies/{slug}/duplicate/", {"slug": "r" * 80}, content_type="application/json"
    )

    assert [r.status_code for r in (first, second, given_slug, again)] == [201, 201, 201, 201]
    slugs = [r.json()["slug"] for r in (first, second, given_slug, again)]
    assert slugs == ["s" * 75 + "-copy", "s" * 73 + "-copy-2", "r" * 80, "r" * 78 + "-2"]
    assert all(len(s) <= 80 for s in slugs) and len(set(slugs)) == 4
    assert first.json()["name"] == "N" * 186 + " (replication)"
    assert len(first.json()["name"]) == 200


# --- the plan --------------------------------------------------------------------------------------


def test_an_absurd_m_is_refused_with_the_bound_and_nothing_changes(staff_client):  # noqa: F811
    study = make_study(start=False)

    response = staff_client.patch(
        f"/api/studies/{study.slug}/", {"appearances": 34_724_802}, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [
        "appearances: appearances M must be at most 1,000 (the paper uses 20; every appearance is a "
        "comparison to pay for)."
    ]
    study.refresh_from_db()
    assert study.appearances == 4


def test_a_plan_beyond_the_comparison_limit_cannot_start(staff_client):  # noqa: F811
    study = make_study(start=False, tokens=60, appearances=1000, ballot_count=2)  # 1770 items

    plan = staff_client.get(f"/api/studies/{study.slug}/plan/")
    start = staff_client.post(f"/api/studies/{study.slug}/start/")

    assert plan.status_code == start.status_code == 400
    assert start.json()["detail"].startswith("this plan needs 1,327,500 comparisons (N_comp, Eq. 3)")
    assert "at most 500,000" in start.json()["detail"]
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT
    assert not study.ballots.exists()


# --- pools -----------------------------------------------------------------------------------------


def test_a_tokens_file_beyond_the_study_limit_is_refused_whole(staff_client):  # noqa: F811
    study = make_study(start=False, tokens=3)
    lines = "".join(f"t{i},big\n" for i in range(limits.MAX_TOKENS))

    response = staff_client.post(
        f"/api/studies/{study.slug}/tokens/", lines.encode(), content_type="text/csv"
    )

    assert response.status_code == 413
    assert response.json()["detail"] == (
        f"the file has {limits.MAX_TOKENS:,} tokens and the study 3; a study holds at most "
        f"{limits.MAX_TOKENS:,} tokens (its items pair them, and it holds at most {limits.MAX_ITEMS:,} "
        "items): nothing was imported"
    )
    assert study.tokens.count() == 3


def test_generating_more_items_than_a_study_holds_is_refused_with_the_cap_to_use(staff_client):  # noqa: F811
    study = Study.objects.create(name="Big", slug="big")
    tokens_import(study=study, data=tokens_csv({"A": 1000, "B": 10}))  # 499,500 + 45 pairs

    response = staff_client.post(
        f"/api/studies/{study.slug}/items/generate/", {}, content_type="application/json"
    )

    assert response.status_code == 413
    assert response.json()["detail"].startswith(
        "these tokens give 499,545 items; a study holds at most 20,000"
    )
    assert response.json()["detail"].endswith(
        "set a cap of at most 10,000 pairs per area, or use fewer tokens"
    )
    assert not Item.objects.filter(study=study).exists()


def test_a_large_generation_is_a_job_followed_to_the_end(staff_client, django_capture_on_commit_callbacks):  # noqa: F811
    study = Study.objects.create(name="Big", slug="big")
    tokens_import(study=study, data=tokens_csv({"A": 120, "B": 9}))  # 7,140 + 36 items

    with django_capture_on_commit_callbacks(execute=True):
        started = staff_client.post(
            f"/api/studies/{study.slug}/items/generate/", {}, content_type="application/json"
        )
    job = StudyJob.objects.get(study=study)
    followed = staff_client.get(started.json()["url"])

    assert started.status_code == 202
    assert started.json()["total"] == 7_176
    assert started.json()["url"] == f"/api/studies/big/jobs/{job.pk}/"
    assert followed.status_code == 200
    assert followed.json() | {"result": None} == {
        "id": job.pk,
        "kind": "items_generate",
        "status": "done",
        "done": 7_176,
        "total": 7_176,
        "percent": 100,
        "result": None,
        "error": "",
        "url": f"/api/studies/big/jobs/{job.pk}/",
    }
    assert followed.json()["result"]["items_created"] == 7_176
    assert study.items.count() == 7_176
    assert sorted(study.items.values_list("index", flat=True)) == list(range(7_176))


def test_while_a_job_is_pending_the_pools_and_the_start_are_refused_and_the_sweep_sends_it_again(
    staff_client,  # noqa: F811
):
    study = Study.objects.create(name="Big", slug="big")
    tokens_import(study=study, data=tokens_csv({"A": 110}))  # 5,995 items
    job = items_generate_start(study=study)  # its task waits for a commit that never comes here

    refused = [
        staff_client.post(f"/api/studies/{study.slug}/items/generate/", {}, content_type="application/json"),
        staff_client.post(f"/api/studies/{study.slug}/start/"),
        staff_client.post(f"/api/studies/{study.slug}/tokens/", b"x,A\n", content_type="text/csv"),
    ]
    StudyJob.objects.filter(pk=job.pk).update(created_at=job.created_at.replace(year=2000))
    restarted = study_jobs_restart()  # eager Celery: the job runs now

    assert isinstance(job, StudyJob)
    assert [r.status_code for r in refused] == [409, 409, 409]
    assert "job" in refused[0].json()["detail"]
    assert restarted == 1
    assert StudyJob.objects.get(pk=job.pk).status == StudyJob.Status.DONE
    assert study.items.count() == 5_995


def test_the_admin_starts_a_large_generation_as_a_job_and_shows_its_progress(django_user_model):
    staff = django_user_model.objects.create_superuser("admin", password="pw")
    client = Client()
    client.force_login(staff)
    study = Study.objects.create(name="Big", slug="big")
    tokens_import(study=study, data=tokens_csv({"A": 110}))

    response = client.post(
        f"/admin/collection/study/{study.pk}/items-generate/", {"max_per_area": ""}, follow=True
    )

    assert "in the background (job" in response.content.decode()
    assert 'id="study-job"' in response.content.decode()


# --- the pairs themselves --------------------------------------------------------------------------


@given(st.integers(min_value=2, max_value=300), st.data())
def test_pairs_at_gives_the_combinations_order(token_count, data):
    numbers = data.draw(st.lists(st.integers(0, pair_count(token_count) - 1), min_size=1, max_size=50))
    everything = list(itertools.combinations(range(token_count), 2))

    first, second = pairs_at(token_count, np.array(numbers))

    assert list(zip(first.tolist(), second.tolist(), strict=True)) == [everything[n] for n in numbers]


def test_pairs_at_is_exact_for_the_last_pairs_of_a_huge_area():
    n = 200_000
    first, second = pairs_at(
        n, np.array([pair_count(n) - 1, pair_count(n) - 2, pair_count(n) - 3, n - 2, n - 1])
    )

    assert first.tolist() == [n - 2, n - 3, n - 3, 0, 1]
    assert second.tolist() == [n - 1, n - 1, n - 2, n - 1, 2]


def test_a_sampled_area_keeps_the_pairs_of_the_listed_combinations_draw():
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    everything = list(itertools.combinations(range(40), 2))
    chosen = np.sort(rng_a.choice(len(everything), size=100, replace=False))

    first, second = area_pairs(40, 100, rng_b)

    assert list(zip(first.tolist(), second.tolist(), strict=True)) == [everything[i] for i in chosen]


def test_generated_items_pair_the_tokens_of_each_area_in_index_order():
    study = Study.objects.create(name="Two areas", slug="two-areas")
    tokens_import(study=study, data=tokens_csv({"B": 4, "A": 3}))

    report = items_generate(study=study)

    rows = list(study.items.order_by("index").values_list("area__name", "token_a__text", "token_b__text"))
    assert report.items_created == 9
    assert rows == [
        ("A", "a-0", "a-1"), ("A", "a-0", "a-2"), ("A", "a-1", "a-2"),
        ("B", "b-0", "b-1"), ("B", "b-0", "b-2"), ("B", "b-0", "b-3"),
        ("B", "b-1", "b-2"), ("B", "b-1", "b-3"), ("B", "b-2", "b-3"),
    ]  # fmt: skip


def test_a_cap_below_one_is_refused():
    study = Study.objects.create(name="S", slug="s")
    tokens_import(study=study, data=tokens_csv({"A": 4}))

    with pytest.raises(ServiceError, match="at least 1"):
        items_generate(study=study, max_per_area=0)
