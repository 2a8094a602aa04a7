"""A Prolific participant who waits for work past the study's longest wait leaves with the no-work code: the
copy button copies it with JavaScript; without JavaScript the code is plain text and the button stays hidden."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from collection.models import Annotator, Comparison, Study
from tests.factories import make_study

pytestmark = pytest.mark.django_db(transaction=True)

PROLIFIC_COMPLETION = "https://app.prolific.com/submissions/complete"


def waiting_past_the_limit(page, live_server, study: Study, participant: str) -> None:
    """Arrive by a Prolific link, consent, find every comparison taken, and have waited past the limit."""
    page.goto(f"{live_server.url}/s/{study.slug}/?PROLIFIC_PID={participant}&STUDY_ID=S1&SESSION_ID=X1")
    page.get_by_label("I have read the instructions and agree to take part.").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{live_server.url}/s/{study.slug}/vote/")
    expect(page.locator("#nothing")).to_have_attribute("data-reason", "all_leased")
    expect(page.locator("#completion-code")).to_have_count(0)
    Annotator.objects.filter(study=study, participant_id=participant).update(
        consented_at=timezone.now() - timedelta(seconds=study.max_wait_seconds + 1)
    )
    page.get_by_role("link", name="Check again now").click()
    expect(page.get_by_role("heading", name="You may stop here")).to_be_visible()


@pytest.fixture
def taken_study():
    study = make_study(max_wait_seconds=30, completion_redirect_url=PROLIFIC_COMPLETION)
    Comparison.objects.filter(ballot__study=study).update(
        status=Comparison.Status.LEASED, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    return study


def test_the_exit_copies_the_no_work_code_with_one_click(new_context, live_server, taken_study):
    context = new_context(viewport={"width": 1100, "height": 800})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()

    waiting_past_the_limit(page, live_server, taken_study, "5f0c1a2b3c4d5e6f7a8b9c0d")
    copy = page.locator("button[data-copy=completion-code]")
    expect(copy).to_be_visible()
    copy.click()

    expect(page.locator("#copy-status")).to_have_text(f"Code {taken_study.no_work_code} copied.")
    expect(copy).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == taken_study.no_work_code
    expect(page.locator("#completion-link")).to_have_attribute(
        "href", f"{PROLIFIC_COMPLETION}?cc={taken_study.no_work_code}"
    )
    annotator = Annotator.objects.get(study=taken_study)
    assert (annotator.prolific_study_id, annotator.prolific_session_id) == ("S1", "X1")


def test_without_javascript_the_code_is_plain_text_and_no_button_shows(new_context, live_server, taken_study):
    page = new_context(viewport={"width": 390, "height": 844}, java_script_enabled=False).new_page()

    waiting_past_the_limit(page, live_server, taken_study, "60aa1b2c3d4e5f6a7b8c9d0e")

    expect(page.locator("#completion-code")).to_have_text(taken_study.no_work_code)
    expect(page.locator("button[data-copy]")).to_be_hidden()
    expect(page.locator("#completion-link")).to_have_attribute(
        "href", f"{PROLIFIC_COMPLETION}?cc={taken_study.no_work_code}"
    )
