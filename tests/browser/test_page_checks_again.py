"""A waiting annotator's page checks again by itself, and a button stops it (WCAG 2.1, 2.2.1: a change on
a timer that the reader can turn off). With JavaScript the reload is a script's and the button shows; the
meta refresh that reloads the page without JavaScript stays inside <noscript>."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from collection.leasing import ALL_LEASED_RETRY_SECONDS, ALL_LEASED_RETRY_SPREAD
from collection.models import Comparison
from tests.factories import make_study

pytestmark = pytest.mark.django_db(transaction=True)

LONGEST_WAIT_MS = (ALL_LEASED_RETRY_SECONDS + ALL_LEASED_RETRY_SPREAD + 1) * 1000


def waiting(page, live_server):
    """An annotator who consented to a study whose comparisons are all taken: the page says to wait."""
    study = make_study(max_wait_seconds=600)
    Comparison.objects.filter(ballot__study=study).update(
        status=Comparison.Status.LEASED, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )
    page.goto(f"{live_server.url}/s/{study.slug}/?participant=patient")
    page.get_by_label("I have read the instructions and agree to take part.").check()
    page.get_by_role("button", name="Start").click()
    page.wait_for_url(f"{live_server.url}/s/{study.slug}/vote/")
    expect(page.locator("#nothing")).to_have_attribute("data-reason", "all_leased")
    assert page.locator("meta[http-equiv=refresh]").count() == 0  # in <noscript>: not parsed with scripts on
    page.evaluate("window.sameDocument = true")  # gone once the page reloads


def test_the_waiting_page_checks_again_by_itself(page, live_server):
    waiting(page, live_server)
    page.wait_for_function("() => window.sameDocument === undefined", timeout=LONGEST_WAIT_MS)
    expect(page.locator("#nothing")).to_have_attribute("data-reason", "all_leased")


def test_the_stop_button_keeps_the_page_as_it_is(page, live_server):
    waiting(page, live_server)
    stop = page.get_by_role("button", name="Stop checking by itself")
    stop.focus()
    page.keyboard.press("Enter")
    expect(
        page.get_by_role("status").filter(has_text="This page no longer checks by itself.")
    ).to_be_visible()
    expect(stop).to_be_hidden()
    page.wait_for_timeout(LONGEST_WAIT_MS)
    assert page.evaluate("window.sameDocument === true"), "the page reloaded after Stop"
