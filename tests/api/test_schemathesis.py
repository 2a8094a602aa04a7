"""schemathesis over every operation of the REST API, as staff and as a model owner: no 5xx, and every
response as the schema says (status code, content type, body, headers), whatever the request.

The quick version for CI: a bounded number of examples per operation and phase (``MAX_EXAMPLES``),
in-process through the WSGI application, against the world of ``tests/api/world.py`` (a finished study
with models, a running study, a draft); path parameters name its studies and submissions half of the
time, so operations reach their real branches. ``tests/reliability/fuzz.py`` is the heavy version (every
check, thousands of requests, a live server); RELIABILITY.md has its figures.

``positive_data_acceptance`` is the one check left out here: it expects any request the schema allows to
succeed, but some refusals follow from rules a schema cannot state (a slug already taken, a plan
impossible for the study's items, a CSV's content, a K beyond the study's items). The heavy run reports
it, with those cases named.
"""

from __future__ import annotations

import random

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import load_all_checks
from schemathesis.specs.openapi import checks as openapi_checks

from collection.models import Item
from config.wsgi import application
from tests.api.world import FINISHED
from tests.reliability.fuzz import use_odd_values, use_world_path_parameters

pytestmark = pytest.mark.django_db

MAX_EXAMPLES = 25
# Odd values (lone surrogates, NUL, numbers beyond 64 bits and the float range, constant or duplicated
# scores: tests/reliability/fuzz.py, use_odd_values), fewer examples: the heavy run has thousands.
ODD_MAX_EXAMPLES = 5

SCHEMA = schemathesis.openapi.from_wsgi(
    "/api/schema/?format=json",
    application,
    config=schemathesis.Config.from_dict(
        # The token the test sends is the credential under test: no made-up session cookie beside it.
        {"generation": {"max-examples": MAX_EXAMPLES, "with-security-parameters": False}}
    ),
)

load_all_checks()
CHECKS = [
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_headers_conformance,
    openapi_checks.response_schema_conformance,
    openapi_checks.negative_data_rejection,
    openapi_checks.missing_required_header,
    openapi_checks.unsupported_method,
    openapi_checks.allow_header_conformance,
    openapi_checks.ignored_auth,
]


@pytest.fixture(autouse=True)
def connection_kept_open():
    """The WSGI handler closes the database connection after each request, as it should in production; in
    a test that would close the test's transaction (on PostgreSQL). Django's test client avoids it the
    same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def path_parameters_from(world):
    rng = random.Random(0)

    def use(case):
        return use_world_path_parameters(
            case, slugs=list(world.slugs), submission_ids=list(world.submission_ids), rng=rng
        )

    return use


# With odd values a case is no longer what schemathesis generated: the check that judges a request by its
# schema is left out (tests/reliability/fuzz.py, the second pass).
ODD_VALUES_CHECKS = [check for check in CHECKS if check is not openapi_checks.negative_data_rejection]


@pytest.fixture
def odd_values_in(world):
    rng = random.Random(1)
    items = list(Item.objects.filter(study__slug=FINISHED).order_by("pk").values_list("pk", flat=True))

    def use(case):
        return use_odd_values(case, items=items, finished_slug=FINISHED, rng=rng)

    return use


def call_and_check(case, token: str, checks=CHECKS) -> None:
    response = case.call(headers={"Authorization": f"Token {token}"})
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} answered {response.status_code}: {response.text[:2000]}"
    )
    case.validate_response(response, checks=checks, headers={"Authorization": f"Token {token}"})


@SCHEMA.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_as_staff_no_request_gets_a_5xx_or_an_answer_the_schema_does_not_describe(
    case, world, path_parameters_from
):
    call_and_check(path_parameters_from(case), world.staff_token)


@SCHEMA.parametrize()
@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_as_a_model_owner_no_request_gets_a_5xx_or_an_answer_the_schema_does_not_describe(
    case, world, path_parameters_from
):
    call_and_check(path_parameters_from(case), world.owner_a_token)


@SCHEMA.parametrize()
@settings(max_examples=ODD_MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_as_staff_odd_values_get_no_5xx_and_an_answer_the_schema_describes(
    case, world, path_parameters_from, odd_values_in
):
    call_and_check(odd_values_in(path_parameters_from(case)), world.staff_token, ODD_VALUES_CHECKS)


@SCHEMA.parametrize()
@settings(max_examples=ODD_MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_as_a_model_owner_odd_values_get_no_5xx_and_an_answer_the_schema_describes(
    case, world, path_parameters_from, odd_values_in
):
    call_and_check(odd_values_in(path_parameters_from(case)), world.owner_a_token, ODD_VALUES_CHECKS)
