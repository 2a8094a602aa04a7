"""Bodies an attacker controls get a 4xx in the API's error format, never a 500, with nothing stored."""

import pytest
from django.test import Client

from collection.models import Vote
from tests.factories import make_study

pytestmark = pytest.mark.django_db

DEPTH = 100_000


@pytest.mark.parametrize("path", ["/api/votes/", "/api/auth/token/", "/api/studies/demo/submissions/"])
@pytest.mark.parametrize("opening, closing", [("[", "]"), ('{"a":', "}")])
def test_json_nested_100000_deep_is_a_400_for_anyone(path, opening, closing, django_user_model):
    owner = django_user_model.objects.create_user("owner", password="pw")
    client = Client()
    if "submissions" in path:
        client.force_login(owner)
        study = make_study()
        study.slug = "demo"
        study.save(update_fields=["slug"])
    body = opening * DEPTH + "1" + closing * DEPTH

    response = client.post(path, body, content_type="application/json")

    assert response.status_code == 400
    assert response.json() == {"detail": "JSON parse error: the body nests arrays or objects too deeply"}
    assert not Vote.objects.exists()


def test_a_vote_body_over_the_size_limit_is_a_json_413(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    study = make_study()

    response = Client().post(
        "/api/votes/", '{"assignment": 1, "choice": "' + "l" * 2000 + '"}', content_type="application/json"
    )

    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "detail": "the request body is larger than 1,000 bytes; send less data per request"
    }
    assert not study.ballots.get().votes.exists()


@pytest.mark.parametrize(
    "body",
    [b"{", b"[1,2", b'{"assignment": NaN, "choice": "left"}', b"\xff\xfe", b'"just a string"', b"null"],
)
def test_malformed_vote_bodies_are_400_with_a_detail(body):
    response = Client().post("/api/votes/", body, content_type="application/json")

    assert response.status_code == 400
    assert isinstance(response.json()["detail"], str) and response.json()["detail"]


@pytest.mark.parametrize(
    "authorization, status",
    [
        ({"HTTP_AUTHORIZATION": "Token staff-token"}, 413),
        ({}, 401),
        ({"HTTP_AUTHORIZATION": "Token nope"}, 401),
    ],
)
def test_a_refused_upload_is_read_to_its_end_so_that_the_connection_can_serve_the_next_request(
    authorization, status, django_user_model
):
    from rest_framework.authtoken.models import Token

    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True, is_superuser=True)
    Token.objects.create(user=staff, key="staff-token")
    study = make_study(start=False)
    body = b"token,area\n" + b"x" * 2_500_000  # over the 2 MiB of an upload: refused after 2 MiB, or before

    path = f"/api/studies/{study.slug}/tokens/"

    response = Client().post(path, body, content_type="text/csv", **authorization)

    assert response.status_code == status
    # what the server hands the application as the body: nothing left for it to drain or to choke on
    assert len(response.wsgi_request.environ["wsgi.input"]) == 0


def test_a_body_over_twice_the_largest_a_view_reads_is_left_to_the_server_to_refuse(settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100_000
    body = b"{" + b" " * 250_000 + b"}"

    response = Client().post("/api/votes/", body, content_type="application/json")

    assert response.status_code == 413  # refused from its declared length
    assert len(response.wsgi_request.environ["wsgi.input"]) == 250_002  # and none of it read after
