"""A researcher in real headless Chromium asks for the cheapest plan that reaches a target, follows the
search, reads the plan found with its confidence and applies it to the draft, also for a study ranked per
area (one plan shown per area); the panel follows a search in progress."""

import re

import pytest
from playwright.sync_api import expect

from collection.models import Study
from collection.studies import study_plan, study_update
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
    page.get_by_label("Confidence").select_option("0.95")
    page.get_by_label("Voter noise σ*").fill("0.1")
    page.get_by_role("button", name="Search").click()  # repetitions left blank: the fewest for the bound

    expect(page.locator("ul.messagelist")).to_contain_text(
        f"The search for the cheapest plan of “{study.name}”"
    )
    search = PlanSearch.objects.get(study=study)
    panel = page.locator(f"#plan-search-{search.pk}")
    expect(panel.locator(".plan-search-plan")).to_contain_text("M = ")  # shown once done, by itself if queued
    search.refresh_from_db()
    found, cost = search.result["plan"], search.result["cost"]
    expect(panel).to_contain_text("ρ ≥ 0.6 at the 10th percentile of the simulated repetitions")
    expect(panel).to_contain_text("with 95% confidence")
    expect(panel.locator(".plan-search-cost")).to_contain_text(f"{cost['comparisons']:,} comparisons (N_comp")
    confirmation = search.result["confirmation"]
    expect(panel.locator(".plan-search-confidence")).to_contain_text(
        f"Confirmed on 300 fresh repetitions: 10th percentile of ρ {confirmation['statistic']:.3f}, its "
        f"98.8% lower bound {confirmation['bound']:.3f} ≥ 0.6"
    )
    expect(panel.locator(".plan-search-cost")).to_contain_text("GBP at 12 per hour")
    expect(panel.locator("tr.plan-search-figure-rho td").first).to_have_text(
        re.compile(r"^0\.\d{3} ± 0\.\d{3}$")
    )
    assert search.parameters["noise"] == 0.1 and search.parameters["target"]["quantile"] == 0.1
    assert (search.parameters["confidence"], search.parameters["repetitions"]) == (0.95, 29)

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
        "2 plans simulated (at most 12)"
    )
    page.evaluate("window.sameDocument = true")

    result = plan_search_run(item_count=15, target=Target("recall", 0.8, k=3), repetitions=3)
    PlanSearch.objects.filter(pk=search.pk).update(status=PlanSearch.Status.DONE, done=12, result=result)

    expect(page.locator(f"#plan-search-{search.pk} .plan-search-plan")).to_contain_text("M = ")
    expect(page.locator("#plan-search")).not_to_have_attribute("data-refresh-url", re.compile(".*"))
    assert page.evaluate("window.sameDocument") is True


def test_a_researcher_plans_a_study_ranked_per_area_and_reads_one_plan_per_area(
    page, live_server, django_user_model, browser_console
):
    django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)
    study = make_study(start=False, areas=2, tokens=6)  # two areas of 15 items
    study_update(study=study, changes={"ranking_scope": "per_area"}, channel="admin")
    log_in(page, live_server, study)

    page.get_by_role("link", name="Plan from a target").click()
    expect(page.locator("main, #content").first).to_contain_text("reaches the target in every area")
    page.get_by_label("Target").fill("rho>=0.5")
    page.get_by_label("Repetitions").fill("6")
    page.get_by_role("button", name="Search").click()

    search = PlanSearch.objects.get(study=study)
    panel = page.locator(f"#plan-search-{search.pk}")
    expect(panel.locator(".plan-search-plan")).to_contain_text("M = ")
    search.refresh_from_db()
    areas = panel.locator("tr.plan-search-area")
    expect(areas).to_have_count(2)
    for row, area in zip(("Area0", "Area1"), search.result["areas"], strict=True):
        cells = panel.locator("tr.plan-search-area", has_text=row).locator("td")
        expect(cells.nth(0)).to_have_text("15")
        expect(cells.nth(2)).to_have_text(f"{area['comparisons']:,}")
        expect(cells.nth(4)).to_have_text(f"{area['confirmation']['bound']:.3f}")
    expect(panel).to_contain_text("Area Area1: its figures on 100 fresh repetitions against its true ranking")

    panel.get_by_role("link", name="Apply this plan to the draft…").click()
    page.get_by_role("button", name="Apply this plan").click()
    expect(page.locator("ul.messagelist")).to_contain_text(f"The plan of “{study.name}” is now")
    study = Study.objects.get(pk=study.pk)
    found = search.result["plan"]
    assert (study.ballot_count, study.appearances) == (found["ballot_count"], found["appearances"])
    assert study_plan(study=study).total_comparisons == search.result["cost"]["comparisons"]
