"""Every annotator page and every public page passes axe-core with no serious or critical violation, in
real Chromium at a desktop size (1280 × 800) and at a phone size (360 × 740), and on the phone in the dark
colour scheme.

axe-core comes from the ``axe-playwright-python`` package (the ``test`` extra), which bundles its script;
the rules run are axe's WCAG 2.0/2.1 A and AA ones (colour contrast among them). A test fails on any
new serious or critical violation and prints each with the elements it was found on; it also fails on a
page wider than the window (WCAG 1.4.10, Reflow: a wide table or plot scrolls in its own region).
"""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from axe_playwright_python.sync_playwright import Axe
from django.test import RequestFactory
from django.utils import timezone
from playwright.sync_api import expect

from collection.models import Annotator, Comparison, Study
from common.unavailable import unavailable_response
from metrics.services import judge_create, submission_create
from tests.factories import annotators, make_study, vote_until
from tests.metrics.judge_helpers import reference_rows

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"
CONSENT = "I have read the instructions and agree to take part."
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PHONE = {"viewport": {"width": 360, "height": 740}, "is_mobile": True, "has_touch": True}
# The pages follow the system's colour scheme (site.css): the dark one is checked too, on a phone.
SCREENS = {"desktop": DESKTOP, "phone": PHONE, "phone-dark": {**PHONE, "color_scheme": "dark"}}
BLOCKING_IMPACTS = {"serious", "critical"}
WCAG_AA_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

AXE = Axe()


def blocking_violations(page, name: str) -> list[str]:
    """axe-core's serious and critical WCAG A/AA violations on the page as shown, one readable line
    per element: "<page>: <rule> (<impact>) <help> at <selector>: <what fails>"."""
    results = AXE.run(page, options={"runOnly": {"type": "tag", "values": WCAG_AA_TAGS}})
    found = []
    for violation in results.response["violations"]:
        if violation["impact"] not in BLOCKING_IMPACTS:
            continue
        for node in violation["nodes"]:
            summary = "; ".join(check["message"] for check in node["any"] + node["all"] + node["none"])
            found.append(
                f"{name}: {violation['id']} ({violation['impact']}) {violation['help']}"
                f" at {', '.join(map(str, node['target']))}: {summary}"
            )
    return found


@pytest.fixture
def studies(django_user_model) -> dict:
    finished = make_study(tokens=8, ballot_count=2, appearances=8, seed=4)
    vote_until(finished, voters=annotators(finished, 6))
    finished.refresh_from_db()
    assert finished.status == Study.Status.FINISHED
    owner = django_user_model.objects.create_user("ada", password=PASSWORD)
    rng = np.random.default_rng(3)
    truth = list(finished.items.values_list("pk", "final_score"))
    submissions = [
        submission_create(
            study=finished,
            owner=owner,
            model_name=name,
            data=[{"item": item, "score": score + rng.normal(0, noise)} for item, score in truth],
            source_format="json",
        )
        for name, noise in (("MiniLM cosine", 0.05), ("Random baseline", 5.0))
    ]
    judge = judge_create(
        study=finished,
        owner=owner,
        judge_name="LLM judge",
        data=reference_rows(finished),
        source_format="json",
    )
    taken = make_study(
        max_wait_seconds=30, completion_redirect_url="https://app.prolific.com/submissions/complete"
    )
    Comparison.objects.filter(ballot__study=taken).update(
        status=Comparison.Status.LEASED, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    return {
        "finished": finished,
        "running": make_study(
            votes_per_annotator_per_ballot=2,
            completion_redirect_url="https://app.prolific.com/submissions/complete",
        ),
        "taken": taken,
        "draft": make_study(start=False),
        "submission": submissions[0],
        "judge": judge,
    }


def annotator_pages(page, base: str, studies: dict, participant: str, settings):
    """Walks an annotator through every page they can meet; yields each page's name once it shows."""
    running, taken = studies["running"], studies["taken"]
    page.goto(f"{base}/s/{running.slug}/?participant={participant}")
    yield "consent"
    page.locator("form:has(#consent)").evaluate("form => form.submit()")  # untick, past the browser's check
    expect(page.get_by_text("Tick the box to confirm")).to_be_visible()
    yield "consent refused"
    page.get_by_label(CONSENT).check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{base}/s/{running.slug}/vote/")
    expect(page.locator("#vote-keys")).to_be_visible()
    yield "voting"
    form = page.locator("#vote-form")
    form.evaluate("form => { form.elements.assignment.value = '0'; form.submit(); }")  # the plain form
    expect(page.get_by_role("heading", level=1)).to_have_text("That vote was not recorded")
    yield "vote error"
    page.goto(f"{base}/s/{running.slug}/vote/")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#vote-status")).not_to_be_empty()
    yield "voting, after a vote"
    page.keyboard.press("ArrowRight")
    expect(page.locator("#completion-code")).to_be_visible()
    yield "completion"
    annotator = Annotator.objects.get(study=running, participant_id=participant)
    Annotator.objects.filter(pk=annotator.pk).update(finished_at=timezone.now())
    page.goto(f"{base}/s/{running.slug}/vote/")
    yield "finished early"
    Annotator.objects.filter(pk=annotator.pk).update(excluded_at=timezone.now())
    page.goto(f"{base}/s/{running.slug}/vote/")
    yield "screened out"

    page.goto(f"{base}/s/{taken.slug}/?participant={participant}")
    page.get_by_label(CONSENT).check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{base}/s/{taken.slug}/vote/")
    expect(page.locator("#nothing")).to_have_attribute("data-reason", "all_leased")
    yield "waiting"
    Annotator.objects.filter(study=taken, participant_id=participant).update(
        consented_at=timezone.now() - timedelta(seconds=taken.max_wait_seconds + 1)
    )
    page.get_by_role("link", name="Check again now").click()
    expect(page.locator("#completion-code")).to_be_visible()
    yield "no work"

    framework = dict(settings.REST_FRAMEWORK)
    framework["DEFAULT_THROTTLE_RATES"] = {
        **framework["DEFAULT_THROTTLE_RATES"],
        "next.participant": "1/hour",
    }
    settings.REST_FRAMEWORK = framework
    response = page.goto(f"{base}/s/{taken.slug}/vote/")
    assert response.status == 429
    yield "too fast"

    # The database does not answer: the page that says so, as the server renders it.
    unavailable = unavailable_response(RequestFactory().get("/s/"))
    page.route(
        f"{base}/unavailable/",
        lambda route: route.fulfill(
            status=503, body=unavailable.content, content_type="text/html; charset=utf-8"
        ),
    )
    page.goto(f"{base}/unavailable/")
    yield "unavailable (503)"


def public_pages(page, base: str, studies: dict):
    finished, draft = studies["finished"], studies["draft"]
    for name, path in (
        ("home", "/"),
        ("entry, not started", f"/s/{draft.slug}/"),
        ("entry, finished", f"/s/{finished.slug}/"),
        ("models", "/models/"),
        ("leaderboard", f"/models/studies/{finished.slug}/leaderboard/"),
        ("leaderboard by rho_w", f"/models/studies/{finished.slug}/leaderboard/?metric=rho_w&n0=2"),
        ("judges' leaderboard", f"/models/studies/{finished.slug}/judges/leaderboard/"),
        ("instrument card", f"/models/studies/{finished.slug}/card/"),
        ("instrument card, not finished", f"/models/studies/{draft.slug}/card/"),
        ("model owner login", "/models/login/"),
    ):
        page.goto(f"{base}{path}")
        yield name
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{base}/models/studies/{finished.slug}/submit/")
    yield "submit form"
    page.goto(f"{base}/models/submissions/{studies['submission'].pk}/")
    yield "submission"
    page.goto(f"{base}/models/studies/{finished.slug}/judges/submit/")
    yield "judge form"
    page.goto(f"{base}/models/judges/{studies['judge'].pk}/")
    yield "judge"


@pytest.mark.parametrize("screen", SCREENS)
def test_every_page_has_no_serious_or_critical_violation(new_context, live_server, studies, settings, screen):
    page = new_context(**SCREENS[screen]).new_page()
    checked, found = [], []
    for walk in (
        annotator_pages(page, live_server.url, studies, f"axe-{screen}", settings),
        public_pages(page, live_server.url, studies),
    ):
        for name in walk:
            checked.append(name)
            found += blocking_violations(page, name)
            width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            if width[0] > width[1]:  # WCAG 1.4.10 Reflow: wide content scrolls in its own region
                found.append(f"{name}: the page is {width[0]} px wide in a {width[1]} px window")
    print(f"{screen}: {len(checked)} pages checked by axe-core: {', '.join(checked)}")
    assert found == [], f"{len(found)} serious or critical violations on the {screen} screen:\n" + "\n".join(
        found
    )
