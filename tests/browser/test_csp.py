"""Every kind of page passes the Content-Security-Policy in real Chromium, anonymously and as staff.

The ``browser_console`` fixture (conftest.py) fails a test on any CSP violation; these tests make sure
every page kind is visited: the annotators' pages, the model owners' pages, the results page with its
inline SVG plots, the instrument card, the admin (with the study page's panels) and both API docs.
"""

import numpy as np
import pytest
from django.contrib import admin
from django.urls import reverse
from playwright.sync_api import expect

from collection.models import Study
from metrics.services import submission_create
from scoring.models import SimulationRun
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"


@pytest.fixture
def studies() -> dict[str, Study]:
    finished = make_study(tokens=8, ballot_count=2, appearances=8, seed=4)
    vote_until(finished, voters=annotators(finished, 6))
    finished.refresh_from_db()
    assert finished.status == Study.Status.FINISHED
    return {
        "finished": finished,
        "running": make_study(
            votes_per_annotator_per_ballot=2,
            completion_redirect_url="https://app.prolific.com/submissions/complete",
        ),
        "draft": make_study(start=False),
    }


def visit(page, url: str) -> None:
    response = page.goto(url)
    assert response is not None and response.ok, f"{url}: {response and response.status}"
    page.wait_for_load_state("networkidle")  # scripts that fetch (the API docs) have run


def expect_api_docs(page, base: str) -> None:
    """Swagger UI and ReDoc render the schema, so their bundles ran under the policy."""
    visit(page, f"{base}/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Yardstick API")
    expect(page.locator(".opblock").first).to_be_visible()
    visit(page, f"{base}/api/redoc/")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Yardstick API")


def test_the_public_pages_pass_the_policy(page, live_server, studies):
    base = live_server.url
    running, finished, draft = studies["running"], studies["finished"], studies["draft"]

    visit(page, f"{base}/")
    expect(page.locator(f"#study-{running.slug}")).to_be_visible()
    for study in studies.values():
        visit(page, f"{base}/s/{study.slug}/")

    # An annotator: consent, a vote through vote.js, then the last one of the quota and the completion page.
    visit(page, f"{base}/s/{running.slug}/?participant=csp")
    page.get_by_label("I have read the instructions and agree to take part.").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{base}/s/{running.slug}/vote/")
    expect(page.locator("#vote-keys")).to_be_visible()  # vote.js runs
    assignment = page.locator("input[name=assignment]").input_value()
    page.keyboard.press("ArrowLeft")
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    page.keyboard.press("ArrowRight")
    expect(page.locator("#completion-link")).to_be_visible()

    visit(page, f"{base}/models/")
    visit(page, f"{base}/models/login/")
    visit(page, f"{base}/models/studies/{finished.slug}/leaderboard/")
    visit(page, f"{base}/models/studies/{finished.slug}/leaderboard/?metric=rho_w&n0=2")
    visit(page, f"{base}/models/studies/{finished.slug}/card/")
    expect(page.locator("svg.plot").first).to_be_visible()
    visit(page, f"{base}/models/studies/{draft.slug}/card/")
    visit(page, f"{base}/admin/login/")
    expect_api_docs(page, base)


def test_the_staff_and_model_owner_pages_pass_the_policy(page, live_server, django_user_model, studies):
    base = live_server.url
    running, finished, draft = studies["running"], studies["finished"], studies["draft"]
    staff = django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)
    rng = np.random.default_rng(3)
    submission = submission_create(
        study=finished,
        owner=staff,
        model_name="noisy truth",
        data=[
            {"item": item_id, "score": score + rng.normal(0, 0.05)}
            for item_id, score in finished.items.values_list("pk", "final_score")
        ],
        source_format="json",
    )
    run = SimulationRun.objects.create(
        study=draft,
        parameters={"distribution": "exponential", "item_count": 15},
        repetitions=4,
        done=1,
        status=SimulationRun.Status.RUNNING,
    )

    visit(page, f"{base}/admin/login/?next=/admin/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("link", name="View site")).to_have_attribute("href", "/")

    visit(page, f"{base}/")
    expect(page.locator("#staff-links")).to_be_visible()
    admin_pages = [
        reverse("admin:index"),
        reverse("admin:collection_study_changelist"),
        reverse("admin:collection_study_add"),
        *(reverse("admin:collection_study_change", args=[study.pk]) for study in studies.values()),
        reverse("admin:collection_study_tokens_upload", args=[draft.pk]),
        reverse("admin:collection_study_items_generate", args=[draft.pk]),
        reverse("admin:collection_study_items_upload", args=[draft.pk]),
        reverse("admin:collection_study_start", args=[draft.pk]),
        reverse("admin:collection_study_close_ballot", args=[running.pk]),
        reverse("admin:collection_study_simulate", args=[draft.pk]),
        reverse("admin:collection_study_duplicate", args=[finished.pk]),
        *(
            reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
            for model in admin.site._registry
        ),
        reverse("admin:scoring_simulationrun_change", args=[run.pk]),
        reverse("admin:auth_user_changelist"),
        reverse("admin:auth_user_change", args=[staff.pk]),
    ]
    for path in admin_pages:
        visit(page, f"{base}{path}")
    # The study page's simulations panel refreshes itself (admin-yardstick/simulations.js).
    visit(page, f"{base}{reverse('admin:collection_study_change', args=[draft.pk])}")
    expect(page.locator(f"#simulation-{run.pk}")).to_be_visible()
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

    for study in (draft, running, finished):
        visit(page, f"{base}/studies/{study.slug}/results/")
    expect(page.locator("svg.plot").first).to_be_visible()  # the finished study's Figures 2 and 4

    visit(page, f"{base}/models/")
    visit(page, f"{base}/models/studies/{finished.slug}/submit/")
    visit(page, f"{base}/models/submissions/{submission.pk}/")
    expect(page.locator("svg.plot").first).to_be_visible()
    expect_api_docs(page, base)


def test_the_console_fixture_catches_a_violation_with_and_without_javascript(
    page, new_context, live_server, browser_console
):
    """The fixture is what fails the other tests: it must see an inline style and an inline script."""

    def strict_page(route):
        route.fulfill(
            content_type="text/html",
            headers={"Content-Security-Policy": "default-src 'self'"},
            body='<p style="color: red">styled</p><script>document.title = "ran"</script>',
        )

    page.route("**/csp-probe/", strict_page)
    page.goto(f"{live_server.url}/csp-probe/")
    assert page.title() == ""  # the inline script was blocked
    assert len(browser_console.csp_problems()) == 4  # two events, two console messages
    assert sorted(v["directive"] for v in browser_console.violations) == ["script-src-elem", "style-src-attr"]
    browser_console.violations.clear()  # made on purpose: they must not fail this test
    browser_console.messages.clear()

    without_javascript = new_context(java_script_enabled=False).new_page()
    without_javascript.route("**/csp-probe/", strict_page)
    without_javascript.goto(f"{live_server.url}/csp-probe/")
    problems = browser_console.csp_problems()
    assert len(problems) == 1 and "Applying inline style violates" in problems[0], problems
    browser_console.messages.clear()
