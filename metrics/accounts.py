"""Model owners' accounts: through a study's invitation link, or the open sign-up an operator turns on.

A model owner's account is an ordinary account without staff status: it submits to every finished
study and reads its own submissions (metrics/api.py), nothing staff-only. An invitation bounds how
many accounts it makes and until when, and can be revoked; the open sign-up (``MODEL_OWNER_SIGNUP``)
is off by default. Both are limited per client address (``accounts.address``, common/throttling.py).
"""

from __future__ import annotations

from django.contrib.auth.forms import UserCreationForm
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from common.errors import ServiceError
from metrics.models import Invitation, InvitedAccount


def invitation_refusal(invitation: Invitation, *, now=None) -> str | None:
    """Why the link no longer makes accounts (revoked, expired, used up), or None while it does."""
    now = now or timezone.now()
    if invitation.revoked_at is not None:
        return "This invitation was withdrawn by the study's researchers. Ask them for a new link."
    if invitation.expires_at <= now:
        return (
            f"This invitation expired on {invitation.expires_at:%Y-%m-%d %H:%M} UTC. "
            "Ask the study's researchers for a new link."
        )
    if invitation.uses >= invitation.max_uses:
        return (
            f"This invitation has made all the {invitation.max_uses} accounts it was for. "
            "Ask the study's researchers for a new link."
        )
    return None


def invitation_accept(*, invitation: Invitation, form: UserCreationForm):
    """Creates the account of a valid ``form`` (Django's, with the password validators) through
    ``invitation``; returns the user. Raises ``ServiceError`` (410) when the link no longer makes
    accounts, and nothing is created."""
    now = timezone.now()
    with transaction.atomic():
        # One conditional UPDATE: its row count says whether this account got one of the link's uses.
        taken = Invitation.objects.filter(
            pk=invitation.pk, revoked_at__isnull=True, expires_at__gt=now, uses__lt=F("max_uses")
        ).update(uses=F("uses") + 1)
        if not taken:
            invitation.refresh_from_db()
            raise ServiceError(
                invitation_refusal(invitation, now=now) or "This invitation is used up.", status=410
            )
        try:
            with transaction.atomic():
                user = form.save()
        except IntegrityError:  # the same username taken by another request since the form was checked
            raise ServiceError("That username is taken: choose another.", status=409) from None
        InvitedAccount.objects.create(user=user, invitation=invitation)
    return user


def invitation_revoke(*, invitation: Invitation) -> None:
    """Withdraws the link; the accounts it made stay."""
    Invitation.objects.filter(pk=invitation.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def account_create(*, form: UserCreationForm):
    """Creates the account of a valid ``form`` through the open sign-up; returns the user. Raises
    ``ServiceError`` (409) when its username was taken since the form was checked."""
    try:
        with transaction.atomic():
            return form.save()
    except IntegrityError:
        raise ServiceError("That username is taken: choose another.", status=409) from None
