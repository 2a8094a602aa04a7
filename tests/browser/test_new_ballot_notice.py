"""When an annotator's next comparison belongs to a new ballot, the voting page says a new round has begun."""

import json

import pytest
from playwright.sync_api import expect

from collection.models import Ballot
from tests.browser.test_voting import consent, study_with_words
from tests.factories import annotators, vote_until

pytestmark = pytest.mark.django_db(transaction=True)

NOTICE = "A new round has begun: ballot 2 of 3."


def test_after_the_last_vote_of_a_ballot_the_next_ballot_opens_with_a_notice(page, live_server):
    study = study_with_words(votes_per_annotator_per_ballot=None)
    consent(page, live_server, study)
    expect(page.locator("#vote-keys")).to_be_visible()
    notice = page.get_by_role("status").filter(has_text="A new round")
    expect(page.locator("#ballot-notice")).to_have_text("")
    # Everyone else judges ballot 1 but the comparison this annotator holds: theirs is its last vote.
    vote_until(study, voters=annotators(study, 12), max_votes=29)

    # Nothing is left in ballot 1: the page reloads and, once the close has opened ballot 2, shows it.
    with page.expect_navigation():
        page.keyboard.press("ArrowLeft")
    for _ in range(10):
        page.wait_for_selector("#vote-form, #nothing")
        if page.locator("#vote-form").count():
            break
        page.locator("#retry-link").click()
    expect(notice).to_have_text(NOTICE)
    expect(page.locator("[data-progress-text=ballot]")).to_have_text("2")
    assert list(Ballot.objects.filter(study=study).values_list("number", "status")) == [
        (1, "closed"),
        (2, "open"),
    ]

    # The notice has done its job once the annotator votes in the new ballot.
    assignment = page.locator("input[name=assignment]").input_value()
    page.keyboard.press("ArrowRight")
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    expect(page.locator("#ballot-notice")).to_have_text("")


def test_a_next_comparison_from_a_new_ballot_in_the_votes_answer_is_announced(page, live_server):
    # With a Celery worker, the ballot can close and the next open between a vote and the lease of the
    # annotator's next comparison, so the vote's answer carries a comparison of a new ballot. That race
    # is not reproducible on demand; the answer is rewritten to be one (the comparison itself is real).
    study = study_with_words(votes_per_annotator_per_ballot=None)
    consent(page, live_server, study)
    expect(page.locator("#vote-keys")).to_be_visible()
    page.evaluate("window.sameDocument = true")

    def as_from_ballot_2(route):
        response = route.fetch()
        answer = response.json()
        answer["next"]["progress"]["ballot"] = 2
        route.fulfill(response=response, body=json.dumps(answer))

    page.route("**/api/votes/", as_from_ballot_2)
    assignment = page.locator("input[name=assignment]").input_value()
    page.keyboard.press("ArrowLeft")
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    notice = page.locator("#ballot-notice")
    expect(notice).to_have_text(NOTICE)
    expect(notice).to_have_attribute("role", "status")  # a live region: screen readers announce it
    expect(page.locator("[data-progress-text=ballot]")).to_have_text("2")
    assert page.evaluate("window.sameDocument === true")

    # Another vote in the same ballot: no new round, the notice goes.
    assignment = page.locator("input[name=assignment]").input_value()
    page.keyboard.press("ArrowRight")
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    expect(notice).to_have_text("")
