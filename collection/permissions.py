"""Who may call the REST API: staff for studies and results, annotators for their own comparisons."""

from __future__ import annotations

import threading
from collections import OrderedDict

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.functional import SimpleLazyObject, empty
from drf_spectacular.authentication import SessionScheme
from rest_framework.authentication import CSRFCheck, SessionAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission
from rest_framework.request import is_form_media_type

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

    DRF checks CSRF only for logged-in users, but an anonymous annotator is identified by a cookie too
    (the signed annotator cookie, or the session), so another site could make their browser vote.
    Every unsafe request that carries either cookie must bring the CSRF token, logged in or not.
    """

    def authenticate(self, request):
        cookies = request._request.COOKIES
        has_session = settings.SESSION_COOKIE_NAME in cookies
        if has_session or ANNOTATOR_COOKIE in cookies:
            self.enforce_csrf(request)
        user = getattr(request._request, "user", None)
        if not has_session and isinstance(user, SimpleLazyObject) and user._wrapped is empty:
            # Django's user of a request without a session cookie, not looked up yet: anonymous.
            # Looking it up opens an empty session and finds the user model, on every annotator's
            # request (their browsers carry the annotator cookie, not a session).
            return None
        if user is None or not user.is_active:
            return None
        return (user, None)

    def enforce_csrf(self, request):
        # The parent's check, with a message that says how to pass it. A request whose body is not a
        # form has its token in the header only: Django's request is checked, past REST framework's
        # proxy (which would also parse the body for a token that cannot be in it).
        reason = annotator_csrf_refusal(request if has_form_body(request) else request._request)
        if reason:
            raise PermissionDenied(
                f"CSRF failed: {reason} Send the csrftoken cookie's value in the X-CSRFToken header."
            )


def has_form_body(request) -> bool:
    """Whether the request's body is a form, where Django looks for a CSRF token first."""
    return is_form_media_type(request.META.get("CONTENT_TYPE"))


class RememberingCSRFCheck(CSRFCheck):
    """REST framework's CSRF check, which remembers the pairs of CSRF cookie and header it found
    matching (at most ``remembered`` of them, the least recently used forgotten first).

    Matching a token to its cookie unmasks it one character at a time, in Python: most of the check's
    50 µs, on each of an annotator's votes, whose browser sends the same pair
    every time. Whether a token
    matches a secret depends on the two strings alone, so a pair found matching matches again. Only
    pairs from the header are remembered: a form's token (``csrfmiddlewaretoken``) goes first when
    there is one, so a request with a form body is always checked whole, as is any request when the
    secret is kept in the session (``CSRF_USE_SESSIONS``). Every other part of the check (the cookie's
    presence, the origin and referer checks of HTTPS requests) runs on every request.
    """

    def __init__(self, get_response, remembered: int = 10_000):
        super().__init__(get_response)
        self._matched: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._remembered = remembered
        self._lock = threading.Lock()

    def _check_token(self, request):
        pair = self._header_pair(request)
        if pair is not None:
            with self._lock:
                if pair in self._matched:
                    self._matched.move_to_end(pair)
                    return
        super()._check_token(request)  # raises RejectRequest when it does not match
        if pair is not None:
            with self._lock:
                self._matched[pair] = None
                while len(self._matched) > self._remembered:
                    self._matched.popitem(last=False)

    @staticmethod
    def _header_pair(request) -> tuple[str, str] | None:
        """(the CSRF cookie, the header's token) when the header's token is the one checked."""
        if settings.CSRF_USE_SESSIONS or has_form_body(request):
            return None
        cookie = request.COOKIES.get(settings.CSRF_COOKIE_NAME)
        token = request.META.get(settings.CSRF_HEADER_NAME)
        return (cookie, token) if cookie and token else None


_csrf_checks: list[RememberingCSRFCheck] = []


def _csrf_check() -> RememberingCSRFCheck:
    """One CSRF check per process: it keeps only what it read of the settings (trusted origins) and
    the pairs it found matching (REST framework makes one per request). A change of a ``CSRF_*``
    setting makes a new one."""
    if not _csrf_checks:
        _csrf_checks.append(RememberingCSRFCheck(lambda _request: None))
    return _csrf_checks[0]


@receiver(setting_changed)
def _forget_csrf_check(*, setting, **kwargs) -> None:
    if setting.startswith("CSRF_"):
        _csrf_checks.clear()


def annotator_csrf_refusal(request) -> str | None:
    """Why the CSRF check refuses the request (Django's reason), or None when it passes."""
    check = _csrf_check()
    check.process_request(request)  # reads the CSRF cookie for process_view
    return check.process_view(request, None, (), {})


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
