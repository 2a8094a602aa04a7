"""Model owners make their own accounts: /models/join/<key>/ (a study's invitation link) and, when an
operator turns it on, /models/signup/ (open sign-up)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from common.errors import ServiceError
from common.throttling import AddressThrottle, page_wait_seconds
from metrics.accounts import account_create, invitation_accept, invitation_refusal
from metrics.models import Invitation

TEMPLATE = "metrics/join.html"
BACKEND = "django.contrib.auth.backends.ModelBackend"  # the password was just set: no lockout to check


def _too_many(request, context: dict, wait: int):
    minutes = max(1, round(wait / 60))
    refusal = f"Too many accounts were made from your address; try again in about {minutes} minute(s)."
    response = render(request, TEMPLATE, {**context, "refusal": refusal}, status=429)
    response["Retry-After"] = str(wait)
    return response


def _account_form(request, context: dict, create):
    """The sign-up form; a valid POST runs ``create(form)``, logs the new account in and returns it.
    Returns (user, None), or (None, the response to send)."""
    form = UserCreationForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        wait = page_wait_seconds(request, "accounts", throttles=(AddressThrottle,))
        if wait is not None:
            return None, _too_many(request, context, wait)
        if form.is_valid():
            try:
                user = create(form)
            except ServiceError as refused:
                return None, render(
                    request, TEMPLATE, {**context, "refusal": refused.message}, status=refused.status
                )
            login(request, user, backend=BACKEND)
            return user, None
    return None, render(request, TEMPLATE, {**context, "form": form}, status=400 if form.errors else 200)


@sensitive_post_parameters("password1", "password2")
@require_http_methods(["GET", "POST"])
def join(request, key: str):
    """The sign-up form of an invitation; a refused link (revoked, expired, used up) is 410 with why."""
    invitation = get_object_or_404(Invitation.objects.select_related("study"), key=key)
    context = {"invitation": invitation, "study": invitation.study}
    refusal = invitation_refusal(invitation)
    if refusal:
        return render(request, TEMPLATE, {**context, "refusal": refusal}, status=410)
    if request.user.is_authenticated:  # an account already: the link is for new ones
        return render(request, TEMPLATE, context)
    user, response = _account_form(
        request, context, lambda form: invitation_accept(invitation=invitation, form=form)
    )
    return redirect("metrics:submit", slug=invitation.study.slug) if user else response


@sensitive_post_parameters("password1", "password2")
@require_http_methods(["GET", "POST"])
def signup(request):
    """The open sign-up, when ``MODEL_OWNER_SIGNUP`` is on (404 otherwise)."""
    if not settings.MODEL_OWNER_SIGNUP:
        raise Http404("open sign-up is off: ask a study's researchers for an invitation link")
    if request.user.is_authenticated:
        return render(request, TEMPLATE, {})
    user, response = _account_form(request, {}, lambda form: account_create(form=form))
    return redirect("metrics:index") if user else response
