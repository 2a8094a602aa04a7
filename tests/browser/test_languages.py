"""The voting page in German (left to right) and in Arabic (right to left) in Chromium: the Arabic layout
mirrors the pairs and the key hints, each arrow key chooses the pair shown on its side, the digits keep
the reading order, and the script's messages come in the page's language.

At a phone's size (360 × 740) the Arabic pages fit the window and the pairs stay side by side, mirrored,
a tap choosing the pair under it.

The screenshots go to YARDSTICK_SCREENSHOT_DIR when it is set (to look at them), else to the test's
temporary directory.
"""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from collection.models import StudyTranslation, Vote
from tests.browser.test_voting import study_with_words

pytestmark = pytest.mark.django_db(transaction=True)

TEXTS = {
    "de": {
        "name": "Verwandtschaft im Vertrieb und Marketing",
        "question": "Welches Wortpaar ist enger verwandt?",
        "instructions": "Sie sehen zwei Wortpaare. Wählen Sie das Paar, dessen Wörter enger verwandt sind.",
    },
    "ar": {
        "name": "ترابط كلمات المبيعات والتسويق",
        "question": "أي زوج من الكلمات أشد ترابطًا؟",
        "instructions": "سترى زوجين من الكلمات. اختر الزوج الذي تكون كلمتاه أشد ترابطًا في المعنى.",
    },
}
RECORDED = {"de": "Stimme gespeichert.", "ar": "سُجِّل الصوت."}


def screenshot_path(tmp_path: Path, name: str) -> Path:
    directory = Path(os.environ.get("YARDSTICK_SCREENSHOT_DIR") or tmp_path)
    directory.mkdir(parents=True, exist_ok=True)
    return directory / name


def centre(page, selector: str) -> float:
    box = page.locator(selector).bounding_box()
    return box["x"] + box["width"] / 2


def key_hint_centres(page) -> dict[str, float]:
    """The horizontal centre of each key of the keys' hint below the pairs, by the key's symbol."""
    hints = page.locator("#vote-keys kbd")
    return {
        hints.nth(index).inner_text(): centre(page, f"#vote-keys kbd >> nth={index}")
        for index in range(hints.count())
    }


def vote_by_key(page, key: str, participant: str) -> str:
    """Press ``key`` and wait for the next pair; the choice the vote recorded."""
    assignment = page.locator("input[name=assignment]").input_value()
    page.keyboard.press(key)
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    expect(page.locator("#choice-left")).to_be_enabled()
    return (
        Vote.objects.filter(annotator__participant_id=participant, assignment_id=int(assignment)).get().choice
    )


@pytest.mark.parametrize("language, right_to_left", [("de", False), ("ar", True)])
def test_the_voting_page_mirrors_right_to_left_and_each_arrow_chooses_the_pair_on_its_side(
    page, live_server, tmp_path, language, right_to_left
):
    study = study_with_words(votes_per_annotator_per_ballot=None)
    StudyTranslation.objects.create(study=study, language=language, **TEXTS[language])
    participant = f"p-{language}"
    page.goto(f"{live_server.url}/s/{study.slug}/?participant={participant}&lang={language}")
    expect(page.get_by_role("heading", level=1)).to_have_text(TEXTS[language]["name"])
    page.screenshot(path=str(screenshot_path(tmp_path, f"entry-{language}.png")), full_page=True)
    page.locator("#consent").check()
    page.locator("form.consent button[type=submit]").click()
    page.wait_for_url(f"{live_server.url}/s/{study.slug}/vote/")
    expect(page.locator("#vote-keys")).to_be_visible()  # vote.js runs

    assert page.evaluate("[document.documentElement.lang, document.documentElement.dir]") == [
        language,
        "rtl" if right_to_left else "ltr",
    ]
    expect(page.locator("#question")).to_have_text(TEXTS[language]["question"])
    page.mouse.move(0, 0)
    page.wait_for_timeout(300)  # no hover highlight in the picture
    page.screenshot(path=str(screenshot_path(tmp_path, f"voting-{language}.png")), full_page=True)

    # The first pair ("left" in the data, key 1) stands where reading starts: on the right in Arabic.
    first, second = centre(page, "#choice-left"), centre(page, "#choice-right")
    assert (first > second) == right_to_left
    keys = key_hint_centres(page)
    assert set(keys) == {"←", "→", "1", "2"}
    assert keys["←"] < keys["→"]  # each arrow's hint on its own side, in either direction
    assert (keys["1"] > keys["2"]) == right_to_left  # the first pair's digit on the first pair's side

    # ArrowLeft chooses the pair shown on the left, ArrowRight the one on the right; 1 the first pair.
    assert vote_by_key(page, "ArrowLeft", participant) == ("right" if right_to_left else "left")
    expect(page.locator("#vote-status")).to_contain_text(RECORDED[language])
    assert vote_by_key(page, "ArrowRight", participant) == ("left" if right_to_left else "right")
    assert vote_by_key(page, "1", participant) == "left"
    assert vote_by_key(page, "2", participant) == "right"


def test_the_arabic_voting_page_mirrors_at_phone_size_without_a_sideways_scroll(
    new_context, live_server, tmp_path
):
    study = study_with_words(votes_per_annotator_per_ballot=None)
    StudyTranslation.objects.create(study=study, language="ar", **TEXTS["ar"])
    page = new_context(viewport={"width": 360, "height": 740}, is_mobile=True, has_touch=True).new_page()
    page.goto(f"{live_server.url}/s/{study.slug}/?participant=p-phone&lang=ar")
    expect(page.get_by_role("heading", level=1)).to_have_text(TEXTS["ar"]["name"])
    page.screenshot(path=str(screenshot_path(tmp_path, "entry-ar-phone.png")), full_page=True)
    assert page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]") == [360, 360]
    page.locator("#consent").check()
    page.locator("form.consent button[type=submit]").click()
    page.wait_for_url(f"{live_server.url}/s/{study.slug}/vote/")
    expect(page.locator("#vote-keys")).to_be_visible()
    assert page.evaluate("document.documentElement.dir") == "rtl"
    page.screenshot(path=str(screenshot_path(tmp_path, "voting-ar-phone.png")), full_page=True)

    # WCAG 1.4.10 Reflow: nothing wider than the 360 px window, so no sideways scroll.
    assert page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]") == [360, 360]
    boxes = {side: page.locator(f"#choice-{side}").bounding_box() for side in ("left", "right")}
    for box in boxes.values():
        assert 0 <= box["x"] and box["x"] + box["width"] <= 360
    # Side by side and mirrored: the first pair where reading starts, on the right; its digit too.
    assert boxes["left"]["y"] == boxes["right"]["y"]
    assert boxes["left"]["x"] > boxes["right"]["x"] + boxes["right"]["width"]
    keys = key_hint_centres(page)
    assert keys["1"] > keys["2"] and keys["←"] < keys["→"]

    # A tap on the pair shown on the right chooses the first pair, the one on the left the second.
    participant = "p-phone"
    assignment = page.locator("input[name=assignment]").input_value()
    right_half = boxes["left"]
    page.touchscreen.tap(
        right_half["x"] + right_half["width"] / 2, right_half["y"] + right_half["height"] / 2
    )
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    expect(page.locator("#vote-status")).to_contain_text(RECORDED["ar"])
    vote = Vote.objects.get(annotator__participant_id=participant, assignment_id=int(assignment))
    assert vote.choice == "left"
    expect(page.locator("#choice-right")).to_be_enabled()
    assignment = page.locator("input[name=assignment]").input_value()
    left_half = page.locator("#choice-right").bounding_box()
    assert left_half["x"] + left_half["width"] <= 180
    page.touchscreen.tap(left_half["x"] + left_half["width"] / 2, left_half["y"] + left_half["height"] / 2)
    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    vote = Vote.objects.get(annotator__participant_id=participant, assignment_id=int(assignment))
    assert vote.choice == "right"
