"""The Content-Security-Policy header built once per policy: the same header as django-csp builds."""

import pytest
from csp.constants import HEADER, HEADER_REPORT_ONLY, NONCE
from csp.middleware import CSPMiddleware as DjangoCSPMiddleware
from csp.utils import build_policy
from django.http import HttpResponse
from django.test import RequestFactory

from common.csp import CSPMiddleware

pytestmark = pytest.mark.django_db


def both_middlewares_answer(request_path="/s/demo/", *, decorate=None, nonce=False):
    """The headers our middleware and django-csp's own set on the same response."""
    answers = []
    for middleware_class in (CSPMiddleware, DjangoCSPMiddleware):
        request = RequestFactory().get(request_path)

        def view(request):
            response = HttpResponse("<p>page</p>")
            if decorate:
                decorate(response)
            if nonce:
                str(request.csp_nonce)  # a template that asks for the nonce
            return response

        middleware = middleware_class(view)
        response = middleware(request)
        answers.append({name: response.get(name) for name in (HEADER, HEADER_REPORT_ONLY)})
    return answers


def test_a_plain_response_gets_the_header_django_csp_builds(client):
    ours, theirs = both_middlewares_answer()
    assert ours == theirs
    assert ours[HEADER] == build_policy() and "frame-ancestors 'none'" in ours[HEADER]
    assert client.get("/healthz/")[HEADER] == build_policy()


def test_a_changed_setting_changes_the_header_at_once(settings):
    before, _ = both_middlewares_answer()
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"]}}
    after, theirs = both_middlewares_answer()
    assert after == theirs and after[HEADER] == "default-src 'none'" and after != before


def test_a_report_only_policy_is_sent_as_well(settings):
    settings.CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": {"img-src": ["'self'", "data:"]}}
    ours, theirs = both_middlewares_answer()
    assert ours == theirs and "img-src 'self' data:" in ours[HEADER_REPORT_ONLY]


@pytest.mark.parametrize(
    "decorate",
    [
        lambda response: setattr(response, "_csp_update", {"img-src": ["data:"]}),
        lambda response: setattr(response, "_csp_replace", {"script-src": ["'none'"]}),
        lambda response: setattr(response, "_csp_config", {"default-src": ["'self'"]}),
        lambda response: setattr(response, "_csp_exempt", True),
        lambda response: response.__setitem__(HEADER, "default-src 'none'"),
    ],
    ids=["update", "replace", "config", "exempt", "set-by-the-view"],
)
def test_a_view_that_changes_its_policy_gets_what_django_csp_gives(decorate):
    ours, theirs = both_middlewares_answer(decorate=decorate)
    assert ours == theirs


def test_a_page_that_asks_for_a_nonce_gets_it_in_its_header(settings):
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"script-src": ["'self'", NONCE]}}
    ours, theirs = both_middlewares_answer(nonce=True)
    assert "script-src 'self' 'nonce-" in ours[HEADER] and "script-src 'self' 'nonce-" in theirs[HEADER]
    assert ours[HEADER] != theirs[HEADER]  # a nonce of its own per response
    plain, _ = both_middlewares_answer()
    # The kept text carries no nonce (django-csp's order of directives varies between processes).
    assert set(plain[HEADER].split("; ")) == {"default-src 'self'", "script-src 'self'"}


def test_an_excluded_prefix_gets_no_header(settings):
    settings.CONTENT_SECURITY_POLICY = {
        "DIRECTIVES": {"default-src": ["'self'"]},
        "EXCLUDE_URL_PREFIXES": ["/s/"],
    }
    ours, theirs = both_middlewares_answer("/s/demo/")
    assert ours == theirs == {HEADER: None, HEADER_REPORT_ONLY: None}
