"""The card page of a large card being computed, in real headless Chromium: the progress moves and then
the card takes its place without a reload (static/metrics/card_progress.js), under the site's
Content-Security-Policy, with no serious or critical axe-core violation, at desktop and phone sizes.

The page asks for the computation; the test is the worker that runs it (the real computation, in the
test's thread) and looks at the page while the computation stands at its third step.
"""

import pytest
from playwright.sync_api import expect

from metrics import card_views, instrument
from metrics.instrument import instrument_card
from metrics.models import StudyFigure
from tests.browser.test_accessibility import DESKTOP, PHONE, blocking_violations
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("screen", ["desktop", "phone"])
def test_the_progress_moves_then_the_card_appears_without_a_reload(
    new_context, live_server, monkeypatch, screen
):
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=3)
    vote_until(study, voters=annotators(study, 6), max_votes=120)  # ballot 1 closed: a provisional card
    StudyFigure.objects.filter(study=study, kind="card").delete()
    monkeypatch.setattr(instrument, "CARD_SYNC_ITEMS", 10)  # its 28 items count as large
    # Estimated at a minute, not 2 s: the ask lasts that long, and the test's worker may start late.
    for module in (instrument, card_views):
        monkeypatch.setattr(module, "card_wait_seconds", lambda item_count: 60)
    asked = []
    monkeypatch.setattr(instrument, "enqueue_on_commit", lambda *args, **kwargs: asked.append(args))
    page = new_context(**(DESKTOP if screen == "desktop" else PHONE)).new_page()
    page.goto(f"{live_server.url}/models/studies/{study.slug}/card/")
    page.evaluate("window.sameDocument = true")
    bar = page.locator("progress#card-progress")
    expect(bar).to_have_attribute("value", "0")
    expect(page.locator("#card-progress-text")).to_have_text("Computing the instrument card: step 1 of 8")
    expect(page.get_by_text("A card of 28 items takes about 60 seconds to compute.")).to_be_visible()
    assert asked == [("metrics.instrument_card", study.pk)]

    seen = []
    precision_summary = instrument.precision_summary

    def third_step(replicates):  # the page, while the computation has reported two steps done
        expect(page.locator("#card-progress-text")).to_have_text(
            "Computing the instrument card: step 3 of 8", timeout=10_000
        )
        expect(bar).to_have_attribute("value", "2")
        expect(page.get_by_role("button", name="Stop checking by itself")).to_be_visible()
        seen.extend(blocking_violations(page, f"card being computed ({screen})"))
        seen.append(page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]"))
        return precision_summary(replicates)

    monkeypatch.setattr(instrument, "precision_summary", third_step)
    instrument_card(study=study)  # the worker's task

    assert seen == [[DESKTOP["viewport"]["width"]] * 2 if screen == "desktop" else [360, 360]]
    expect(page.get_by_role("heading", name="3. Precision (Welty §5.6)")).to_be_visible(timeout=10_000)
    expect(page.locator("progress")).to_have_count(0)
    expect(page.locator("#recheck-status")).to_have_text("The instrument card is ready.")
    expect(page.get_by_role("button", name="Stop checking by itself")).to_be_hidden()
    assert page.evaluate("window.sameDocument") is True
    assert page.locator("article svg").count() == 2
    assert len(asked) == 1  # the page asked again every 2 s while the computation ran: no second ask
