"""A researcher in real headless Chromium asks for the cheapest plan that reaches a target, follows the
search, reads the plan found and applies it to the draft; the panel follows a search in progress."""

import re

import pytest
from playwright.sync_api import expect

from collection.models import Study
from collection.studies import study_plan
from scoring.models import PlanSearch
from scoring.plan_search import Target
from scoring.planning import plan_search_run
from tests.factories import make_study

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"


def log_in(page, live_server, study):
    page.goto(f"{live_server.url}/admin/login/?next=/admin/collection/study/{study.pk}/change/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def test_a_researcher_submits_a_target_reads_the_cheapest_plan_and_applies_it(
    page, live_server, django_user_model, browser_console
):
    django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)
    study = make_study(start=False, pay_per_hour=12.0)  # 15 items
    log_in(page, live_server, study)

    page.get_by_role("link", name="Plan from a target").click()
    page.get_by_label("Target").fill("rho>=0.6")
    page.get_by_label("Reached").select_option("0.1")
    page.get_by_label("Voter noise σ*").fill("0.1")
    page.get_by_label("Repetitions").fill("4")
    page.get_by_role("button", name="Search").click()

    expect(page.locator("ul.messagelist")).to_contain_text(
        f"The search for the cheapest plan of “{study.name}”"
    )
    search = PlanSearch.objects.get(study=study)
    panel = page.locator(f"#plan-search-{search.pk}")
    expect(panel.locator(".plan-search-plan")).to_contain_text("M = ")  # shown once done, by itself if queued
    search.refresh_from_db()
    found, cost = search.result["plan"], search.result["cost"]
    expect(panel).to_contain_text("ρ ≥ 0.6 at the 10th percentile of the simulated repetitions")
    expect(panel.locator(".plan-search-cost")).to_contain_text(f"{cost['comparisons']:,} comparisons (Eq. 3)")
    expect(panel.locator(".plan-search-cost")).to_contain_text("GBP at 12 per hour")
    expect(panel.locator("tr.plan-search-figure-rho td").first).to_have_text(
        re.compile(r"^0\.\d{3} ± 0\.\d{3}$")
    )
    assert search.parameters["noise"] == 0.1 and search.parameters["target"]["quantile"] == 0.1

    panel.get_by_role("link", name="Apply this plan to the draft…").click()
    page.get_by_role("button", name="Apply this plan").click()
    expect(page.locator("ul.messagelist")).to_contain_text(f"The plan of “{study.name}” is now")
    expect(page.locator("#plan-n-comp")).to_have_text(f"{cost['comparisons']:,}")
    expect(page.locator("#plan-m")).to_contain_text(f"{found['appearances']}, as given")
    study = Study.objects.get(pk=study.pk)
    assert (study.ballot_count, study.appearances) == (found["ballot_count"], found["appearances"])
    assert study_plan(study=study).total_comparisons == cost["comparisons"]


def test_the_panel_follows_a_search_in_progress_without_reloading_the_page(
    page, live_server, django_user_model
):
    django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)
    study = make_study(start=False)
    search = PlanSearch.objects.create(
        study=study,
        parameters={"target": {"measure": "recall", "threshold": 0.8, "k": 3, "quantile": None}},
        status=PlanSearch.Status.RUNNING,
        done=2,
        total=12,
    )
    log_in(page, live_server, study)
    expect(page.locator(f"#plan-search-{search.pk} .yardstick-progress-text")).to_have_text(
        "2 / 12 lines of n_b and α searched"
    )
    page.evaluate("window.sameDocument = true")

    result = plan_search_run(item_count=15, target=Target("recall", 0.8, k=3), repetitions=3)
    PlanSearch.objects.filter(pk=search.pk).update(status=PlanSearch.Status.DONE, done=12, result=result)

    expect(page.locator(f"#plan-search-{search.pk} .plan-search-plan")).to_contain_text("M = ")
    expect(page.locator("#plan-search")).not_to_have_attribute("data-refresh-url", re.compile(".*"))
    assert page.evaluate("window.sameDocument") is True
