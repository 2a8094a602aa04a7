"""The live view in real headless Chromium: a researcher opens it, votes come in, and its figures change
without a reload of the page (static/scoring/live.js), under the site's Content-Security-Policy."""

import pytest
from playwright.sync_api import expect

from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"


def test_the_live_view_follows_the_votes_without_a_reload(page, live_server, django_user_model):
    django_user_model.objects.create_user("researcher", password=PASSWORD, is_staff=True)
    study = make_study(seed=3)  # ballot 1: 30 comparisons
    page.goto(f"{live_server.url}/admin/login/?next=/studies/{study.slug}/live/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#live-votes")).to_have_text("0")
    expect(page.locator("#live-ballot-1 .live-ballot-votes")).to_have_text("0 / 30")
    page.evaluate("window.sameDocument = true")

    vote_until(study, voters=annotators(study, 3), max_votes=7)

    # The figures are cached 5 s and the page asks every 5 s: within about 10 s.
    expect(page.locator("#live-votes")).to_have_text("7", timeout=20_000)
    expect(page.locator("#live-ballot-1 .live-ballot-votes")).to_have_text("7 / 30")
    expect(page.locator("#live-ballot-1 progress")).to_have_attribute("value", "7")
    assert page.evaluate("window.sameDocument") is True
