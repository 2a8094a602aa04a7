"""The client's errors carry the API's message and status, and say what to do."""

from __future__ import annotations

import socket

import pytest
from yardstick_client import ApiError, Client, ConnectionFailed, EvaluationFailed, YardstickError

from collection.permissions import IsStaff
from tests.factories import make_study


def test_an_unknown_study_is_a_404_with_the_apis_message(connect, server, owner_token):
    with pytest.raises(ApiError) as raised:
        connect(server, owner_token).pairs("no-such-study")

    assert (raised.value.status, raised.value.detail) == (
        404,
        "there is no study 'no-such-study'; /models/ lists the finished studies",
    )
    assert str(raised.value).startswith(
        f"HTTP 404 on GET {server}/api/studies/no-such-study/pairs/?limit=1000: "
    )


def test_a_study_not_finished_refuses_submissions(connect, server, owner_token, transactional_db):
    study = make_study()  # running

    with pytest.raises(ApiError) as raised:
        connect(server, owner_token).submit(study.slug, "early", {1: 0.5, 2: 0.1})

    assert raised.value.status == 409


def test_bad_rows_are_listed_one_by_one(connect, server, owner_token, finished_study, tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("item,score\n999999,0.5\n999998,nan\n")

    with pytest.raises(ApiError) as raised:
        connect(server, owner_token).submit(finished_study.slug, "bad", csv=path)

    assert raised.value.status == 400
    assert raised.value.errors == [
        f"line 2: item 999999 is not an item of study {finished_study.slug!r}",
        f"line 3: item 999998 is not an item of study {finished_study.slug!r}",
    ]
    assert str(raised.value).count("\n  - ") == 2


def test_a_model_name_is_used_once(connect, server, owner_token, finished_study):
    client = connect(server, owner_token)
    scores = {item.pk: float(item.index) for item in finished_study.items.all()}
    client.submit(finished_study.slug, "twice", scores, wait=False)

    with pytest.raises(ApiError) as raised:
        client.submit(finished_study.slug, "twice", scores)

    assert (raised.value.status, raised.value.detail) == (
        409,
        "you already submitted a model named 'twice' for this study; submissions are never replaced, so "
        "choose another name",
    )


def test_without_a_token_the_error_says_how_to_give_one(connect, server, finished_study, monkeypatch):
    monkeypatch.delenv("YARDSTICK_TOKEN", raising=False)

    with pytest.raises(ApiError) as raised:
        connect(server).pairs(finished_study.slug)

    assert raised.value.status == 401
    assert raised.value.detail.endswith("(this client has no token: pass token= or set YARDSTICK_TOKEN)")


def test_wrong_credentials_are_refused_and_right_ones_give_the_token(connect, server, owner, owner_token):
    client = connect(server)
    with pytest.raises(ApiError) as raised:
        client.log_in("ann", "not the password")

    assert raised.value.status == 401
    assert client.log_in("ann", "another unusual password") == owner_token
    assert client.token == owner_token


def test_a_model_owner_cannot_create_a_study(connect, server, owner_token):
    with pytest.raises(ApiError) as raised:
        connect(server, owner_token).create_study("Mine", "mine")

    assert (raised.value.status, raised.value.detail) == (403, IsStaff.message)


def test_an_unreachable_server_is_named():
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with pytest.raises(ConnectionFailed) as raised:
        Client(f"http://127.0.0.1:{port}", "KEY").pairs("demo")

    assert str(raised.value).startswith(f"cannot reach the Yardstick server at http://127.0.0.1:{port} (")


def test_scores_that_do_not_fit_the_pairs_are_refused_before_sending():
    pairs = [{"item": 1}, {"item": 2}]
    client = Client("http://127.0.0.1:9", "KEY")  # never reached

    with pytest.raises(ValueError, match="^3 scores for 2 pairs: give one score per pair, in their order$"):
        client.submit("demo", "m", [0.1, 0.2, 0.3], pairs=pairs)
    with pytest.raises(TypeError, match="either as scores="):
        client.submit("demo", "m")
    with pytest.raises(YardstickError, match="^the server URL must be http"):
        Client("127.0.0.1:8000")


def test_a_failed_evaluation_raises_with_the_servers_reason(
    connect, server, owner_token, owner, finished_study
):
    from metrics.models import Submission

    failed = Submission.objects.create(
        study=finished_study,
        owner=owner,
        model_name="lost",
        scores=[0.0] * 15,
        covered=15,
        coverage=1.0,
        source_format="json",
        status=Submission.Status.FAILED,
        error="the evaluation failed on our side (reference 1234)",
    )

    with pytest.raises(EvaluationFailed) as raised:
        connect(server, owner_token).wait_for_evaluation(failed.pk)

    assert str(raised.value) == (
        f"the server could not evaluate submission {failed.pk}: the evaluation failed on our side (reference 1234)"
    )
