"""An annotator who uses only a keyboard and a screen reader, in real headless Chromium: they reach the
consent box and Start with Tab, vote with Tab and Enter or Space on the choice buttons, always see where
the focus is, and hear each choice's words and, after each vote, that it was recorded and which pair
comes next (a polite live region)."""

import re

import pytest
from playwright.sync_api import expect

from collection.models import Vote
from tests.browser.test_voting import shown_pairs_of, study_with_words

pytestmark = pytest.mark.django_db(transaction=True)

# The element that has the focus, and the outline the browser draws around it.
FOCUS_JS = """() => {
    const element = document.activeElement;
    const style = getComputedStyle(element);
    return {
        id: element.id || element.name || element.tagName.toLowerCase(),
        outlineStyle: style.outlineStyle,
        outlineWidth: parseFloat(style.outlineWidth),
        outlineColor: style.outlineColor,
        background: getComputedStyle(document.body).backgroundColor,
    };
}"""


def tab_to(page, element_id: str, limit: int = 30) -> dict:
    """Presses Tab until the element ``element_id`` has the focus; returns the focus as FOCUS_JS sees it."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        focus = page.evaluate(FOCUS_JS)
        if focus["id"] == element_id:
            return focus
    raise AssertionError(f"{limit} presses of Tab never reached #{element_id}")


def relative_luminance(css_color: str) -> float:
    """WCAG 2.1's relative luminance of an "rgb(r, g, b)" colour."""
    channels = [int(part) / 255 for part in re.findall(r"\d+", css_color)[:3]]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: str, second: str) -> float:
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def expect_visible_focus(focus: dict) -> None:
    """A ring of 2 px or more whose colour has 3:1 contrast with the page (WCAG 2.1, 1.4.11)."""
    assert focus["outlineStyle"] != "none" and focus["outlineWidth"] >= 2, focus
    assert contrast_ratio(focus["outlineColor"], focus["background"]) >= 3, focus


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_an_annotator_votes_with_the_keyboard_alone_and_hears_each_pair(new_context, live_server, scheme):
    page = new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme).new_page()
    study = study_with_words()
    page.goto(f"{live_server.url}/s/{study.slug}/?participant=keys")
    expect_visible_focus(tab_to(page, "consent"))
    page.keyboard.press("Space")
    expect(page.locator("#consent")).to_be_checked()
    start = page.get_by_role("button", name="Start")
    for _ in range(10):
        if start.evaluate("button => button === document.activeElement"):
            break
        page.keyboard.press("Tab")
    expect_visible_focus(page.evaluate(FOCUS_JS))
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/s/{study.slug}/vote/")
    expect(page.locator("#vote-keys")).to_be_visible()

    left, right = shown_pairs_of("keys")
    expect(page.locator("#vote-form")).to_match_aria_snapshot(
        f"""
        - group "{study.question}":
          - button "{left}"
          - button "{right}"
        - paragraph: "Keys: ← or 1 left, → or 2 right."
        - status
        """
    )
    status = page.locator("#vote-status")
    expect(status).to_have_attribute("aria-live", "polite")

    expect_visible_focus(tab_to(page, "choice-left"))
    page.keyboard.press("Enter")
    expect(status).to_contain_text("Vote recorded.")
    following = shown_pairs_of("keys")
    assert following != (left, right)
    expect(status).to_have_text(f"Vote recorded. Next: {following[0]} or {following[1]}.")
    expect(page.get_by_role("button", name=following[0], exact=True)).to_be_visible()
    # The focus left the button used, so that no side of the new pair looks chosen.
    assert page.evaluate(FOCUS_JS)["id"] == "question"

    expect_visible_focus(tab_to(page, "choice-right", limit=3))
    page.keyboard.press("Space")
    expect(page.locator("#quota-progress")).to_have_attribute("value", "2")
    after = shown_pairs_of("keys")
    expect(status).to_have_text(f"Vote recorded. Next: {after[0]} or {after[1]}.")

    votes = Vote.objects.filter(annotator__participant_id="keys").order_by("pk")
    assert [(vote.choice, str(vote.assignment.comparison.left_item)) for vote in votes] == [
        ("left", left),
        ("right", following[0]),
    ]
