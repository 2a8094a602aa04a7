"""An invitation link in real headless Chromium: a researcher makes it in the admin, a model owner
follows it, creates an account and lands on the study's submission page, logged in."""

import re

import pytest
from playwright.sync_api import expect

from collection.models import Study
from metrics.models import Invitation
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "correct horse battery staple"


def test_a_researcher_invites_and_a_model_owner_creates_an_account(page, live_server, django_user_model):
    study = make_study(tokens=6)
    vote_until(study, voters=annotators(study, 5))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    django_user_model.objects.create_superuser("researcher", "researcher@example.org", PASSWORD)

    page.goto(f"{live_server.url}/admin/login/?next=/admin/metrics/invitation/add/")
    page.get_by_label("Username").fill("researcher")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.locator("#id_study").select_option(str(study.pk))  # autocomplete's select, without its script
    page.get_by_label("Max uses").fill("2")
    page.get_by_label("Note").fill("the MiniLM team")
    page.get_by_role("button", name="Save", exact=True).click()
    invitation = Invitation.objects.get()
    link = f"{live_server.url}/models/join/{invitation.key}/"
    expect(page.locator(".messagelist")).to_contain_text(
        f"Send this link to the model owners of {study}: {link}"
    )
    page.context.clear_cookies()  # the model owner's browser

    page.goto(link)
    expect(page.get_by_role("heading", level=1)).to_have_text("Create your model owner's account")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password", exact=True).fill("123")
    page.get_by_label("Password confirmation").fill("123")
    page.get_by_role("button", name="Create the account").click()
    expect(page.locator("#id_password2-error")).to_contain_text("This password is too short.")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password confirmation").fill(PASSWORD)
    page.get_by_role("button", name="Create the account").click()

    expect(page).to_have_url(f"{live_server.url}/models/studies/{study.slug}/submit/")
    expect(page.get_by_role("heading", level=1)).to_have_text(re.compile(f"Submit a model: {study.name}"))
    ada = django_user_model.objects.get(username="ada")
    assert (ada.is_staff, ada.invitation_use.invitation) == (False, invitation)
