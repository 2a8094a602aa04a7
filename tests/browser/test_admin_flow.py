"""A researcher in real headless Chromium: logs into the admin, creates a study, uploads its tokens,
generates the items, reads the plan and starts the study; the simulations panel follows a run."""

import re

import pytest
from playwright.sync_api import expect

from collection.models import Ballot, Study
from scoring.models import SimulationRun
from tests.factories import make_study

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"
# Ten words of one area: 45 items; with n_b = 3, α = 0.5, M = 4 the ballots hold 45, 23 and 12 items
# and cost 90 + 46 + 24 = 160 comparisons (Eq. 2, 3).
TOKENS_CSV = (
    "token,area,rare\n"
    + "".join(
        f"{word},Sales & Marketing,{int(word == 'upsell')}\n"
        for word in (
            "advertising",
            "brand",
            "campaign",
            "customer",
            "discount",
            "funnel",
            "lead",
            "market share",
            "promotion",
            "upsell",
        )
    )
).encode()


def test_a_researcher_goes_from_a_tokens_csv_to_a_running_study(page, live_server, django_user_model):
    django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)

    page.goto(f"{live_server.url}/admin/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Studies, pools, votes and scores")

    page.goto(f"{live_server.url}/admin/collection/study/add/")
    page.get_by_label("Name").fill("Sales & Marketing relatedness")
    page.get_by_label("Name").press("Tab")
    expect(page.get_by_label("Slug")).to_have_value("sales-marketing-relatedness")  # filled from the name
    page.get_by_label("Ballot count").fill("3")
    page.get_by_label("Appearances").fill("4")
    page.get_by_role("button", name="Save and continue editing").first.click()
    expect(page.locator("ul.messagelist")).to_contain_text("was added successfully")
    # The seed's field shows all of a 64-bit seed's 19 digits, and its sign, without scrolling them.
    seed = page.get_by_label("Seed")
    seed.fill("-9223372036854775807")
    assert seed.evaluate("field => field.scrollWidth <= field.clientWidth") is True
    seed.fill("")
    expect(page.locator("#plan-next-step")).to_have_text(
        "Next: upload the tokens, then generate the items (or upload pairs). The plan is shown here once "
        "the study has two items or more."
    )

    page.get_by_role("link", name="Upload tokens").click()
    page.get_by_label("Tokens CSV").set_input_files(
        files=[{"name": "tokens.csv", "mimeType": "text/csv", "buffer": TOKENS_CSV}]
    )
    page.get_by_role("button", name="Upload tokens").click()
    expect(page.locator("ul.messagelist")).to_have_text(
        "Imported 10 tokens into “Sales & Marketing relatedness” (1 new semantic area). "
        "Next: generate the items."
    )

    page.get_by_role("link", name="Generate items").click()
    page.get_by_role("button", name="Generate items").click()
    expect(page.locator("ul.messagelist")).to_have_text(
        "Generated 45 items in “Sales & Marketing relatedness”."
    )
    expect(page.locator("#plan-items")).to_have_text("45")
    expect(page.locator("#plan-n-comp")).to_have_text("160")
    expect(page.locator("#pools-tokens")).to_have_text("10")

    page.get_by_role("link", name="Start").click()
    expect(page.locator("#plan-n-comp")).to_have_text("160")
    page.get_by_role("button", name="Yes, start the study").click()
    expect(page.locator("ul.messagelist")).to_contain_text(
        "“Sales & Marketing relatedness” has started: ballot 1 of 3 is open with 45 items and 90 comparisons."
    )
    expect(page.locator(".field-status .readonly")).to_have_text("running")
    expect(page.locator("#ballot-1 td").nth(0)).to_have_text("open")
    expect(page.locator("#ballot-1 .yardstick-progress-text")).to_have_text("0 / 90")
    expect(page.get_by_role("link", name="Close ballot 1 now")).to_be_visible()
    # The page opens on the study at work: its link, live view and plan above the settings, now folded.
    settings_top = page.locator("#study-settings").bounding_box()["y"]
    for shown in ("#entry-link", "#live-link", "#plan-ballots", "#ballot-1", "#checks-group"):
        assert page.locator(shown).bounding_box()["y"] < settings_top, shown
    expect(page.locator("#study-settings details").first).not_to_have_attribute("open", re.compile(".*"))
    expect(page.locator("#id_question")).not_to_be_visible()

    study = Study.objects.get(slug="sales-marketing-relatedness")
    assert study.status == Study.Status.RUNNING
    assert list(study.ballots.values_list("number", "status", "comparison_count")) == [
        (1, Ballot.Status.OPEN, 90)
    ]


def test_the_simulations_panel_follows_a_run_in_progress_without_reloading_the_page(
    page, live_server, django_user_model
):
    django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)
    study = make_study(start=False)
    run = SimulationRun.objects.create(
        study=study,
        parameters={"distribution": "exponential", "item_count": 15},
        repetitions=4,
        done=1,
        status=SimulationRun.Status.RUNNING,
    )
    page.goto(f"{live_server.url}/admin/login/?next=/admin/collection/study/{study.pk}/change/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(f"#simulation-{run.pk} .yardstick-progress-text")).to_have_text("1 / 4")
    page.evaluate("window.sameDocument = true")

    summary = {"mean": 0.9, "sd": 0.01}
    SimulationRun.objects.filter(pk=run.pk).update(
        status=SimulationRun.Status.DONE,
        done=4,
        result={
            protocol: dict.fromkeys(("rho_w", "tau_w", "rho", "tau"), summary)
            for protocol in ("uniform", "adaptive")
        },
    )

    expect(page.locator(f"#simulation-{run.pk} .yardstick-progress-text")).to_have_text("4 / 4")
    expect(page.locator(f"#simulation-{run.pk} tr[data-metric='rho_w'] td").nth(1)).to_have_text(
        "0.900 ± 0.010"
    )
    expect(page.locator("#simulations")).not_to_have_attribute("data-refresh-url", re.compile(".*"))
    assert page.evaluate("window.sameDocument") is True


def test_the_job_line_follows_an_items_generation_without_reloading_the_page(
    page, live_server, django_user_model
):
    from django.core.cache import cache

    from collection.jobs import JOB_PROGRESS_KEY
    from collection.models import StudyJob

    django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)
    study = make_study(start=False)
    job = StudyJob.objects.create(
        study=study, kind=StudyJob.Kind.ITEMS_GENERATE, total=6000, status=StudyJob.Status.RUNNING
    )
    cache.set(JOB_PROGRESS_KEY.format(job.pk), 2000, 3600)  # as the task reports after its first batch
    page.goto(f"{live_server.url}/admin/login/?next=/admin/collection/study/{study.pk}/change/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#study-job .yardstick-progress-text")).to_have_text("2000 / 6000")
    page.evaluate("window.sameDocument = true")

    cache.set(JOB_PROGRESS_KEY.format(job.pk), 4000, 3600)
    expect(page.locator("#study-job .yardstick-progress-text")).to_have_text("4000 / 6000")
    expect(page.locator("#study-job progress")).to_have_attribute("value", "4000")
    StudyJob.objects.filter(pk=job.pk).update(status=StudyJob.Status.DONE)

    expect(page.locator("#study-job")).to_contain_text("is done")
    expect(page.locator("#study-job")).not_to_have_attribute("data-refresh-url", re.compile(".*"))
    assert page.evaluate("window.sameDocument") is True
