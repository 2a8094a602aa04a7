"""The Content-Security-Policy header, built once per policy rather than on every response.

django-csp's middleware copies the policy's parts and builds the header's text anew for each
response (``dataclasses.asdict`` and ``build_policy``, twice: the policy and the report-only one),
which was a tenth of a vote's CPU in the web process. Almost every response
carries the settings' policy unchanged: no view decorator changed it (``csp_update``, ``csp_replace``,
``csp_exempt``…) and no template asked for a nonce. For those the header's text depends on the settings
alone, so it is built once and kept with the settings' objects it came from (a test that overrides the
settings gets its own). Every other response goes through django-csp's own code, unchanged.
"""

from __future__ import annotations

import threading

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, PolicyParts
from csp.middleware import CSPMiddleware as DjangoCSPMiddleware
from csp.utils import build_policy
from django.conf import settings

_PLAIN = PolicyParts()  # no per-response configuration, update, replacement or nonce
_SETTINGS = {HEADER: "CONTENT_SECURITY_POLICY", HEADER_REPORT_ONLY: "CONTENT_SECURITY_POLICY_REPORT_ONLY"}
_EXEMPT = {HEADER: "_csp_exempt", HEADER_REPORT_ONLY: "_csp_exempt_ro"}

_lock = threading.Lock()
_built: dict[str, tuple[object, str]] = {}  # header -> (the settings' policy object, the header's text)


def plain_policy(header: str) -> str:
    """The header's text for the settings' policy as it stands (empty when there is none)."""
    policy = getattr(settings, _SETTINGS[header], None)
    kept = _built.get(header)
    if kept is not None and kept[0] is policy:
        return kept[1]
    text = build_policy(report_only=header == HEADER_REPORT_ONLY)
    with _lock:
        _built[header] = (policy, text)
    return text


class CSPMiddleware(DjangoCSPMiddleware):
    """django-csp's middleware, with the plain policy's header text kept instead of rebuilt."""

    def process_response(self, request, response):
        if settings.DEBUG or any(
            self.get_policy_parts(request=request, response=response, report_only=report_only) != _PLAIN
            for report_only in (False, True)
        ):
            return super().process_response(request, response)
        for header, setting in _SETTINGS.items():
            text = plain_policy(header)
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
            if (
                text
                and header not in response
                and getattr(response, _EXEMPT[header], False) is False
                and not request.path_info.startswith(tuple(prefixes))
            ):
                response[header] = text
        if getattr(request, "_csp_nonce", None) is None:  # as django-csp: no nonce once the header is out
            request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
        return response
