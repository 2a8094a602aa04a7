"""The admin's plan from a target: the form, the search as a task with its progress, the result with its
confidence, studies ranked per area, and applying the plan (or the plan without warnings) to a draft
(staff with the permission to change studies; drafts only)."""

from __future__ import annotations

import re

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from collection.models import Study, StudyChange
from collection.studies import study_plan, study_update
from scoring.models import PlanSearch
from scoring.plan import ballot_plan
from scoring.plan_search import Target
from scoring.planning import plan_search_run
from tests.factories import make_study

pytestmark = pytest.mark.django_db

VIEWS = ("plan_target", "plan_searches", "plan_apply")
FORM = {
    "target": "rho>=0.6",
    "reach": "mean",
    "confidence": "0.9",
    "noise": "0.2",
    "repetitions": "3",
    "distribution": "exponential",
}


def view_url(name: str, study: Study) -> str:
    return reverse(f"admin:collection_study_{name}", args=[study.pk])


def change_url(study: Study) -> str:
    return reverse("admin:collection_study_change", args=[study.pk])


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def texts(html: str, css_class: str) -> list[str]:
    return [
        re.sub(r"\s+", " ", inner).strip()
        for _tag, inner in re.findall(
            rf'<(\w+)[^>]*class="[^"]*\b{css_class}\b[^"]*"[^>]*>(.*?)</\1>', html, re.S
        )
    ]


@pytest.mark.django_db(transaction=True)
def test_the_search_runs_to_the_end_and_the_panel_shows_the_cheapest_plan(admin_client):
    study = make_study(start=False, pay_per_hour=12.0)  # 15 items

    response = admin_client.post(view_url("plan_target", study), FORM)

    assert response.status_code == 302
    assert response["Location"] == change_url(study) + "#plan-search"
    assert messages_of(response) == [
        f"The search for the cheapest plan of “{study.name}” is done: the plan is below."
    ]
    search = PlanSearch.objects.get(study=study)
    assert search.status == "done" and search.done == search.total > 0
    found = search.result["plan"]
    priced = ballot_plan(
        item_count=15,
        ballot_count=found["ballot_count"],
        keep_fraction=found["keep_fraction"] or 0.5,
        appearances=found["appearances"],
    )
    money = priced.total_comparisons * 6 / 3600 * 12
    page = admin_client.get(change_url(study)).content.decode()
    assert 'src="/static/admin-yardstick/simulations.js"' in page  # it refreshes the search's panel too
    assert f'href="{view_url("plan_target", study)}"' in page
    panel = admin_client.get(view_url("plan_searches", study)).content.decode()
    assert "data-refresh-url" not in panel
    [cost] = texts(panel, "plan-search-cost")
    assert cost == (
        f"{priced.total_comparisons:,} comparisons (N_comp, Eq. 3), {priced.total_comparisons * 6 / 3600:,.2f} hours of "
        f"voting at 6 s each (Eq. 10), {money:,.2f} GBP at 12 per hour"
    )
    rows = re.findall(r'<tr class="plan-search-figure-([\w@]+)"><th scope="row">([^<]+)</th>', panel)
    assert rows == [
        ("rho_w", "ρ_w"),
        ("tau_w", "τ_w"),
        ("rho", "ρ"),
        ("tau", "τ"),
        ("recall@10", "top-10 recall"),
        ("precision@10", "P@10"),
    ]
    assert f'href="{view_url("plan_apply", study)}?search={search.pk}"' in panel
    [confidence] = texts(panel, "plan-search-confidence")
    confirmation = search.result["confirmation"]
    assert confidence.startswith(
        f"Confirmed on 100 fresh repetitions: mean ρ {confirmation['statistic']:.3f}, its 97.5% lower bound "
        f"{confirmation['bound']:.3f} ≥ 0.6 (confirmation {confirmation['attempt'] + 1} of at most 4, each at "
        "97.5%, so the answer holds with 90% confidence)."
    )
    assert "Its figures on 100 fresh repetitions against the true ranking" in panel

    # Applying it sets the draft's plan: the plan panel then prices the same N_comp.
    confirm = admin_client.get(view_url("plan_apply", study) + f"?search={search.pk}")
    assert confirm.status_code == 200
    applied = admin_client.post(view_url("plan_apply", study), {"search": search.pk})
    assert applied["Location"] == change_url(study) + "#plan"
    study.refresh_from_db()
    assert (study.ballot_count, study.appearances, study.comparison_budget) == (
        found["ballot_count"],
        found["appearances"],
        None,
    )
    assert study_plan(study=study).total_comparisons == priced.total_comparisons


@pytest.mark.django_db(transaction=True)
def test_a_running_study_can_search_but_not_apply(admin_client):
    study = make_study(start=True)
    before = (study.ballot_count, study.keep_fraction, study.appearances)
    admin_client.post(view_url("plan_target", study), FORM)
    search = PlanSearch.objects.get(study=study)
    assert search.status == "done" and search.result["plan"] is not None

    panel = admin_client.get(view_url("plan_searches", study)).content.decode()
    assert "plan-search-apply" not in panel
    refused = admin_client.post(view_url("plan_apply", study), {"search": search.pk})
    assert refused.status_code == 409
    assert "cannot change any more" in refused.content.decode()
    study.refresh_from_db()
    assert (study.ballot_count, study.keep_fraction, study.appearances) == before
    assert not StudyChange.objects.filter(study=study).exists()


def test_a_bad_target_is_refused_on_the_form_and_nothing_is_queued(admin_client):
    study = make_study(start=False)
    response = admin_client.post(view_url("plan_target", study), {**FORM, "target": "rho_w = 2"})
    assert response.status_code == 400
    assert "cannot read the target" in response.content.decode()
    response = admin_client.post(view_url("plan_target", study), {**FORM, "target": "recall@15>=0.9"})
    assert response.status_code == 400
    assert "the cutoff K must be smaller than the number of items (15)" in response.content.decode()
    assert not PlanSearch.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_study_ranked_per_area_gets_one_plan_shown_per_area_and_applies_it(admin_client):
    study = make_study(start=False, areas=2)  # two areas of 15 items
    study_update(study=study, changes={"ranking_scope": "per_area"}, channel="admin")
    form = admin_client.get(view_url("plan_target", study)).content.decode()
    assert "reaches the target in every area" in form
    response = admin_client.post(view_url("plan_target", study), FORM)
    assert response.status_code == 302
    search = PlanSearch.objects.get(study=study)
    assert search.parameters["area_item_counts"] == {"Area0": 15, "Area1": 15}
    panel = admin_client.get(view_url("plan_searches", study)).content.decode()
    rows = re.findall(r'<tr class="plan-search-area"><th scope="row">(\w+)</th><td>(\d+)</td>', panel)
    assert rows == [("Area0", "15"), ("Area1", "15")]
    assert "ρ ≥ 0.6 on average over the simulated repetitions, with 90% confidence, in every area" in panel
    admin_client.post(view_url("plan_apply", study), {"search": search.pk})
    study.refresh_from_db()
    found = search.result["plan"]
    assert (study.ballot_count, study.appearances) == (found["ballot_count"], found["appearances"])
    assert study_plan(study=study).total_comparisons == search.result["cost"]["comparisons"]


@pytest.mark.django_db(transaction=True)
def test_a_warned_plan_shows_the_plan_without_warnings_which_can_be_applied(admin_client):
    study = make_study(start=False, tokens=21)  # 210 items: plans without §2.7 warnings exist
    admin_client.post(view_url("plan_target", study), {**FORM, "target": "rho>=0.3"})
    search = PlanSearch.objects.get(study=study)
    other = search.result["without_warnings"]
    assert search.result["warnings"] and other is not None
    panel = admin_client.get(view_url("plan_searches", study)).content.decode()
    [beside] = texts(panel, "plan-search-without-warnings")
    assert beside.startswith("Cheapest plan without §2.7 warnings: adaptive, ")
    link = f'href="{view_url("plan_apply", study)}?search={search.pk}&amp;which=without_warnings"'
    assert link in panel
    confirm = admin_client.get(view_url("plan_apply", study) + f"?search={search.pk}&which=without_warnings")
    assert f"M = {other['plan']['appearances']} (ballots of" in confirm.content.decode()
    admin_client.post(view_url("plan_apply", study), {"search": search.pk, "which": "without_warnings"})
    study.refresh_from_db()
    assert (study.ballot_count, study.appearances) == (
        other["plan"]["ballot_count"],
        other["plan"]["appearances"],
    )
    assert study_plan(study=study).warnings == ()


def test_a_percentile_target_with_too_few_repetitions_is_refused_in_words(admin_client):
    study = make_study(start=False)
    response = admin_client.post(
        view_url("plan_target", study), {**FORM, "reach": "0.05", "repetitions": "20"}
    )
    assert response.status_code == 400
    assert "Repetitions must be at least 45 for a 0.9 lower bound of the 5th percentile of ρ" in (
        response.content.decode()
    )
    assert not PlanSearch.objects.exists()


def test_a_search_stored_before_confirmations_says_to_search_again(admin_client):
    study = make_study(start=False)
    PlanSearch.objects.create(
        study=study,
        parameters={},
        status="done",
        result={"target": {"text": "ρ ≥ 0.6 on average over the simulated repetitions"}, "plan": {}},
    )
    panel = admin_client.get(view_url("plan_searches", study)).content.decode()
    assert texts(panel, "plan-search-unconfirmed") == [
        "This search ran before plans were confirmed on fresh simulations with a stated confidence: search again."
    ]
    assert "plan-search-apply" not in panel


def test_a_search_in_progress_makes_the_panel_refresh_itself(admin_client):
    study = make_study(start=False)
    search = PlanSearch.objects.create(
        study=study,
        parameters={"target": {"measure": "recall", "threshold": 0.9, "k": 5}},
        done=3,
        total=12,
        status="running",
    )
    html = admin_client.get(change_url(study)).content.decode()
    assert f'id="plan-search" data-refresh-url="{view_url("plan_searches", study)}"' in html
    assert '<progress value="3" max="12">25%</progress>' in html
    assert f"Search {search.pk}: top-5 recall ≥ 0.9" in html


def test_applying_needs_a_done_search_of_this_study_for_its_current_items(admin_client):
    study, other = make_study(start=False), make_study(start=False)
    result = plan_search_run(item_count=14, target=Target("rho", 0.5), repetitions=2)  # one item fewer
    search = PlanSearch.objects.create(study=study, parameters={}, status="done", result=result)
    assert admin_client.post(view_url("plan_apply", other), {"search": search.pk}).status_code == 404
    assert admin_client.post(view_url("plan_apply", study), {}).status_code == 404
    stale = admin_client.post(view_url("plan_apply", study), {"search": search.pk})
    assert stale.status_code == 400
    assert "The search planned for 14 items and the study now has 15: search again." in stale.content.decode()
    PlanSearch.objects.filter(pk=search.pk).update(status="running")
    assert admin_client.post(view_url("plan_apply", study), {"search": search.pk}).status_code == 400


@pytest.fixture
def non_staff_client(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("annotator", password="pw"))
    return client


@pytest.fixture
def staff_without_permissions(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("assistant", password="pw", is_staff=True))
    return client


@pytest.mark.parametrize("name", VIEWS)
@pytest.mark.parametrize("method", ["get", "post"])
def test_anonymous_and_non_staff_users_are_sent_to_the_admin_login(client, non_staff_client, name, method):
    study = make_study(start=False)
    url = view_url(name, study)
    for visitor in (client, non_staff_client):
        response = getattr(visitor, method)(url)
        assert (response.status_code, response["Location"]) == (302, f"/admin/login/?next={url}")


@pytest.mark.parametrize("name", VIEWS)
def test_staff_without_the_permission_on_studies_are_refused(staff_without_permissions, name):
    study = make_study(start=False)
    search = PlanSearch.objects.create(study=study, parameters={}, status="done", result={})
    response = staff_without_permissions.post(view_url(name, study), {**FORM, "search": search.pk})
    assert response.status_code == 403
    assert not PlanSearch.objects.exclude(pk=search.pk).exists()
    assert Study.objects.get(pk=study.pk).appearances == 4
