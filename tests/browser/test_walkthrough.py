"""The annotator's pages walked through on a phone (touch) and on a desktop (mouse and keyboard): consent,
voting, Finish and every exit, with a screenshot of each step.

Each step checks what a person would look at: no side highlighted when a pair arrives (the computed look
of both sides and the pixels of their corners, as on the untouched page), and each exit's words for its
outcome. The screenshots go to a temporary folder, or to ``YARDSTICK_WALKTHROUGH_DIR`` when it is set,
so that a person can look at them.
"""

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from collection.exclusion import annotator_exclude
from collection.models import Annotator, Comparison
from tests.browser.pixels import colours_at, inner_corners
from tests.browser.test_neutral_next_pair import looks
from tests.browser.test_voting import consent, study_with_words
from tests.factories import annotators, vote_until

pytestmark = pytest.mark.django_db(transaction=True)

DEVICES = {
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
    "desktop": {"viewport": {"width": 1280, "height": 800}},
}
MEANINGS = {
    "completed": "This code confirms that you completed your part of the study.",
    "finished": "This code confirms that you completed the study.",
    "no_work": "This code tells the platform that sent you here that no work was available for you.",
    "screened_out": (
        "This code tells the platform that sent you here that the researchers ended your participation "
        "(screened out)."
    ),
}


@pytest.fixture
def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("YARDSTICK_WALKTHROUGH_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Walk:
    """One device's pages, with a numbered screenshot per step and the checks of a neutral pair."""

    def __init__(self, page, device: str, folder: Path, decoder):
        self.page, self.device, self.folder, self.decoder = page, device, folder, decoder

    def shot(self, name: str) -> None:
        self.page.wait_for_load_state()  # the deferred scripts have run (exit.js shows the Copy button)
        number = len(list(self.folder.glob(f"{self.device}-*.png"))) + 1
        self.page.screenshot(path=str(self.folder / f"{self.device}-{number:02d}-{name}.png"), full_page=True)

    def corners(self):
        return inner_corners(self.page, "#choice-left") + inner_corners(self.page, "#choice-right")

    def vote_and_expect_a_neutral_pair(self, cast, untouched_look, untouched_pixels) -> None:
        assignment = self.page.locator("input[name=assignment]").input_value()
        cast()
        expect(self.page.locator("input[name=assignment]")).not_to_have_value(assignment)
        expect(self.page.locator("#choice-left")).to_be_enabled()
        assert colours_at(self.decoder, self.page.screenshot(), self.corners()) == untouched_pixels
        assert looks(self.page) == untouched_look
        focused = self.page.evaluate("document.activeElement && document.activeElement.id")
        assert focused not in {"choice-left", "choice-right", "choice-tie"}

    def expect_exit(self, outcome: str, code: str) -> None:
        expect(self.page.locator("#completion-code")).to_have_text(code)
        expect(self.page.locator("#completion-meaning")).to_have_text(MEANINGS[outcome])
        assert "took part" not in self.page.locator("#completion").inner_text()


@pytest.mark.parametrize("device", list(DEVICES))
def test_consent_voting_finish_and_every_exit(device, new_context, chromium, live_server, shots):
    decoder = chromium.new_page()

    def walk_in(participant: str | None = None) -> Walk:
        return Walk(new_context(**DEVICES[device]).new_page(), device, shots, decoder)

    # Consent, voting by tap or click and by key, then Finish at the study's minimum.
    study = study_with_words(votes_per_annotator_per_ballot=None, min_judgements=3, pay_per_hour=9.0)
    walk = walk_in()
    walk.page.goto(f"{live_server.url}/s/{study.slug}/?participant=walker")
    expect(walk.page.locator("#expected-minimum")).to_have_text("3")
    walk.shot("consent")
    consent(walk.page, live_server, study, participant="walker")
    expect(walk.page.locator("#finish-remaining")).to_contain_text("After 3 more comparisons")
    walk.page.mouse.move(0, 0)
    untouched_look, untouched_pixels = looks(walk.page), None
    untouched_pixels = colours_at(decoder, walk.page.screenshot(), walk.corners())
    walk.shot("voting")
    press = (
        walk.page.locator("#choice-left").tap
        if device == "phone"
        else walk.page.locator("#choice-left").click
    )
    walk.vote_and_expect_a_neutral_pair(press, untouched_look, untouched_pixels)
    walk.shot("after-first-vote")
    other = (
        walk.page.locator("#choice-right").tap
        if device == "phone"
        else walk.page.locator("#choice-right").click
    )
    walk.vote_and_expect_a_neutral_pair(other, untouched_look, untouched_pixels)
    walk.vote_and_expect_a_neutral_pair(
        lambda: walk.page.keyboard.press("ArrowLeft"), untouched_look, untouched_pixels
    )
    expect(walk.page.locator("#finish-button")).to_be_visible()
    walk.shot("finish-offered")
    if device == "phone":
        walk.page.locator("#finish-button").tap()
    else:
        walk.page.locator("#finish-button").focus()
        walk.page.keyboard.press("Enter")
    expect(walk.page.get_by_role("heading", level=1)).to_have_text("Thank you, you have finished")
    walk.expect_exit("finished", study.completion_code)
    walk.shot("exit-finished")

    # Completed: the cap of the ballot reached.
    capped = study_with_words(votes_per_annotator_per_ballot=2)
    walk = walk_in()
    consent(walk.page, live_server, capped, participant="capped")
    for side in ("left", "right"):
        locator = walk.page.locator(f"#choice-{side}")
        locator.tap() if device == "phone" else locator.click()
    expect(walk.page.get_by_role("heading", level=1)).to_have_text("Thank you, you are done")
    walk.expect_exit("completed", capped.completion_code)
    walk.shot("exit-completed")

    # No work: the study finished before the participant came.
    finished = study_with_words(votes_per_annotator_per_ballot=None)
    vote_until(finished, voters=annotators(finished, 5))
    walk = walk_in()
    walk.page.goto(f"{live_server.url}/s/{finished.slug}/?participant=late")
    walk.expect_exit("no_work", finished.no_work_code)
    walk.shot("exit-no-work-finished")

    # No work: every comparison taken, and the wait past the study's longest.
    taken = study_with_words(max_wait_seconds=30)
    Comparison.objects.filter(ballot__study=taken).update(
        status=Comparison.Status.LEASED, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    walk = walk_in()
    consent(walk.page, live_server, taken, participant="waiter")
    Annotator.objects.filter(study=taken, participant_id="waiter").update(
        consented_at=timezone.now() - timedelta(seconds=31)
    )
    walk.page.reload()
    walk.expect_exit("no_work", taken.no_work_code)
    walk.shot("exit-no-work-waited")

    # Screened out: the researchers ended the participation mid-study.
    screened = study_with_words()
    walk = walk_in()
    consent(walk.page, live_server, screened, participant="screened")
    annotator_exclude(
        annotator=Annotator.objects.get(study=screened, participant_id="screened"),
        reason="answered every pair in under 200 ms",
    )
    walk.page.reload()
    expect(walk.page.get_by_role("heading", level=1)).to_have_text("Thank you, your participation has ended")
    walk.expect_exit("screened_out", screened.screened_out_code)
    walk.shot("exit-screened-out")

    assert len(list(shots.glob(f"{device}-*.png"))) == 9
