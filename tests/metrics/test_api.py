"""The metrics REST API: model owners' pairs, submissions and evaluations, the public leaderboard and
per-annotator view; who may call what, and every refusal with its message (through the real services)."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from drf_spectacular.drainage import GENERATOR_STATS
from rest_framework.authtoken.models import Token as ApiToken

from collection.models import Study
from metrics import services
from metrics.correlation import MIN_WEIGHT_OFFSET_MESSAGE
from metrics.leaderboard import annotator_view, leaderboard_for
from metrics.models import Evaluation, Submission
from tests.factories import make_study

pytestmark = pytest.mark.django_db

LOGIN_HINT = (
    "log in first: send the header 'Authorization: Token <key>' (POST your username and password to "
    "/api/auth/token/ to get the key), or log in at /models/login/"
)
COEFFICIENT_KEYS = {"value", "standard_error", "interval", "chance_mean", "chance_sd", "p_value", "chance"}


def owner_client(django_user_model, username: str = "owner") -> Client:
    """A model owner's API client, authenticated by token as a script would be."""
    user = django_user_model.objects.create_user(username, password="pw")
    token = ApiToken.objects.create(user=user)
    return Client(headers={"Authorization": f"Token {token.key}"})


@pytest.fixture
def owner(django_user_model) -> Client:
    return owner_client(django_user_model)


def final_scores(study: Study) -> dict[int, float]:
    """The study's own final scores ȳ by item id: the true ranking."""
    return dict(study.items.values_list("pk", "final_score"))


def json_rows(scores: dict[int, float]) -> list[dict]:
    return [{"item": item_id, "score": score} for item_id, score in scores.items()]


def random_scores(study: Study, seed: int = 0) -> dict[int, float]:
    rng = np.random.default_rng(seed)
    return {item_id: float(rng.random()) for item_id in study.items.values_list("pk", flat=True)}


def submit_json(client: Client, study: Study, model_name: str, rows, **fields):
    return client.post(
        f"/api/studies/{study.slug}/submissions/",
        json.dumps({"model_name": model_name, "scores": rows, **fields}),
        content_type="application/json",
    )


def submit_csv(client: Client, study: Study, model_name: str, text: str | bytes, **fields):
    content = text.encode() if isinstance(text, str) else text
    upload = SimpleUploadedFile("scores.csv", content, content_type="text/csv")
    return client.post(
        f"/api/studies/{study.slug}/submissions/", {"model_name": model_name, "file": upload, **fields}
    )


def assert_refused(response, status: int, detail: str, errors: list[str] | None = None) -> None:
    expected = {"detail": detail} if errors is None else {"detail": detail, "errors": errors}
    assert (response.status_code, response.json()) == (status, expected)
    assert Submission.objects.count() == 0


# --- token ---------------------------------------------------------------------------------------


def test_a_username_and_password_give_the_token_that_authenticates_the_api(django_user_model):
    user = django_user_model.objects.create_user("owner", password="correct horse")

    response = Client().post("/api/auth/token/", {"username": "owner", "password": "correct horse"})

    assert response.status_code == 200
    assert response.json() == {"token": ApiToken.objects.get(user=user).key}
    token = response.json()["token"]
    mine = Client(headers={"Authorization": f"Token {token}"}).get("/api/submissions/")
    assert (mine.status_code, mine.json()["count"]) == (200, 0)


def test_a_wrong_password_gets_no_token(django_user_model):
    django_user_model.objects.create_user("owner", password="correct horse")

    response = Client().post("/api/auth/token/", {"username": "owner", "password": "wrong"})

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Token realm="api"'
    assert response.json() == {
        "detail": "wrong username or password; ask an administrator if you have forgotten yours"
    }
    assert ApiToken.objects.count() == 0


def test_a_stale_token_sent_along_does_not_stop_a_login(django_user_model):
    django_user_model.objects.create_user("owner", password="correct horse")
    client = Client(headers={"Authorization": "Token no-longer-valid"})

    response = client.post("/api/auth/token/", {"username": "owner", "password": "correct horse"})

    assert response.status_code == 200


# --- pairs ---------------------------------------------------------------------------------------


def test_pairs_list_every_item_of_a_finished_study_with_its_tokens_and_no_human_score(study, owner):
    response = owner.get(f"/api/studies/{study.slug}/pairs/")

    assert response.status_code == 200
    body = response.json()
    expected = [
        {"item": item.pk, "token_a": item.token_a.text, "token_b": item.token_b.text, "area": item.area.name}
        for item in study.items.select_related("token_a", "token_b", "area").order_by("index")
    ]
    assert (body["count"], body["results"]) == (28, expected)
    assert "score" not in response.content.decode() and "rank" not in response.content.decode()


def test_pairs_are_paginated(study, owner):
    response = owner.get(f"/api/studies/{study.slug}/pairs/", {"limit": 5, "offset": 25})

    assert [row["item"] for row in response.json()["results"]] == list(
        study.items.order_by("index").values_list("pk", flat=True)[25:]
    )


def test_pairs_of_a_running_study_are_refused_with_409(owner):
    running = make_study()

    response = owner.get(f"/api/studies/{running.slug}/pairs/")

    assert (response.status_code, response.json()) == (
        409,
        {"detail": f"study '{running.slug}' is running: its items are open for models once it has finished"},
    )


def test_pairs_of_an_unknown_study_are_404(owner):
    response = owner.get("/api/studies/no-such-study/pairs/")

    assert (response.status_code, response.json()) == (
        404,
        {"detail": "there is no study 'no-such-study'; /models/ lists the finished studies"},
    )


def test_pairs_need_a_login_and_say_how_to_get_one(study):
    response = Client().get(f"/api/studies/{study.slug}/pairs/")

    assert (response.status_code, response.json()) == (401, {"detail": LOGIN_HINT})
    assert response["WWW-Authenticate"] == "Token"


# --- submissions: accepted -------------------------------------------------------------------------


def test_a_json_submission_by_item_id_is_stored_and_evaluated_at_once(study, owner):
    scores = final_scores(study)

    response = submit_json(owner, study, "truth", json_rows(scores), description="the study's own ȳ")

    submission = Submission.objects.get()
    assert response.status_code == 201
    assert response.json() == {
        "id": submission.pk,
        "model_name": "truth",
        "covered": 28,
        "coverage": 1.0,
        "status": "done",
        "progress": 100,
        "url": f"/api/submissions/{submission.pk}/",
    }
    by_index = dict(study.items.values_list("index", "final_score"))
    assert submission.scores == [by_index[index] for index in range(28)]
    assert (submission.description, submission.source_format) == ("the study's own ȳ", "json")
    assert Evaluation.objects.filter(submission=submission, weight_offset=2.0, top_k=2).count() == 1


def test_a_json_submission_by_token_pairs_in_either_order_is_accepted(study, owner):
    rows = []
    for item in study.items.select_related("token_a", "token_b"):
        pair = [item.token_a.text, item.token_b.text]
        first, second = reversed(pair) if item.index % 2 else pair
        rows.append({"token_a": first, "token_b": second, "score": item.index})

    response = submit_json(owner, study, "by tokens", rows)

    assert (response.status_code, response.json()["covered"]) == (201, 28)
    assert Submission.objects.get().scores == [float(index) for index in range(28)]


def test_a_csv_upload_by_item_id_is_stored_and_evaluated(study, owner):
    text = "item,score\n" + "".join(f"{item_id},{score}\n" for item_id, score in final_scores(study).items())

    response = submit_csv(owner, study, "truth as csv", text, description="from a file")

    submission = Submission.objects.get()
    assert (response.status_code, response.json()["status"]) == (201, "done")
    assert (submission.model_name, submission.source_format, submission.covered) == (
        "truth as csv",
        "csv",
        28,
    )
    assert submission.description == "from a file"


def test_a_csv_upload_by_token_pairs_in_either_order_is_accepted(study, owner):
    lines = ["token_a,token_b,score"]
    for item in study.items.select_related("token_a", "token_b"):
        pair = [item.token_a.text, item.token_b.text]
        first, second = reversed(pair) if item.index % 2 else pair
        lines.append(f"{first},{second},{item.index / 10}")

    response = submit_csv(owner, study, "tokens csv", "\n".join(lines) + "\n")

    assert (response.status_code, response.json()["covered"]) == (201, 28)
    assert Submission.objects.get().scores == [index / 10 for index in range(28)]


def test_a_partial_submission_is_evaluated_on_the_covered_items_with_its_coverage(study, owner):
    scores = dict(list(final_scores(study).items())[:20])

    response = submit_json(owner, study, "partial", json_rows(scores))

    assert response.status_code == 201
    assert (response.json()["covered"], response.json()["coverage"]) == (20, 20 / 28)
    evaluation = owner.get(response.json()["url"]).json()["evaluation"]
    assert (evaluation["items"], evaluation["covered"], evaluation["coverage"]) == (28, 20, 20 / 28)
    assert Submission.objects.get().scores.count(None) == 8


def test_a_large_submission_is_accepted_with_202_and_evaluated_in_the_background(
    study, owner, monkeypatch, django_capture_on_commit_callbacks
):
    # The threshold of the background evaluation, lowered so that this 28-item study crosses it.
    monkeypatch.setattr(services, "SYNC_EVALUATION_ITEMS", 10)

    with django_capture_on_commit_callbacks() as callbacks:
        response = submit_json(owner, study, "big", json_rows(final_scores(study)))

    assert response.status_code == 202
    assert (response.json()["status"], response.json()["progress"]) == ("pending", 0)
    waiting = owner.get(response.json()["url"]).json()
    assert (waiting["status"], waiting["progress"], waiting["evaluation"]) == ("pending", 0, None)
    early = owner.get(response.json()["url"] + "evaluation/")
    assert (early.status_code, early.json()) == (
        409,
        {"detail": "the submission is pending: other n0 and K can be asked for once its evaluation is done"},
    )
    for callback in callbacks:  # the commit: the task runs (eagerly, in this process)
        callback()
    done = owner.get(response.json()["url"]).json()
    assert (done["status"], done["progress"], done["evaluation"]["covered"]) == ("done", 100, 28)


# --- submissions: refused, nothing stored --------------------------------------------------------


def test_an_unknown_item_is_refused_by_row(study, owner):
    rows = json_rows(final_scores(study))
    rows[3] = {"item": 999999, "score": 0.5}

    response = submit_json(owner, study, "m", rows)

    assert_refused(
        response,
        400,
        "the submission has 1 problem; nothing was stored",
        [f"scores[3]: item 999999 is not an item of study '{study.slug}'"],
    )


def test_an_unknown_token_pair_is_refused_by_row(study, owner):
    response = submit_csv(owner, study, "m", "token_a,token_b,score\narea0-1,area0-2,1\nno,such,2\n")

    assert_refused(
        response,
        400,
        "the submission has 1 problem; nothing was stored",
        [f"line 3: the pair 'no' – 'such' is not an item of study '{study.slug}'"],
    )


def test_a_duplicate_item_is_refused_with_both_rows(study, owner):
    rows = json_rows(final_scores(study))
    rows.append({"item": rows[0]["item"], "score": 0.1})

    response = submit_json(owner, study, "m", rows)

    assert_refused(
        response,
        400,
        "the submission has 1 problem; nothing was stored",
        ["scores[28]: this item was already scored at scores[0]"],
    )


def test_the_same_pair_by_id_and_by_tokens_is_a_duplicate(study, owner):
    item = study.items.select_related("token_a", "token_b").get(index=0)
    rows = [
        {"item": item.pk, "score": 1},
        {"token_a": item.token_b.text, "token_b": item.token_a.text, "score": 2},
    ]

    response = submit_json(owner, study, "m", rows)

    assert response.json()["errors"] == ["scores[1]: this item was already scored at scores[0]"]
    assert Submission.objects.count() == 0


def test_nan_infinite_and_non_numeric_scores_in_json_are_refused_by_row(study, owner):
    item_ids = list(study.items.order_by("index").values_list("pk", flat=True))
    body = (
        '{"model_name": "m", "scores": ['
        f'{{"item": {item_ids[0]}, "score": NaN}}, {{"item": {item_ids[1]}, "score": Infinity}}, '
        f'{{"item": {item_ids[2]}, "score": "-inf"}}, {{"item": {item_ids[3]}, "score": "high"}}, '
        f'{{"item": {item_ids[4]}, "score": null}}, {{"item": {item_ids[5]}, "score": true}}]}}'
    )

    response = owner.post(f"/api/studies/{study.slug}/submissions/", body, content_type="application/json")

    assert_refused(
        response,
        400,
        "the submission has 6 problems; nothing was stored",
        [
            f"scores[0], item {item_ids[0]}: the score nan is not a finite number",
            f"scores[1], item {item_ids[1]}: the score inf is not a finite number",
            f"scores[2], item {item_ids[2]}: the score '-inf' is not a finite number",
            f"scores[3], item {item_ids[3]}: the score 'high' is not a number",
            f"scores[4], item {item_ids[4]}: the score None is not a number",
            f"scores[5], item {item_ids[5]}: the score True is not a number",
        ],
    )


def test_nan_infinite_empty_and_non_numeric_scores_in_a_csv_are_refused_by_line(study, owner):
    item_ids = list(study.items.order_by("index").values_list("pk", flat=True))
    text = (
        f"item,score\n{item_ids[0]},0.5\n{item_ids[1]},nan\n{item_ids[2]},inf\n"
        f"{item_ids[3]},abc\n{item_ids[4]},\n"
    )

    response = submit_csv(owner, study, "m", text)

    assert_refused(
        response,
        400,
        "the submission has 4 problems; nothing was stored",
        [
            f"line 3, item {item_ids[1]}: the score 'nan' is not a finite number",
            f"line 4, item {item_ids[2]}: the score 'inf' is not a finite number",
            f"line 5, item {item_ids[3]}: the score 'abc' is not a number",
            f"line 6, item {item_ids[4]}: the score '' is not a number",
        ],
    )


def test_only_the_first_twenty_problems_are_listed_with_a_count_of_the_rest(study, owner):
    rows = [{"item": 900000 + number, "score": 1} for number in range(25)]

    response = submit_json(owner, study, "m", rows)

    errors = response.json()["errors"]
    assert errors[0] == f"scores[0]: item 900000 is not an item of study '{study.slug}'"
    assert errors[19] == f"scores[19]: item 900019 is not an item of study '{study.slug}'"
    assert errors[20:] == ["… and 5 more"]
    assert response.json()["detail"] == "the submission has 25 problems; nothing was stored"
    assert Submission.objects.count() == 0


def test_an_empty_list_of_scores_is_refused(study, owner):
    assert_refused(submit_json(owner, study, "m", []), 400, "the submission holds no scores")


def test_scores_that_are_not_a_list_are_refused(study, owner):
    assert_refused(
        submit_json(owner, study, "m", {"12": 0.5}),
        400,
        '"scores" must be a list of objects like {"item": 12, "score": 0.87}',
    )


def test_an_empty_file_is_refused_with_the_header_it_needs(study, owner):
    assert_refused(
        submit_csv(owner, study, "m", b""),
        400,
        "the CSV needs a header with the columns item,score or token_a,token_b,score; got an empty file",
    )


def test_a_file_with_only_a_header_is_refused(study, owner):
    assert_refused(submit_csv(owner, study, "m", "item,score\n"), 400, "the submission holds no scores")


def test_a_file_larger_than_5_mib_is_refused_with_413(study, owner):
    limit = services.MAX_SUBMISSION_BYTES
    text = "item,score\n" + "x" * limit

    response = submit_csv(owner, study, "m", text)

    assert_refused(response, 413, f"the file is {limit + 11:,} bytes; the limit is {limit:,} bytes (5 MiB)")


def test_a_json_body_larger_than_5_mib_is_refused_with_413(study, owner):
    body = json.dumps({"model_name": "m", "description": "x" * services.MAX_SUBMISSION_BYTES, "scores": []})

    response = owner.post(f"/api/studies/{study.slug}/submissions/", body, content_type="application/json")

    assert_refused(
        response,
        413,
        "the request body is larger than 5,242,880 bytes (5 MiB); send fewer rows per model, "
        "or scores by item id, which take less space than token pairs",
    )


def test_malformed_json_is_refused_with_the_parsers_message(study, owner):
    response = owner.post(
        f"/api/studies/{study.slug}/submissions/",
        '{"model_name": "m", "scores": [',
        content_type="application/json",
    )

    assert response.status_code == 400
    assert response.json()["detail"].startswith("JSON parse error - ")
    assert Submission.objects.count() == 0


def test_a_multipart_request_without_a_file_is_refused(study, owner):
    response = owner.post(f"/api/studies/{study.slug}/submissions/", {"model_name": "m"})

    assert_refused(
        response,
        400,
        "no file received: send the CSV as the multipart form field 'file' (with model_name), "
        "or send JSON with model_name and scores",
    )


def test_a_missing_model_name_is_refused_by_field(study, owner):
    response = owner.post(
        f"/api/studies/{study.slug}/submissions/",
        {"scores": json_rows(final_scores(study))},
        content_type="application/json",
    )

    assert_refused(
        response, 400, "model_name: This field is required.", ["model_name: This field is required."]
    )


def test_a_submission_below_the_minimum_coverage_is_refused(study, owner):
    scores = dict(list(final_scores(study).items())[:10])

    assert_refused(
        submit_json(owner, study, "m", json_rows(scores)),
        400,
        "the submission scores 10 of 28 items (35.7%); this study needs at least 50% and two items",
    )


def test_a_submission_for_a_study_that_has_not_finished_is_refused_with_409(owner):
    running = make_study()
    rows = [{"item": item_id, "score": 1.0} for item_id in running.items.values_list("pk", flat=True)]

    assert_refused(
        submit_json(owner, running, "m", rows),
        409,
        f"study '{running.slug}' is running: models are evaluated against its final ranking, "
        "once it has finished",
    )


def test_a_model_name_used_twice_by_the_same_owner_is_refused_with_409(study, owner):
    first = submit_json(owner, study, "twice", json_rows(final_scores(study)))

    again = submit_json(owner, study, "twice", json_rows(random_scores(study)))

    assert first.status_code == 201
    assert (again.status_code, again.json()) == (
        409,
        {
            "detail": "you already submitted a model named 'twice' for this study; submissions are never "
            "replaced, so choose another name"
        },
    )
    assert Submission.objects.get().scores[0] == study.items.get(index=0).final_score  # unchanged


def test_two_owners_may_use_the_same_model_name(study, owner, django_user_model):
    other = owner_client(django_user_model, "other")

    statuses = [
        submit_json(client, study, "same", json_rows(final_scores(study))).status_code
        for client in (owner, other)
    ]

    assert statuses == [201, 201]


def test_submitting_needs_a_login(study):
    response = submit_json(Client(), study, "m", json_rows(final_scores(study)))

    assert (response.status_code, response.json()) == (401, {"detail": LOGIN_HINT})
    assert Submission.objects.count() == 0


# --- own submissions only --------------------------------------------------------------------------


def test_a_model_owner_lists_only_their_own_submissions(study, owner, django_user_model):
    other = owner_client(django_user_model, "other")
    submit_json(other, study, "theirs", json_rows(random_scores(study)))
    mine = submit_json(owner, study, "mine", json_rows(final_scores(study))).json()

    response = owner.get("/api/submissions/")

    assert response.status_code == 200
    (row,) = response.json()["results"]
    assert {key: row[key] for key in ("id", "study", "model_name", "covered", "status", "url")} == {
        "id": mine["id"],
        "study": study.slug,
        "model_name": "mine",
        "covered": 28,
        "status": "done",
        "url": mine["url"],
    }


def test_a_submission_shows_its_status_coverage_and_evaluation_at_the_defaults(study, owner):
    created = submit_json(owner, study, "truth", json_rows(final_scores(study))).json()

    response = owner.get(created["url"])

    body = response.json()
    submission = Submission.objects.get()
    evaluation = Evaluation.objects.get(submission=submission, weight_offset=2.0, top_k=2)
    assert response.status_code == 200
    assert (body["status"], body["progress"], body["covered"], body["coverage"]) == ("done", 100, 28, 1.0)
    expected = json.loads(json.dumps(services.public_result(evaluation.result)))
    for name in ("rho_w", "tau_w", "rho", "tau"):  # each figure's verdict against chance: the truth is above
        expected[name]["chance"] = "above"
    assert body["evaluation"] == expected
    assert body["test_part"] is None  # no hidden test part in this study
    assert set(body["evaluation"]) == {
        "part",
        "items",
        "covered",
        "coverage",
        "weight_offset",
        "first_rank_weight",
        "top_k",
        "grade_counts",
        "replicate_count",
        "rho_w",
        "tau_w",
        "rho",
        "tau",
        "retrieval",
    }
    assert set(body["evaluation"]["rho_w"]) == COEFFICIENT_KEYS
    assert body["evaluation"]["rho_w"]["value"] == 1.0  # the study's own scores give its own ranking
    assert len(body["evaluation"]["retrieval"]["interpolated_precision"]) == 11


def test_another_owners_submission_is_404_as_if_it_did_not_exist(study, owner, django_user_model):
    theirs = submit_json(owner_client(django_user_model, "other"), study, "x", json_rows(final_scores(study)))
    submission_id = theirs.json()["id"]

    responses = [
        owner.get(f"/api/submissions/{submission_id}/"),
        owner.get(f"/api/submissions/{submission_id}/evaluation/", {"n0": 0}),
        owner.get(f"/api/submissions/{submission_id + 1000}/"),
    ]

    assert [(r.status_code, r.json()) for r in responses] == [
        (
            404,
            {"detail": f"submission {submission_id} is not one of yours; GET /api/submissions/ lists yours"},
        ),
        (
            404,
            {"detail": f"submission {submission_id} is not one of yours; GET /api/submissions/ lists yours"},
        ),
        (
            404,
            {
                "detail": f"submission {submission_id + 1000} is not one of yours; GET /api/submissions/ lists yours"
            },
        ),
    ]
    assert Evaluation.objects.filter(weight_offset=0.0).count() == 0


def test_submissions_need_a_login(study, owner):
    submission_id = submit_json(owner, study, "x", json_rows(final_scores(study))).json()["id"]
    anonymous = Client()

    responses = [
        anonymous.get("/api/submissions/"),
        anonymous.get(f"/api/submissions/{submission_id}/"),
        anonymous.get(f"/api/submissions/{submission_id}/evaluation/"),
    ]

    assert [(r.status_code, r.json()) for r in responses] == [(401, {"detail": LOGIN_HINT})] * 3


def test_a_logged_in_browser_session_may_use_the_api_too(study, django_user_model):
    user = django_user_model.objects.create_user("browser", password="pw")
    client = Client()
    client.force_login(user)

    response = submit_json(client, study, "from the docs page", json_rows(final_scores(study)))

    assert response.status_code == 201
    assert client.get("/api/submissions/").json()["count"] == 1


# --- evaluation at other settings ------------------------------------------------------------------


def test_an_evaluation_at_another_n0_and_k_is_computed_once_and_stored(study, owner):
    url = submit_json(owner, study, "truth", json_rows(final_scores(study))).json()["url"]

    response = owner.get(url + "evaluation/", {"n0": "0", "k": "5"})
    again = owner.get(url + "evaluation/", {"n0": "0", "k": "5"})

    body = response.json()
    assert response.status_code == 200
    assert (body["weight_offset"], body["top_k"], body["retrieval"]["k"]) == (0.0, 5, 5)
    assert body["first_rank_weight"] == pytest.approx(6 / math.pi**2)  # R(0) = 1/ψ⁽¹⁾(1)
    assert body["grade_counts"]["S"] + body["grade_counts"]["A"] + body["grade_counts"]["B"] == 5
    assert again.json() == body
    assert sorted(Evaluation.objects.values_list("weight_offset", "top_k")) == [(0.0, 5), (2.0, 2)]


def test_an_evaluation_without_settings_is_the_one_at_the_defaults(study, owner):
    url = submit_json(owner, study, "truth", json_rows(final_scores(study))).json()["url"]

    response = owner.get(url + "evaluation/")

    assert response.json() == owner.get(url).json()["evaluation"]


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ({"n0": "-1"}, f"n0: {MIN_WEIGHT_OFFSET_MESSAGE}"),
        ({"n0": "abc"}, "n0: A valid number is required."),
        ({"n0": "nan"}, "n0: A valid number is required."),
        ({"k": "0"}, "k: Ensure this value is greater than or equal to 1."),
        ({"k": "29"}, "K must lie between 1 and the study's 28 items, got 29"),
        ({"k": "two"}, "k: A valid integer is required."),
    ],
)
def test_bad_evaluation_settings_are_refused_with_400(study, owner, query, detail):
    url = submit_json(owner, study, "truth", json_rows(final_scores(study))).json()["url"]

    response = owner.get(url + "evaluation/", query)

    assert (response.status_code, response.json()["detail"]) == (400, detail)
    assert Evaluation.objects.count() == 1  # only the one at the defaults


# --- leaderboard ---------------------------------------------------------------------------------


@pytest.fixture
def three_models(study, django_user_model):
    """The true ranking, a random model (another owner), and the truth with a tiny perturbation."""
    truth = final_scores(study)
    rng = np.random.default_rng(1)
    twin = {item_id: score + float(rng.normal(0, 1e-6)) for item_id, score in truth.items()}
    alice, bob = owner_client(django_user_model, "alice"), owner_client(django_user_model, "bob")
    for client, name, scores in (
        (alice, "truth", truth),
        (bob, "random", random_scores(study)),
        (alice, "twin", twin),
    ):
        assert submit_json(client, study, name, json_rows(scores)).status_code == 201
    return alice


def test_the_true_ranking_ranks_first_with_rank_range_1_against_a_random_model(study, django_user_model):
    alice, bob = owner_client(django_user_model, "alice"), owner_client(django_user_model, "bob")
    submit_json(alice, study, "truth", json_rows(final_scores(study)))
    submit_json(bob, study, "random", json_rows(random_scores(study)))

    response = Client().get(f"/api/studies/{study.slug}/leaderboard/", {"metric": "rho_w"})

    assert response.status_code == 200
    body = response.json()
    assert (body["study"], body["metric"], body["weight_offset"], body["top_k"]) == (
        study.slug,
        "rho_w",
        2.0,
        2,
    )
    assert body["replicate_count"] == 1000
    first, second = body["rows"]
    assert (first["name"], first["model_name"], first["owner"], first["value"]) == (
        "truth (alice)",
        "truth",
        "alice",
        1.0,
    )
    assert (first["rank"], first["rank_range"], first["indistinguishable_from"]) == (1, [1, 1], [])
    assert (second["model_name"], second["owner"], second["rank"], second["rank_range"]) == (
        "random",
        "bob",
        2,
        [2, 2],
    )
    assert first["interval"][0] > second["interval"][1]
    assert (first["coverage"], second["coverage"]) == (1.0, 1.0)
    assert set(first["metrics"]) == {"rho_w", "tau_w", "rho", "tau"}


def test_two_nearly_identical_models_are_listed_as_indistinguishable(study, three_models):
    body = Client().get(f"/api/studies/{study.slug}/leaderboard/", {"metric": "rho_w"}).json()

    rows = {row["model_name"]: row for row in body["rows"]}
    assert rows["truth"]["indistinguishable_from"] == ["twin (alice)"]
    assert rows["twin"]["indistinguishable_from"] == ["truth (alice)"]
    assert (rows["truth"]["rank"], rows["twin"]["rank"]) == (1, 1)
    assert (rows["truth"]["rank_range"], rows["twin"]["rank_range"]) == ([1, 2], [1, 2])
    assert (
        rows["random"]["rank"],
        rows["random"]["rank_range"],
        rows["random"]["indistinguishable_from"],
    ) == (
        3,
        [3, 3],
        [],
    )


def test_the_leaderboard_is_what_the_service_computes(study, three_models):
    response = Client().get(f"/api/studies/{study.slug}/leaderboard/", {"metric": "rho", "n0": "5"})

    board = leaderboard_for(study=study, metric="rho", weight_offset=5.0)
    fields = (
        "name",
        "model_name",
        "owner",
        "value",
        "interval",
        "rank",
        "rank_range",
        "indistinguishable_from",
        "coverage",
    )
    assert [{key: row[key] for key in fields} for row in response.json()["rows"]] == [
        {key: row[key] for key in fields} for row in board["rows"]
    ]
    assert response.json()["weight_offset"] == 5.0


def test_the_leaderboard_downloads_as_csv(study, three_models):
    response = Client().get(f"/api/studies/{study.slug}/leaderboard/", {"metric": "rho_w", "format": "csv"})

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert (
        response["Content-Disposition"] == f'attachment; filename="{study.slug}-leaderboard-rho_w-n0-2.csv"'
    )
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    board = leaderboard_for(study=study, metric="rho_w")
    assert [row["model_name"] for row in rows] == [row["model_name"] for row in board["rows"]]
    truth = next(row for row in rows if row["model_name"] == "truth")
    expected = next(row for row in board["rows"] if row["model_name"] == "truth")
    assert truth == {
        "rank": "1",
        "rank_low": "1",
        "rank_high": "2",
        "model_name": "truth",
        "owner": "alice",
        "metric": "rho_w",
        "n0": "2.0",
        "value": "1.0",
        "interval_low": repr(expected["interval"][0]),
        "interval_high": repr(expected["interval"][1]),
        "chance_mean": repr(expected["metrics"]["rho_w"]["chance_mean"]),
        "chance_sd": repr(expected["metrics"]["rho_w"]["chance_sd"]),
        "p_value": repr(expected["metrics"]["rho_w"]["p_value"]),
        "coverage": "1.0",
        "indistinguishable_from": "twin (alice)",
        "submitted_at": expected["submitted_at"],
        "variants": "2",  # alice's two models
        "adjusted_interval_low": repr(expected["interval_adjusted"][0]),
        "adjusted_interval_high": repr(expected["interval_adjusted"][1]),
        "undefined": "",  # why the value is undefined, for a model whose value is
    }


def test_a_leaderboard_without_models_is_empty(study):
    response = Client().get(f"/api/studies/{study.slug}/leaderboard/")

    assert (response.status_code, response.json()["rows"], response.json()["metric"]) == (200, [], "tau_w")


@pytest.mark.parametrize(
    ("query", "detail"),
    [
        ({"metric": "kendall"}, 'metric: "kendall" is not a metric: use one of rho_w, tau_w, rho, tau.'),
        (
            {"n0": "3"},
            "n0: the leaderboard offers n0 = 0, 1, 2, 5, 10, got 3; your own submissions can be evaluated at any "
            "n0 from -0.9 to 1,000,000 at /api/submissions/<id>/evaluation/",
        ),
        ({"n0": "x"}, "n0: A valid number is required."),
    ],
)
def test_bad_leaderboard_settings_are_refused_with_400(study, query, detail):
    response = Client().get(f"/api/studies/{study.slug}/leaderboard/", query)

    assert (response.status_code, response.json()["detail"]) == (400, detail)


def test_the_leaderboard_of_a_running_study_is_refused_with_409():
    running = make_study()

    response = Client().get(f"/api/studies/{running.slug}/leaderboard/")

    assert (response.status_code, response.json()) == (
        409,
        {"detail": f"study '{running.slug}' is running: its leaderboard opens once it has finished"},
    )


# --- annotators ----------------------------------------------------------------------------------


def test_the_per_annotator_view_is_public_and_what_the_service_computes(study, three_models):
    response = Client().get(f"/api/studies/{study.slug}/annotators/")

    assert response.status_code == 200
    assert response.json() == json.loads(json.dumps(annotator_view(study=study)))
    body = response.json()
    assert body["annotators"] == 6
    assert sorted(body["models"]) == ["random (bob)", "truth (alice)", "twin (alice)"]
    assert [len(entry["per_annotator"]) for entry in body["models"].values()] == [6, 6, 6]
    assert [(test["first"], test["second"]) for test in body["paired_tests"]] == [
        ("truth (alice)", "random (bob)"),
        ("truth (alice)", "twin (alice)"),
        ("random (bob)", "twin (alice)"),
    ]


# --- nothing leaks ---------------------------------------------------------------------------------


def test_no_response_contains_the_bootstrap_replicates(study, three_models):
    submission_id = Submission.objects.get(model_name="truth").pk
    url = f"/api/submissions/{submission_id}/"
    created = submit_json(three_models, study, "one more", json_rows(final_scores(study)))

    responses = [
        created,
        three_models.get("/api/submissions/"),
        three_models.get(url),
        three_models.get(url + "evaluation/", {"n0": "1", "k": "3"}),
        Client().get(f"/api/studies/{study.slug}/leaderboard/"),
        Client().get(f"/api/studies/{study.slug}/leaderboard/", {"format": "csv"}),
        Client().get(f"/api/studies/{study.slug}/annotators/"),
    ]

    assert [response.status_code for response in responses] == [201, 200, 200, 200, 200, 200, 200]
    assert ["replicates" in response.content.decode() for response in responses] == [False] * 7
    assert "replicates" in Evaluation.objects.get(submission_id=submission_id, weight_offset=2.0).result


# --- schema --------------------------------------------------------------------------------------


def test_the_schema_documents_the_metrics_endpoints_without_warnings(tmp_path):
    GENERATOR_STATS.reset()
    schema_file = tmp_path / "schema.json"
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", "--file", str(schema_file)
    )
    schema = json.loads(schema_file.read_text())

    operations = {
        (url, method)
        for url, item in schema["paths"].items()
        for method in item
        if url.startswith(("/api/auth/", "/api/submissions/"))
        or url.endswith(("/pairs/", "/submissions/", "/leaderboard/", "/annotators/"))
    }
    assert operations == {
        ("/api/auth/token/", "post"),
        ("/api/studies/{slug}/pairs/", "get"),
        ("/api/studies/{slug}/submissions/", "post"),
        ("/api/studies/{slug}/leaderboard/", "get"),
        ("/api/studies/{slug}/judges/leaderboard/", "get"),
        ("/api/studies/{slug}/annotators/", "get"),
        ("/api/submissions/", "get"),
        ("/api/submissions/{submission_id}/", "get"),
        ("/api/submissions/{submission_id}/evaluation/", "get"),
    }
    upload = schema["paths"]["/api/studies/{slug}/submissions/"]["post"]["requestBody"]["content"]
    assert set(upload) == {"application/json", "multipart/form-data"}
    assert "replicates" not in schema["components"]["schemas"]["Evaluation"]["properties"]
