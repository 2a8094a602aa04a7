"""The instructions, opened again from the voting page, with and without JavaScript, lose no comparison."""

import pytest
from playwright.sync_api import expect

from collection.models import Vote
from tests.browser.test_voting import consent, expect_comparison_of, study_with_words

pytestmark = pytest.mark.django_db(transaction=True)


def test_on_a_phone_the_instructions_open_and_close_over_the_same_comparison(phone_page, live_server):
    study = study_with_words()
    consent(phone_page, live_server, study)
    expect(phone_page.locator("#vote-keys")).to_be_visible()
    phone_page.evaluate("window.sameDocument = true")  # gone if the page reloads
    assignment = phone_page.locator("input[name=assignment]").input_value()
    instructions = phone_page.get_by_text(study.instructions)
    expect(instructions).to_be_hidden()

    phone_page.get_by_text("Instructions", exact=True).tap()
    expect(instructions).to_be_visible()
    expect(phone_page.locator("#instructions")).to_contain_text("your participant id")
    phone_page.get_by_role("link", name="Back to the comparison").tap()

    expect(instructions).to_be_hidden()
    assert phone_page.evaluate("document.activeElement.id") == "question"
    expect(phone_page.locator("#choice-left")).to_be_in_viewport(ratio=1)
    assert phone_page.evaluate("window.sameDocument === true")
    assert phone_page.locator("input[name=assignment]").input_value() == assignment
    expect_comparison_of(phone_page, "abc")
    phone_page.locator("#choice-right").tap()
    expect(phone_page.locator("input[name=assignment]")).not_to_have_value(assignment)
    assert list(Vote.objects.values_list("assignment_id", "choice")) == [(int(assignment), "right")]


def test_while_the_instructions_are_open_the_keys_still_vote(page, live_server):
    study = study_with_words()
    consent(page, live_server, study)
    expect(page.locator("#vote-keys")).to_be_visible()
    page.get_by_text("Instructions", exact=True).click()
    expect(page.get_by_text(study.instructions)).to_be_visible()
    assignment = page.locator("input[name=assignment]").input_value()
    page.keyboard.press("ArrowLeft")
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    assert list(Vote.objects.values_list("assignment_id", "choice")) == [(int(assignment), "left")]


def test_without_javascript_the_instructions_open_and_the_comparison_stays(new_context, live_server):
    study = study_with_words()
    page = new_context(java_script_enabled=False, viewport={"width": 390, "height": 844}).new_page()
    consent(page, live_server, study)
    assignment = page.locator("input[name=assignment]").input_value()
    instructions = page.get_by_text(study.instructions)
    expect(instructions).to_be_hidden()

    page.get_by_text("Instructions", exact=True).click()
    expect(instructions).to_be_visible()
    page.get_by_role("link", name="Back to the comparison").click()  # a jump within the page
    assert page.url == f"{live_server.url}/s/{study.slug}/vote/#vote-form"
    expect(page.locator("#choice-left")).to_be_in_viewport(ratio=1)
    assert page.locator("input[name=assignment]").input_value() == assignment
    expect_comparison_of(page, "abc")

    page.locator("#choice-left").click()
    page.wait_for_load_state()
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    expect(page.get_by_text(study.instructions)).to_be_hidden()  # the next page starts with them closed
    assert list(Vote.objects.values_list("assignment_id", "choice")) == [(int(assignment), "left")]
