"""/models/join/<key>/: a model owner creates their account through a study's invitation link."""

from __future__ import annotations

from django.contrib.auth import login
from django.contrib.auth.forms import UserCreationForm
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from common.errors import ServiceError
from metrics.invitations import invitation_accept, invitation_refusal
from metrics.models import Invitation

TEMPLATE = "metrics/join.html"


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
    form = UserCreationForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            user = invitation_accept(invitation=invitation, form=form)
        except ServiceError as refused:
            return render(request, TEMPLATE, {**context, "refusal": refused.message}, status=refused.status)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("metrics:submit", slug=invitation.study.slug)
    return render(request, TEMPLATE, {**context, "form": form}, status=400 if form.errors else 200)
