"""An instructed-response check on the voting page: its instruction stands in place of the question, the
answer is recorded as a check answer, and the next comparison brings the study's question back, all
without a reload (vote.js)."""

import random

import pytest
from playwright.sync_api import expect

from collection import checks
from collection.checks import check_create
from collection.models import CheckAnswer, Vote
from tests.browser.test_voting import consent, study_with_words

pytestmark = pytest.mark.django_db(transaction=True)

INSTRUCTION = "For this one, choose the pair on the right."


class Draws(random.Random):
    """The lease's draws, switched by the test: a check while ``check`` is set, else a comparison."""

    check = True

    def random(self) -> float:
        return 0.0 if self.check else 0.99


def test_an_instructed_check_shows_its_instruction_and_the_next_comparison_the_question(
    page, live_server, monkeypatch
):
    study = study_with_words(check_rate=0.5)
    left, right = study.items.order_by("index")[:2]
    check_create(
        study=study,
        kind="instructed",
        left_item=left,
        right_item=right,
        expected="right",
        instruction=INSTRUCTION,
    )
    draws = Draws()
    monkeypatch.setattr(checks, "_DRAWS", draws)

    consent(page, live_server, study)
    expect(page.locator("#question")).to_have_text(INSTRUCTION)
    expect(page.locator("#vote-keys")).to_be_visible()  # vote.js is in charge
    draws.check = False
    assignment = page.locator("input[name=assignment]").input_value()
    page.keyboard.press("ArrowRight")

    expect(page.locator("input[name=assignment]")).not_to_have_value(assignment)
    expect(page.locator("#question")).to_have_text(study.question)
    answer = CheckAnswer.objects.get()
    assert (answer.choice, answer.correct) == ("right", True)
    assert not Vote.objects.exists()
