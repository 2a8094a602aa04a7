"""A researcher in real headless Chromium simulates the plan of a study ranked per area: the form, then
the simulations panel following a run in progress until it shows one prediction table per area."""

import re

import pytest
from playwright.sync_api import expect

from scoring.models import SimulationRun
from scoring.services import simulation_run_by_area
from scoring.simulation import SimulationConfig
from tests.collection.test_strata import two_area_study

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"


def log_in(page, live_server, django_user_model, next_url: str) -> None:
    django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)
    page.goto(f"{live_server.url}/admin/login/?next={next_url}")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def test_simulating_a_per_area_plan_shows_a_table_per_area(page, live_server, django_user_model):
    study = two_area_study(scope="per_area", start=False)  # animals 15 items, tools 10
    log_in(page, live_server, django_user_model, f"/admin/collection/study/{study.pk}/change/")

    page.get_by_role("link", name="Simulate this plan").click()
    page.get_by_label("Repetitions").fill("2")
    page.get_by_role("button", name="Simulate").click()

    run = SimulationRun.objects.get(study=study)
    panel = page.locator(f"#simulation-{run.pk}")
    expect(panel).to_contain_text("25 items in 2 areas, each simulated on its own plan")
    expect(panel.locator("table")).to_have_count(2)
    expect(panel.locator("table[data-area='animals'] caption")).to_contain_text(
        "Area “animals” (15 items, 54 comparisons)"
    )
    adaptive = run.result["areas"][1]["adaptive"]["rho_w"]
    expect(panel.locator("table[data-area='tools'] tr[data-metric='rho_w'] td").nth(1)).to_have_text(
        f"{adaptive['mean']:.3f} ± {adaptive['sd']:.3f}"
    )


def test_the_panel_follows_a_per_area_run_to_its_tables_without_reloading(
    page, live_server, django_user_model
):
    study = two_area_study(scope="per_area", start=False)
    configs = [
        (name, SimulationConfig(item_count=size, ballot_count=3, keep_fraction=0.5, appearances=4))
        for name, size in (("animals", 15), ("tools", 10))
    ]
    run = SimulationRun.objects.create(
        study=study,
        parameters={
            "ranking_scope": "per_area",
            "distribution": "exponential",
            "item_count": 25,
            "areas": [{"area": name, "config": config.as_dict()} for name, config in configs],
        },
        repetitions=3,
        done=1,
        status=SimulationRun.Status.RUNNING,
    )
    log_in(page, live_server, django_user_model, f"/admin/collection/study/{study.pk}/change/")
    expect(page.locator(f"#simulation-{run.pk} .yardstick-progress-text")).to_have_text("1 / 3")
    expect(page.locator(f"#simulation-{run.pk}")).to_contain_text("25 items in 2 areas")
    page.evaluate("window.sameDocument = true")

    result = simulation_run_by_area(configs=configs, repetitions=3, seed=0)
    SimulationRun.objects.filter(pk=run.pk).update(status=SimulationRun.Status.DONE, done=3, result=result)

    expect(page.locator(f"#simulation-{run.pk} .yardstick-progress-text")).to_have_text("3 / 3")
    expect(page.locator(f"#simulation-{run.pk} table")).to_have_count(2)
    for area in result["areas"]:
        uniform = area["uniform"]["tau_w"]
        expect(
            page.locator(
                f"#simulation-{run.pk} table[data-area='{area['area']}'] tr[data-metric='tau_w'] td"
            ).nth(0)
        ).to_have_text(f"{uniform['mean']:.3f} ± {uniform['sd']:.3f}")
    expect(page.locator("#simulations")).not_to_have_attribute("data-refresh-url", re.compile(".*"))
    assert page.evaluate("window.sameDocument") is True
