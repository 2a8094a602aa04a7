"""Invitation links: a researcher's link makes model owners' accounts, bounded, expiring and revocable."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm
from django.test import Client
from django.utils import timezone

from common.errors import ServiceError
from metrics.accounts import invitation_accept
from metrics.models import Invitation, InvitedAccount, Submission
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db
PASSWORD = "lantern-orchard-1987"


@pytest.fixture
def study():
    study = make_study(tokens=6)
    vote_until(study, voters=annotators(study, 5))
    study.refresh_from_db()
    return study


@pytest.fixture
def researcher():
    return get_user_model().objects.create_user(
        "researcher", password=PASSWORD, is_staff=True, is_superuser=True
    )


def invitation_for(study, **fields) -> Invitation:
    return Invitation.objects.create(study=study, **fields)


def join(client: Client, invitation: Invitation, username: str = "newowner", password: str = PASSWORD):
    return client.post(
        f"/models/join/{invitation.key}/",
        {"username": username, "password1": password, "password2": password},
    )


def test_following_the_link_creates_a_model_owner_logged_in_on_the_studys_submission_page(study):
    invitation = invitation_for(study, max_uses=3)
    client = Client()

    form = client.get(f"/models/join/{invitation.key}/")
    answer = join(client, invitation)

    assert form.status_code == 200
    assert (answer.status_code, answer["Location"]) == (302, f"/models/studies/{study.slug}/submit/")
    user = get_user_model().objects.get(username="newowner")
    assert (user.is_staff, user.is_superuser, user.check_password(PASSWORD)) == (False, False, True)
    assert InvitedAccount.objects.get(user=user).invitation == invitation
    invitation.refresh_from_db()
    assert invitation.uses == 1
    assert client.get(f"/models/studies/{study.slug}/submit/").status_code == 200  # logged in


def test_the_new_account_submits_to_the_study_and_reaches_nothing_staff_only(study):
    join(Client(), invitation_for(study))
    api = Client()
    token = api.post("/api/auth/token/", {"username": "newowner", "password": PASSWORD}).json()["token"]
    owner = Client(headers={"Authorization": f"Token {token}"})
    scores = [{"item": item.pk, "score": float(item.index)} for item in study.items.all()]

    submitted = owner.post(
        f"/api/studies/{study.slug}/submissions/",
        {"model_name": "invited", "scores": scores},
        content_type="application/json",
    )

    assert submitted.status_code == 201
    assert Submission.objects.get(model_name="invited").owner.username == "newowner"
    assert owner.get("/api/studies/").status_code == 403
    assert owner.get(f"/api/studies/{study.slug}/results/").status_code == 403
    pages = Client()
    pages.force_login(get_user_model().objects.get(username="newowner"))
    assert pages.get("/admin/")["Location"].startswith("/admin/login/")
    assert pages.get(f"/studies/{study.slug}/results/").status_code in (302, 403)


def test_djangos_password_validators_refuse_a_weak_password_and_nothing_is_used(study):
    invitation = invitation_for(study)

    answer = join(Client(), invitation, password="password")

    assert answer.status_code == 400
    assert "This password is too common." in answer.content.decode()
    assert not get_user_model().objects.filter(username="newowner").exists()
    invitation.refresh_from_db()
    assert invitation.uses == 0


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"revoked_at": timezone.now()}, "This invitation was withdrawn by the study's researchers."),
        ({"expires_at": timezone.now() - timedelta(minutes=1)}, "This invitation expired on "),
        ({"max_uses": 2, "uses": 2}, "This invitation has made all the 2 accounts it was for."),
    ],
    ids=["revoked", "expired", "used-up"],
)
def test_a_refused_link_says_why_and_makes_no_account(study, fields, reason):
    invitation = invitation_for(study, **fields)
    client = Client()

    shown = client.get(f"/models/join/{invitation.key}/")
    posted = join(client, invitation)

    assert (shown.status_code, posted.status_code) == (410, 410)
    assert reason in html.unescape(posted.content.decode())
    assert not get_user_model().objects.filter(username="newowner").exists()


def test_the_last_use_goes_to_one_account_only(study):
    invitation = invitation_for(study, max_uses=1)
    first = UserCreationForm({"username": "first", "password1": PASSWORD, "password2": PASSWORD})
    second = UserCreationForm({"username": "second", "password1": PASSWORD, "password2": PASSWORD})
    assert first.is_valid() and second.is_valid()  # both checked before either takes the use

    invitation_accept(invitation=invitation, form=first)
    with pytest.raises(ServiceError) as refused:
        invitation_accept(invitation=invitation, form=second)

    assert refused.value.status == 410
    assert list(
        get_user_model().objects.filter(username__in=["first", "second"]).values_list("username", flat=True)
    ) == ["first"]


def test_an_unknown_key_is_404():
    assert Client().get("/models/join/not-a-key/").status_code == 404


def test_a_logged_in_user_is_told_the_link_is_for_new_accounts(study, researcher):
    invitation = invitation_for(study)
    client = Client()
    client.force_login(researcher)

    answer = client.get(f"/models/join/{invitation.key}/")

    assert answer.status_code == 200
    assert "this page is for new accounts" in answer.content.decode()
    invitation.refresh_from_db()
    assert invitation.uses == 0


def test_a_researcher_makes_a_link_in_the_admin_and_revokes_it(study, researcher):
    client = Client()
    client.force_login(researcher)
    expires = (timezone.now() + timedelta(days=3)).replace(microsecond=0)

    made = client.post(
        "/admin/metrics/invitation/add/",
        {
            "study": study.pk,
            "note": "the MiniLM team",
            "max_uses": 5,
            "expires_at_0": expires.strftime("%Y-%m-%d"),
            "expires_at_1": expires.strftime("%H:%M:%S"),
            "accounts-TOTAL_FORMS": 0,
            "accounts-INITIAL_FORMS": 0,
        },
        follow=True,
    )
    invitation = Invitation.objects.get()
    revoked = client.post(
        "/admin/metrics/invitation/",
        {"action": "revoke", "_selected_action": [invitation.pk]},
        follow=True,
    )

    assert (invitation.created_by, invitation.max_uses, invitation.note) == (researcher, 5, "the MiniLM team")
    assert f"http://testserver/models/join/{invitation.key}/" in made.content.decode()
    assert "1 invitation(s) revoked." in revoked.content.decode()
    invitation.refresh_from_db()
    assert invitation.revoked_at is not None
    assert join(Client(), invitation).status_code == 410


def test_an_invitation_makes_at_most_a_thousand_accounts(study):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        invitation_for(study, max_uses=1001)


def test_the_studys_admin_page_links_to_a_new_invitation_for_it(study, researcher):
    client = Client()
    client.force_login(researcher)

    page = client.get(f"/admin/collection/study/{study.pk}/change/").content.decode()
    link = html.unescape(re.search(r'<a href="([^"]+)" id="invitation-link">', page).group(1))
    form = client.get(link)

    assert link == f"/admin/metrics/invitation/add/?study={study.pk}"
    assert form.context["adminform"].form.initial["study"] == str(study.pk)
