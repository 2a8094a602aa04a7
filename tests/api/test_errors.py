"""Every error of the API in the one format, with a status the schema documents; the cases the fuzzing
found, each pinned down."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from drf_spectacular.drainage import GENERATOR_STATS
from rest_framework.authtoken.models import Token as ApiToken

from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff() -> Client:
    user = get_user_model().objects.create_user("staff", password="pw", is_staff=True)
    return Client(headers={"Authorization": f"Token {ApiToken.objects.create(user=user).key}"})


@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> dict:
    GENERATOR_STATS.reset()
    path = tmp_path_factory.mktemp("schema") / "schema.json"
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", "--file", str(path)
    )
    return json.loads(path.read_text())


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield path, method, operation


# --- the schema -------------------------------------------------------------------------------------


def test_every_error_response_of_the_schema_is_the_common_error_body(schema):
    error = {"$ref": "#/components/schemas/Error"}
    csv_lines = {"type": "string", "description": "detail, then errors, one per line."}
    bodies = {
        (path, method, status, media_type): content["schema"]
        for path, method, operation in operations(schema)
        for status, response in operation["responses"].items()
        if int(status) >= 400
        for media_type, content in response["content"].items()
    }

    expected = {key: error if key[3] == "application/json" else csv_lines for key in bodies}
    assert bodies == expected
    assert {key[3] for key in bodies} == {"application/json", "text/csv"}  # CSV: the leaderboard's


def test_every_operation_documents_503_with_retry_after(schema):
    missing = [
        (path, method)
        for path, method, operation in operations(schema)
        if "Retry-After" not in operation["responses"].get("503", {}).get("headers", {})
    ]

    assert missing == []


def test_missing_credentials_are_401_everywhere_and_staff_endpoints_refuse_other_users_with_403(schema):
    studies = schema["paths"]["/api/studies/"]["get"]["responses"]
    submissions = schema["paths"]["/api/submissions/"]["get"]["responses"]

    assert ("401" in studies, "403" in studies) == (True, True)
    assert ("401" in submissions, "403" in submissions) == (True, False)
    assert set(studies["401"]["headers"]) == set(submissions["401"]["headers"]) == {"WWW-Authenticate"}


def test_a_request_body_brings_400_413_and_415_and_a_rate_limit_429(schema):
    vote = schema["paths"]["/api/votes/"]["post"]["responses"]
    start = schema["paths"]["/api/studies/{slug}/start/"]["post"]["responses"]

    assert {"400", "413", "415", "429"} <= set(vote)
    assert {"413", "415", "429"} & set(start) == set()  # no body, no rate limit


def test_fields_that_can_be_null_say_so(schema):
    study = schema["components"]["schemas"]["Study"]["properties"]

    assert (study["created_by"].get("nullable"), study["duplicated_from"].get("nullable")) == (True, True)


def test_bounds_a_float_field_cannot_state_are_in_the_schema(schema):
    study = schema["components"]["schemas"]["StudyRequest"]["properties"]
    leaderboard = schema["paths"]["/api/studies/{slug}/leaderboard/"]["get"]["parameters"]

    assert {key: study["keep_fraction"][key] for key in ("minimum", "exclusiveMinimum", "maximum")} == {
        "minimum": 0,
        "exclusiveMinimum": True,
        "maximum": 1,
    }
    assert next(p for p in leaderboard if p["name"] == "n0")["schema"]["enum"] == [0.0, 1.0, 2.0, 5.0, 10.0]


# --- the answers --------------------------------------------------------------------------------------


def test_an_oversized_vote_body_is_a_json_413(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000

    response = Client().post(
        "/api/votes/", json.dumps({"choice": "x" * 2000}), content_type="application/json"
    )

    assert response.status_code == 413
    assert response.json() == {
        "detail": "the request body is larger than 1,000 bytes; send less data per request"
    }


def test_a_form_encoded_vote_is_a_json_415():
    response = Client().post(
        "/api/votes/", "assignment=1&choice=left", content_type="application/x-www-form-urlencoded"
    )

    assert response.status_code == 415
    assert response.json() == {
        "detail": 'Unsupported media type "application/x-www-form-urlencoded" in request.'
    }


def test_an_unknown_api_path_is_a_json_404_even_for_a_post_without_csrf_token():
    client = Client(enforce_csrf_checks=True)

    response = client.post("/api/nothing-here/")

    assert response.status_code == 404
    assert response.json() == {
        "detail": "there is no endpoint /api/nothing-here/; the API is described at /api/docs/"
    }


def test_a_broken_multipart_body_to_the_token_endpoint_is_a_json_400():
    response = Client().post("/api/auth/token/", b"--x\r\n", content_type="multipart/form-data")

    assert response.status_code == 400
    assert response.json() == {"detail": "Multipart form parse error - Invalid boundary in multipart: None"}


def test_a_json_field_of_another_type_than_the_schema_says_is_refused(staff):
    response = staff.post(
        "/api/studies/",
        {"name": "Pilot", "slug": "pilot", "completion_code": 1234, "allow_ties": "yes"},
        content_type="application/json",
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [
        "allow_ties: must be true or false, got a string",
        "completion_code: must be a string, got a number",
    ]


def test_a_wrong_password_is_401_with_the_scheme(django_user_model):
    django_user_model.objects.create_user("owner", password="right")

    response = Client().post("/api/auth/token/", {"username": "owner", "password": "wrong"})

    assert (response.status_code, response["WWW-Authenticate"]) == (401, 'Token realm="api"')


def test_an_n0_so_large_that_the_weights_overflow_is_refused_not_a_500(django_user_model):
    study = make_study(tokens=5, ballot_count=1, appearances=4, seed=1)
    vote_until(study, voters=annotators(study, 5))
    owner = django_user_model.objects.create_user("owner", password="pw")
    client = Client(headers={"Authorization": f"Token {ApiToken.objects.create(user=owner).key}"})
    rows = [
        {"item": pk, "score": float(index)}
        for index, pk in enumerate(study.items.values_list("pk", flat=True))
    ]
    url = client.post(
        f"/api/studies/{study.slug}/submissions/",
        {"model_name": "m", "scores": rows},
        content_type="application/json",
    ).json()["url"]

    response = client.get(url + "evaluation/", {"n0": "6e307"})

    assert response.status_code == 400
    assert response.json()["errors"] == [
        "n0: n0 must be at most 1,000,000: beyond it every rank weighs the same, as in ρ and τ"
    ]


def test_a_csv_with_a_nul_character_is_refused_not_a_500(staff):
    study = make_study(tokens=4, start=False)

    response = staff.post(
        f"/api/studies/{study.slug}/tokens/", "cat\x00,Animals\ndog,Animals\n", content_type="text/csv"
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": "the tokens file contains a NUL character at line 1: it is not a text CSV; save it as CSV "
        "UTF-8 and retry"
    }


@pytest.mark.parametrize("offset", ["\t6", "1_000", "٦", "+6"])
def test_a_page_offset_is_digits_only(staff, offset):
    response = staff.get("/api/studies/", {"offset": offset})

    assert response.status_code == 400
    assert response.json()["errors"] == [
        f"offset: must be a whole number from 0 to 4,611,686,018,427,387,904, got {offset!r}"
    ]


def test_an_empty_csv_body_is_an_empty_file_not_a_missing_one(staff):
    study = make_study(tokens=4, start=False)

    # Django's test client sends no Content-Type without a body; a real client sends it.
    response = staff.generic("POST", f"/api/studies/{study.slug}/tokens/", b"", CONTENT_TYPE="text/csv")

    assert (response.status_code, response.json()) == (400, {"detail": "the tokens file is empty"})
