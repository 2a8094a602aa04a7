"""The next pair arrives with neither side highlighted, whether the last vote was a tap, a click or a key.

A side that still looks hovered, focused or chosen when the next pair appears invites the annotator to
pick it again: a position bias the instrument must not have. Each test records the computed look of
both choice buttons when the page is fresh and untouched, votes, and compares once the next pair is in.
On a phone it also compares the pixels of a screenshot: Chromium paints its tap highlight
(``-webkit-tap-highlight-color``) outside the element's style, over the side just tapped.
"""

import pytest
from playwright.sync_api import expect

from tests.browser.pixels import colours_at, inner_corners
from tests.browser.test_voting import consent, study_with_words

pytestmark = pytest.mark.django_db(transaction=True)

LOOK = ["backgroundColor", "borderTopColor", "borderTopWidth", "outlineStyle", "outlineColor", "opacity"]

LOOKS_JS = """(properties) => ["left", "right"].map((side) => {
    const style = getComputedStyle(document.getElementById("choice-" + side));
    return Object.fromEntries(properties.map((name) => [name, style[name]]));
})"""


def looks(page) -> list[dict]:
    """The computed look of the left and right choice buttons, once their transitions have ended."""
    page.evaluate("Promise.all(document.getAnimations().map((animation) => animation.finished))")
    return page.evaluate(LOOKS_JS, LOOK)


def vote_and_wait_for_the_next_pair(page, cast) -> None:
    assignment = page.locator("input[name=assignment]").input_value()
    cast()
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    expect(page.locator("#choice-left")).to_be_enabled()


def expect_neither_side_selected(page, untouched: list[dict]) -> None:
    assert looks(page) == untouched
    focused = page.evaluate("document.activeElement && document.activeElement.id")
    assert focused not in {"choice-left", "choice-right", "choice-tie"}


TAP_HIGHLIGHT_JS = """["left", "right"].map(
    (side) => getComputedStyle(document.getElementById("choice-" + side)).webkitTapHighlightColor
)"""


def test_on_a_phone_the_pair_after_a_tap_arrives_with_neither_side_highlighted(
    phone_page, live_server, chromium
):
    decoder = chromium.new_page()
    study = study_with_words(votes_per_annotator_per_ballot=None)
    consent(phone_page, live_server, study)
    expect(phone_page.locator("#vote-keys")).to_be_visible()  # vote.js runs: no reload between pairs
    untouched = looks(phone_page)
    assert untouched[0] == untouched[1]
    # Chromium's own tap highlight (a translucent blue by default) is off for both sides.
    assert phone_page.evaluate(TAP_HIGHLIGHT_JS) == ["rgba(0, 0, 0, 0)"] * 2

    def corners():  # again for each pair: a pair of longer words makes the sides taller
        return inner_corners(phone_page, "#choice-left") + inner_corners(phone_page, "#choice-right")

    untouched_pixels = colours_at(decoder, phone_page.screenshot(), corners())
    assert len(set(untouched_pixels)) == 1

    for side in ["left", "right", "left"]:
        vote_and_wait_for_the_next_pair(phone_page, phone_page.locator(f"#choice-{side}").tap)
        # At once, while a highlight of the tap would still show on the side just tapped.
        assert colours_at(decoder, phone_page.screenshot(), corners()) == untouched_pixels
        expect_neither_side_selected(phone_page, untouched)


def test_on_a_desktop_the_pair_after_a_key_press_arrives_with_neither_side_highlighted(page, live_server):
    study = study_with_words(votes_per_annotator_per_ballot=None)
    consent(page, live_server, study)
    expect(page.locator("#vote-keys")).to_be_visible()
    untouched = looks(page)

    # A keyboard user tabs to the left pair and votes with Enter, then with the arrow and number keys
    # while the focus is still there: each next pair arrives with no side focused.
    for _ in range(5):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "choice-left":
            break
    vote_and_wait_for_the_next_pair(page, lambda: page.keyboard.press("Enter"))
    expect_neither_side_selected(page, untouched)
    for key in ["ArrowRight", "1", "2"]:
        vote_and_wait_for_the_next_pair(page, lambda key=key: page.keyboard.press(key))
        expect_neither_side_selected(page, untouched)

    # Tab still reaches the pairs, and the keys still vote.
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "choice-left"
    vote_and_wait_for_the_next_pair(page, lambda: page.keyboard.press("Space"))
    expect_neither_side_selected(page, untouched)


def test_on_a_desktop_a_mouse_resting_on_a_side_does_not_highlight_the_next_pair(page, live_server):
    study = study_with_words(votes_per_annotator_per_ballot=None)
    consent(page, live_server, study)
    expect(page.locator("#vote-keys")).to_be_visible()
    page.mouse.move(0, 0)
    untouched = looks(page)

    vote_and_wait_for_the_next_pair(page, page.locator("#choice-right").click)  # the mouse stays there
    expect_neither_side_selected(page, untouched)
    vote_and_wait_for_the_next_pair(page, lambda: page.keyboard.press("ArrowLeft"))
    expect_neither_side_selected(page, untouched)

    # Moving the mouse brings the hover highlight back: it shows what a click would choose.
    box = page.locator("#choice-left").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    assert looks(page)[0] != untouched[0]
