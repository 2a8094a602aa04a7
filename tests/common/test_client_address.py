"""The client's address as the rate limits and the login lockout key it (common.throttling.client_address)
is REST framework's ``get_ident``, read without building ``request.headers``."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.test import RequestFactory, override_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from common.throttling import client_address

ADDRESSES = st.sampled_from(["203.0.113.7", "198.51.100.23", "2001:db8::1", "10.0.0.1", "", "unknown"])
HOP = st.one_of(ADDRESSES, st.text(alphabet=" ,.:0123456789abcdef", max_size=12))
FORWARDED = st.one_of(
    st.none(),
    st.lists(HOP, min_size=1, max_size=5).map(",".join),
    st.lists(HOP, min_size=1, max_size=5).map(", ".join),
)


def rest_frameworks_answer(request) -> str:
    return BaseThrottle().get_ident(request) or "unknown"


@settings(max_examples=300, deadline=None)
@given(
    forwarded=FORWARDED, remote=st.one_of(st.none(), ADDRESSES), proxies=st.sampled_from([None, 0, 1, 2, 3])
)
def test_it_is_rest_frameworks_identity_of_the_client(forwarded, remote, proxies):
    extra = {} if forwarded is None else {"HTTP_X_FORWARDED_FOR": forwarded}
    request = RequestFactory().get("/api/votes/", **extra)
    if remote is None:
        del request.META["REMOTE_ADDR"]
    else:
        request.META["REMOTE_ADDR"] = remote
    with override_settings(REST_FRAMEWORK={**_rest_framework(), "NUM_PROXIES": proxies}):
        assert api_settings.NUM_PROXIES == proxies
        assert client_address(request) == rest_frameworks_answer(request)
        assert client_address(Request(request)) == rest_frameworks_answer(request)


@pytest.mark.parametrize(
    ("forwarded", "proxies", "expected"),
    [
        (None, 1, "198.51.100.23"),  # no proxy header: the peer
        ("203.0.113.7", 0, "198.51.100.23"),  # no trusted proxy: the header is the client's to forge
        ("203.0.113.7", 1, "203.0.113.7"),  # one trusted proxy: what it appended
        ("6.6.6.6, 203.0.113.7", 1, "203.0.113.7"),  # a forged first hop is passed over
        ("6.6.6.6, 203.0.113.7, 10.0.0.2", 2, "203.0.113.7"),
        ("203.0.113.7", 3, "203.0.113.7"),  # fewer hops than proxies: the first
    ],
)
def test_behind_trusted_proxies_it_is_the_address_the_outermost_one_saw(forwarded, proxies, expected):
    extra = {"REMOTE_ADDR": "198.51.100.23"}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    with override_settings(REST_FRAMEWORK={**_rest_framework(), "NUM_PROXIES": proxies}):
        assert client_address(RequestFactory().get("/", **extra)) == expected


def _rest_framework() -> dict:
    return dict(django_settings.REST_FRAMEWORK)
