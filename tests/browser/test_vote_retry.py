"""The voting page when the server is briefly unavailable: it says so, retries by itself, keeps the vote."""

import pytest
from playwright.sync_api import expect

from collection.models import Vote
from tests.browser.test_voting import consent, study_with_words

pytestmark = pytest.mark.django_db(transaction=True)


def answer_unavailable_first(page, url_part: str, times: int, status: int = 503, retry_after: str = "1"):
    """Answers the first ``times`` requests whose URL contains ``url_part`` with ``status``; returns
    the list of every request seen (method, url) so the test can count the attempts."""
    seen = []

    def handle(route):
        seen.append((route.request.method, route.request.url))
        if len(seen) <= times:
            body = '{"detail": "the service is briefly unavailable"}'
            route.fulfill(
                status=status,
                body=body,
                headers={"Retry-After": retry_after, "Content-Type": "application/json"},
            )
        else:
            route.continue_()

    page.route(f"**{url_part}", handle)
    return seen


def test_a_vote_during_an_outage_is_retried_with_a_notice_and_recorded_once(page, live_server):
    study = study_with_words()
    consent(page, live_server, study)
    notice = page.locator("#vote-retry")
    expect(notice).to_be_hidden()
    attempts = answer_unavailable_first(page, "/api/votes/", times=2)

    page.locator("#choice-left").click()

    expect(notice).to_be_visible()
    expect(notice).to_contain_text("The server is briefly unavailable. Trying again to record your vote")
    expect(notice).to_be_hidden(timeout=10_000)
    expect(page.locator("#ballot-progress")).to_have_attribute("value", "1")
    assert [method for method, _ in attempts] == ["POST", "POST", "POST"]
    assert Vote.objects.filter(annotator__participant_id="abc").count() == 1
    assert page.url.endswith(f"/s/{study.slug}/vote/")  # still the page: no fallback to the plain form


def test_a_lost_answer_to_a_recorded_vote_is_retried_and_its_retry_brings_the_next_comparison(
    page, live_server
):
    # The vote reaches the server and is recorded, but its answer (which carries the next comparison)
    # is lost on the way back: the page sends the vote again, the server answers 200 with the vote it
    # already has and the comparison it leased for the first request.
    study = study_with_words()
    consent(page, live_server, study)
    attempts = []

    def record_then_drop_once(route):
        attempts.append(route.request.method)
        if len(attempts) == 1:
            route.fetch()  # the server records the vote ...
            route.abort("connectionreset")  # ... and the page never hears of it
        else:
            route.continue_()

    page.route("**/api/votes/", record_then_drop_once)
    first = page.locator("input[name=assignment]").input_value()
    with page.expect_response("**/api/votes/") as answered:
        page.keyboard.press("ArrowRight")

    expect(page.locator("input[name=assignment]")).not_to_have_value(first)
    expect(page.locator("#ballot-progress")).to_have_attribute("value", "1")
    answer = answered.value
    assert (answer.status, answer.json()["created"]) == (200, False)
    assert page.locator("input[name=assignment]").input_value() == str(answer.json()["next"]["assignment"])
    assert attempts == ["POST", "POST"]
    assert list(Vote.objects.values_list("assignment_id", "choice")) == [(int(first), "right")]


def test_too_many_votes_wait_for_retry_after_and_say_why(page, live_server):
    study = study_with_words()
    consent(page, live_server, study)
    answer_unavailable_first(page, "/api/votes/", times=1, status=429, retry_after="2")

    page.locator("#choice-right").click()

    expect(page.locator("#vote-retry")).to_contain_text(
        "Votes are arriving faster than this study takes them. Trying again to record your vote in 2 seconds"
    )
    expect(page.locator("#vote-retry")).to_be_hidden(timeout=10_000)
    assert Vote.objects.filter(annotator__participant_id="abc").count() == 1
