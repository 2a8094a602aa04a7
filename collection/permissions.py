"""Who may call the REST API: staff for studies and results, annotators for their own comparisons."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.authentication import SessionScheme
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission

from collection.identity import ANNOTATOR_COOKIE, annotator_from_request
from collection.models import Annotator, Study
from collection.parts import HIDDEN_PART_REFUSAL, hidden_part_visible_to


class IsStaff(BasePermission):
    """Staff users only, logged in through the admin (session) or with an API token."""

    message = (
        "this endpoint is for staff: log in through the admin with a staff account, "
        "or send the header 'Authorization: Token <key>' of one"
    )

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)


class HiddenPartResearchers(BasePermission):
    """The staff actions that show every item's score, rank or win ratios (``items``, ``results``): in a
    study that keeps a hidden test part, for its researchers only (``collection.parts``)."""

    ACTIONS = frozenset({"items", "results"})
    message = "this study keeps a hidden test part"

    def has_object_permission(self, request, view, obj) -> bool:
        if getattr(view, "action", None) not in self.ACTIONS or hidden_part_visible_to(request.user, obj):
            return True
        self.message = HIDDEN_PART_REFUSAL.format(slug=obj.slug)
        return False


class AnnotatorSessionAuthentication(SessionAuthentication):
    """Session authentication that also checks CSRF for anonymous annotators.

    REST framework checks CSRF only for logged-in users, but an anonymous annotator is identified by a
    cookie too (the signed annotator cookie, or the session), so another site could make their browser
    vote. Every unsafe request that carries either cookie must bring the CSRF token, logged in or not.
    """

    def authenticate(self, request):
        authenticated = super().authenticate(request)  # a logged-in user's CSRF is checked there
        if authenticated is None:
            cookies = request.COOKIES  # REST framework's request hands them on from Django's
            if settings.SESSION_COOKIE_NAME in cookies or ANNOTATOR_COOKIE in cookies:
                self.enforce_csrf(request)
        return authenticated

    def enforce_csrf(self, request):
        # REST framework's check, with a refusal that says how to pass it.
        try:
            super().enforce_csrf(request)
        except PermissionDenied as refusal:
            raise PermissionDenied(
                f"{refusal.detail} Send the csrftoken cookie's value in the X-CSRFToken header."
            ) from None


class AnnotatorSessionScheme(SessionScheme):
    """The OpenAPI description of ``AnnotatorSessionAuthentication``: the session cookie."""

    target_class = "collection.permissions.AnnotatorSessionAuthentication"
    name = "annotatorSession"

    def get_security_definition(self, auto_schema):
        return {
            **super().get_security_definition(auto_schema),
            "description": "The browser session of the study link /s/<slug>/; a POST also needs the "
            "csrftoken cookie's value in the X-CSRFToken header.",
        }


def consented_annotator(request, study: Study, annotator: Annotator | None = None) -> Annotator:
    """The request's annotator in ``study`` (``annotator`` when the caller found it already), refused
    (403) without one or before consent."""
    if annotator is None:
        annotator = annotator_from_request(request, study)
    link = study.get_absolute_url()
    if annotator is None:
        raise PermissionDenied(
            f"you are not an annotator of this study yet: open the study link {link} first; "
            "it identifies you and shows the instructions"
        )
    if annotator.consented_at is None:
        raise PermissionDenied(
            f"you have not agreed to take part yet: open the study link {link}, read the instructions "
            "and give your consent, then ask for a comparison again"
        )
    return annotator
