"""An annotator in real headless Chromium: the study link, consent, votes by click and key to the quota,
the progress moving, the completion code; the same without JavaScript, and on a phone.

With YARDSTICK_SCREENSHOT=1 the desktop test saves docs/voting-page.png (docs/researchers.md shows it).
"""

import csv
import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from collection.models import Assignment, Study, Vote
from tests.factories import make_study

pytestmark = pytest.mark.django_db(transaction=True)

CAP = 4
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "voting-page.png"
PROLIFIC_COMPLETION = "https://app.prolific.com/submissions/complete"

with open(ROOT / "collection" / "data" / "demo_tokens.csv", encoding="utf-8") as demo:
    DEMO_WORDS = [row["token"] for row in csv.DictReader(demo)]


def study_with_words(words=DEMO_WORDS, **fields) -> Study:
    """``make_study`` (6 tokens, 15 items, a cap of 4 votes per ballot), named and with its tokens renamed
    to words of the demo area, so the page reads as it does in use."""
    fields.setdefault("votes_per_annotator_per_ballot", CAP)
    study = make_study(**fields)
    study.name = "Sales & Marketing relatedness"
    study.save(update_fields=["name"])
    for token, word in zip(study.tokens.order_by("pk"), words, strict=False):
        token.text = word
        token.save(update_fields=["text"])
    return study


def consent(page, live_server, study: Study, participant: str = "abc") -> None:
    page.goto(f"{live_server.url}/s/{study.slug}/?participant={participant}")
    expect(page.get_by_role("heading", level=1)).to_have_text(study.name)
    page.get_by_label("I have read the instructions and agree to take part.").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{live_server.url}/s/{study.slug}/vote/")


def shown_pairs_of(participant: str) -> tuple[str, str]:
    """The two items of the comparison the participant holds, as the page should show them."""
    comparison = (
        Assignment.objects.select_related(
            "comparison__left_item__token_a",
            "comparison__left_item__token_b",
            "comparison__right_item__token_a",
            "comparison__right_item__token_b",
        )
        .get(annotator__participant_id=participant, status=Assignment.Status.ACTIVE)
        .comparison
    )
    return str(comparison.left_item), str(comparison.right_item)


def expect_progress(page, votes: int) -> None:
    expect(page.locator("#quota-progress")).to_have_attribute("value", str(votes))
    expect(page.locator("#ballot-progress")).to_have_attribute("value", str(votes))


def expect_comparison_of(page, participant: str) -> None:
    left, right = shown_pairs_of(participant)
    expect(page.locator("#choice-left")).to_have_text(left)
    expect(page.locator("#choice-right")).to_have_text(right)


def test_an_annotator_votes_by_click_and_key_to_the_quota_and_gets_the_completion_code(page, live_server):
    study = study_with_words(completion_redirect_url=PROLIFIC_COMPLETION)
    consent(page, live_server, study)
    expect(page.locator("#vote-keys")).to_be_visible()  # vote.js runs
    expect(page.locator("#question")).to_have_text(study.question)
    expect_progress(page, 0)
    expect(page.locator("#quota-progress")).to_have_attribute("max", str(CAP))
    expect_comparison_of(page, "abc")
    page.evaluate("window.sameDocument = true")  # gone if the page reloads

    votes = [
        ("left", lambda: page.locator("#choice-left").click()),
        ("right", lambda: page.keyboard.press("ArrowRight")),
        ("right", lambda: page.locator("#choice-right").click()),
        ("left", lambda: page.keyboard.press("ArrowLeft")),
    ]
    for number, (_, cast) in enumerate(votes[:-1], start=1):
        assignment = page.locator("input[name=assignment]").input_value()
        cast()
        expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
        expect_progress(page, number)
        expect(page.locator("#choice-left")).to_be_enabled()
        expect_comparison_of(page, "abc")
        assert page.evaluate("window.sameDocument === true"), "the next comparison came with a full reload"
        if number == 1 and os.environ.get("YARDSTICK_SCREENSHOT") == "1":
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.mouse.move(0, 0)
            page.wait_for_timeout(300)  # the hover highlight fades out
            page.screenshot(path=str(SCREENSHOT))

    votes[-1][1]()  # the last vote of the quota: nothing comes next, the page reloads to say so
    expect(page.locator("#completion-code")).to_have_text(study.completion_code)
    expect(page.get_by_role("heading", level=1)).to_have_text("Thank you, you are done")
    expect(page.locator("#completion-link")).to_have_attribute(
        "href", f"{PROLIFIC_COMPLETION}?cc={study.completion_code}"
    )
    expect(page.locator("#quota-progress")).to_have_attribute("value", str(CAP))

    recorded = list(Vote.objects.filter(annotator__participant_id="abc").order_by("pk"))
    assert [vote.choice for vote in recorded] == [choice for choice, _ in votes]
    assert all(vote.client_response_ms is not None for vote in recorded)
    assert Vote.objects.count() == CAP


def test_each_judgement_is_one_request_and_the_next_pair_comes_from_the_votes_answer(page, live_server):
    study = study_with_words(votes_per_annotator_per_ballot=None)
    consent(page, live_server, study)
    expect(page.locator("#vote-keys")).to_be_visible()
    sent, answers = [], []
    page.on(
        "request", lambda request: sent.append((request.method, request.url.removeprefix(live_server.url)))
    )
    page.on("response", lambda response: answers.append(response) if "/api/votes/" in response.url else None)

    for number, key in enumerate(["ArrowLeft", "ArrowRight", "1", "2", "ArrowLeft"], start=1):
        assignment = page.locator("input[name=assignment]").input_value()
        page.keyboard.press(key)
        expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
        expect(page.locator("#choice-left")).to_be_enabled()
        carried = answers[-1].json()["next"]
        # The page shows the comparison the vote's answer carried, which is the one the annotator holds.
        assert page.locator("input[name=assignment]").input_value() == str(carried["assignment"])
        expect(page.locator("#choice-left")).to_have_text(" – ".join(carried["left"]["tokens"]))
        expect(page.locator("#choice-right")).to_have_text(" – ".join(carried["right"]["tokens"]))
        expect_comparison_of(page, "abc")
        expect(page.locator("[data-progress-text=votes_in_ballot]")).to_have_text(str(number))

    assert sent == [("POST", "/api/votes/")] * 5  # no GET next, no reload: one request per judgement
    assert Vote.objects.filter(annotator__participant_id="abc").count() == 5


def test_a_tie_by_key_when_the_study_allows_ties(page, live_server):
    study = study_with_words(allow_ties=True)
    consent(page, live_server, study)
    expect(page.get_by_role("button", name="Equally related")).to_be_visible()
    page.keyboard.press("=")
    expect_progress(page, 1)
    page.keyboard.press("0")
    expect_progress(page, 2)
    assert list(Vote.objects.order_by("pk").values_list("choice", flat=True)) == ["tie", "tie"]


def test_when_the_api_fails_the_vote_goes_through_the_plain_form(page, live_server):
    study = study_with_words()
    consent(page, live_server, study)
    page.route("**/api/votes/", lambda route: route.fulfill(status=500, body="down"))
    first = page.locator("input[name=assignment]").input_value()
    page.keyboard.press("ArrowLeft")
    expect(page.locator("input[name=assignment]")).not_to_have_value(first)
    expect_progress(page, 1)
    expect_comparison_of(page, "abc")
    vote = Vote.objects.get()
    assert (vote.assignment_id, vote.choice) == (int(first), "left")
    assert vote.client_response_ms is not None


def test_without_javascript_the_annotator_votes_with_the_plain_form(new_context, live_server):
    study = study_with_words()
    page = new_context(java_script_enabled=False, viewport={"width": 1100, "height": 800}).new_page()
    consent(page, live_server, study)
    expect(page.locator("#vote-keys")).to_be_hidden()
    documents = []
    page.on(
        "request",
        lambda request: (
            documents.append((request.method, request.url.removeprefix(live_server.url)))
            if request.resource_type == "document"
            else None
        ),
    )
    for number in range(1, CAP + 1):
        expect_comparison_of(page, "abc")
        page.locator("#choice-left" if number % 2 else "#choice-right").click()
        page.wait_for_load_state()
        if number < CAP:
            expect_progress(page, number)
    expect(page.locator("#completion-code")).to_have_text(study.completion_code)
    # Each vote's answer is the next comparison's page; only the last, with nothing next, redirects.
    vote_page = f"/s/{study.slug}/vote/"
    assert documents == [("POST", vote_page)] * CAP + [("GET", vote_page)]
    recorded = list(Vote.objects.order_by("pk").values_list("choice", "client_response_ms"))
    assert recorded == [("left", None), ("right", None), ("left", None), ("right", None)]


def test_on_a_phone_both_items_are_visible_without_horizontal_scrolling(phone_page, live_server):
    longest = sorted(DEMO_WORDS, key=len, reverse=True)
    study = study_with_words(words=longest)
    consent(phone_page, live_server, study)
    width = phone_page.evaluate("window.innerWidth")
    height = phone_page.evaluate("window.innerHeight")
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= width
    for side in ("left", "right"):
        button = phone_page.locator(f"#choice-{side}")
        expect(button).to_be_in_viewport(ratio=1)
        box = button.bounding_box()
        assert 0 <= box["x"] and box["x"] + box["width"] <= width
        assert 0 <= box["y"] and box["y"] + box["height"] <= height
    phone_page.locator("#choice-right").tap()
    expect_progress(phone_page, 1)
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= width
