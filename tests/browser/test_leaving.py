"""Leaving the voting page in real Chromium: closing it gives its comparison back at once (a beacon on
pagehide), a reload still shows a comparison that can be voted on, and Finish ends the session with the
completed code once the study's minimum is made, with vote.js counting down the comparisons before it."""

import time

import pytest
from playwright.sync_api import expect

from collection.models import Annotator, Assignment, Comparison, Vote
from tests.browser.test_voting import consent, study_with_words

pytestmark = pytest.mark.django_db(transaction=True)


def held(participant: str) -> Assignment:
    return Assignment.objects.get(annotator__participant_id=participant, status=Assignment.Status.ACTIVE)


def eventually(condition, seconds: float = 10.0) -> bool:
    """Whether ``condition()`` comes true within ``seconds`` (the beacon arrives on its own)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_closing_the_voting_page_gives_its_comparison_back_at_once(new_context, live_server):
    study = study_with_words(votes_per_annotator_per_ballot=None, lease_seconds=300)
    page = new_context(viewport={"width": 1100, "height": 800}).new_page()
    consent(page, live_server, study, participant="leaver")
    expect(page.locator("#vote-keys")).to_be_visible()
    assignment = held("leaver")
    assert assignment.comparison.status == Comparison.Status.LEASED

    page.close()

    def given_back() -> bool:
        assignment.refresh_from_db()
        return assignment.status == Assignment.Status.EXPIRED

    assert eventually(given_back), "the lease was not given back when the page closed"
    assignment.comparison.refresh_from_db()
    assert assignment.comparison.status == Comparison.Status.OPEN  # 300 s before its lease would lapse


def test_after_a_reload_the_comparison_shown_takes_the_vote(page, live_server):
    # The reload's request reaches the server before the old page's beacon gives its comparison back,
    # so the new page may first show the comparison given back; it must not be left showing it.
    study = study_with_words(votes_per_annotator_per_ballot=None)
    consent(page, live_server, study, participant="reloader")
    expect(page.locator("#vote-keys")).to_be_visible()

    for _ in range(3):
        page.reload()
        expect(page.locator("#choice-left")).to_be_enabled()
    page.locator("#choice-left").click()

    expect(page.locator("[data-progress-text=votes_in_ballot]")).to_have_text("1")
    expect(page.locator("#vote-error")).to_have_count(0)
    assert Vote.objects.filter(annotator__participant_id="reloader").count() == 1
    assert Assignment.objects.filter(annotator__participant_id="reloader", status="active").count() == 1


def test_finish_appears_at_the_minimum_and_ends_the_session_with_the_completed_code(page, live_server):
    study = study_with_words(votes_per_annotator_per_ballot=None, min_judgements=2)
    consent(page, live_server, study, participant="finisher")
    expect(page.locator("#finish-remaining")).to_have_text(
        "After 2 more comparisons you may finish here and leave with your completion code."
    )
    expect(page.locator("#finish-button")).to_be_hidden()

    page.locator("#choice-left").click()
    expect(page.locator("#finish-remaining")).to_have_text(
        "After 1 more comparison you may finish here and leave with your completion code."
    )
    page.keyboard.press("ArrowRight")
    expect(page.locator("#finish-remaining")).to_be_hidden()
    expect(page.locator("#finish-button")).to_be_visible()
    last = held("finisher")

    page.locator("#finish-button").click()

    expect(page.get_by_role("heading", level=1)).to_have_text("Thank you, you have finished")
    expect(page.locator("#completion-code")).to_have_text(study.completion_code)
    assert Annotator.objects.get(participant_id="finisher").finished_at is not None
    last.refresh_from_db()
    assert (last.status, last.comparison.status) == (Assignment.Status.EXPIRED, Comparison.Status.OPEN)
