"""The judges' API end to end on a finished study: the pairs to decide, a judge submitted as JSON, CSV or
JSONL, its evaluation at the defaults and at another n0 and K, and each refusal with its message and
nothing stored."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from django.test import Client

from metrics.figures import judge_decisions
from metrics.judges import judge_pairs
from metrics.leaderboard import LEADERBOARD_WEIGHT_OFFSETS
from metrics.models import Evaluation, Kind, Standing, Submission
from metrics.services import submission_standings
from tests.factories import make_study
from tests.metrics.judge_helpers import (
    csv_bytes,
    jsonl_bytes,
    post_judge_file,
    post_judge_json,
    reference_rows,
)
from tests.metrics.test_api import owner_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(django_user_model) -> Client:
    return owner_client(django_user_model)


def test_the_pairs_listing_pages_through_every_pair_with_both_items_and_their_tokens(study, owner):
    pairs = judge_pairs(study=study)
    first = owner.get(f"/api/studies/{study.slug}/judge-pairs/?limit=5")
    assert first.status_code == 200
    body = first.json()
    assert body["count"] == pairs.count
    assert [row["pair"] for row in body["results"]] == [1, 2, 3, 4, 5]
    tokens = {pk: (a, b) for pk, a, b in study.items.values_list("pk", "token_a__text", "token_b__text")}
    row = body["results"][0]
    assert row == {
        "pair": 1,
        "left_item": int(pairs.left_id[0]),
        "left_token_a": tokens[int(pairs.left_id[0])][0],
        "left_token_b": tokens[int(pairs.left_id[0])][1],
        "right_item": int(pairs.right_id[0]),
        "right_token_a": tokens[int(pairs.right_id[0])][0],
        "right_token_b": tokens[int(pairs.right_id[0])][1],
    }
    last = owner.get(f"/api/studies/{study.slug}/judge-pairs/?limit=5&offset={pairs.count - 1}").json()
    assert [row["pair"] for row in last["results"]] == [pairs.count]


def test_the_pairs_csv_lists_every_pair_in_order(study, django_user_model):
    pages = Client()
    pages.force_login(django_user_model.objects.create_user("reader"))
    response = pages.get(f"/models/studies/{study.slug}/judge-pairs.csv")
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    pairs = judge_pairs(study=study)
    assert [int(row["pair"]) for row in rows] == list(range(1, pairs.count + 1))
    assert [int(row["left_item"]) for row in rows] == pairs.left_id.tolist()
    assert [int(row["right_item"]) for row in rows] == pairs.right_id.tolist()


def test_a_json_judge_is_stored_evaluated_and_answered_201(study, owner):
    rows = reference_rows(study)
    response = post_judge_json(owner, study, "copy of the ranking", rows, description="decides by ȳ")
    assert response.status_code == 201, response.content
    judge = Submission.objects.get(kind=Kind.JUDGE, model_name="copy of the ranking")
    assert response.json() == {
        "id": judge.pk,
        "judge_name": "copy of the ranking",
        "decided": len(rows),
        "coverage": 1.0,
        "status": "done",
        "progress": 100,
        "url": f"/api/judges/{judge.pk}/",
    }
    assert judge.scores is None and judge.source_format == "json"
    expected = np.array([1.0 if row["decision"] == "left" else 0.0 for row in rows])
    np.testing.assert_array_equal(judge_decisions(judge), expected)


@pytest.mark.parametrize(("encode", "source_format"), [(csv_bytes, "csv"), (jsonl_bytes, "jsonl")])
def test_a_file_judge_is_read_as_csv_or_jsonl_by_its_content(study, owner, encode, source_format):
    rows = reference_rows(study)[::2]  # half the pairs: the study needs half
    response = post_judge_file(owner, study, f"as {source_format}", encode(rows), name="judge.txt")
    assert response.status_code == 201, response.content
    judge = Submission.objects.get(pk=response.json()["id"])
    assert (judge.source_format, judge.covered) == (source_format, len(rows))
    assert np.isnan(judge_decisions(judge)[1])  # pair 2 was left out


def test_the_judges_page_of_the_api_gives_its_evaluation_at_the_defaults(study, owner):
    created = post_judge_json(owner, study, "judge", reference_rows(study)).json()
    detail = owner.get(created["url"])
    assert detail.status_code == 200
    body = detail.json()
    assert (body["judge_name"], body["status"], body["progress"], body["error"]) == ("judge", "done", 100, "")
    evaluation = body["evaluation"]
    assert evaluation["part"] == "all"
    assert evaluation["pairs"] == judge_pairs(study=study).count
    assert {"agreement", "ranking", "disagreement", "verdict"} <= set(evaluation)
    assert "replicates" not in evaluation["ranking"]  # kept for the leaderboard, not shown
    assert body["test_part"] is None
    stored = Evaluation.objects.get(submission_id=created["id"], weight_offset=2.0)
    assert evaluation["verdict"] == stored.result["verdict"]


def test_another_n0_and_k_are_evaluated_once_and_stored(study, owner):
    created = post_judge_json(owner, study, "judge", reference_rows(study)).json()
    url = f"/api/judges/{created['id']}/evaluation/?n0=0&k=3"
    first = owner.get(url)
    assert first.status_code == 200, first.content
    assert (first.json()["ranking"]["weight_offset"], first.json()["ranking"]["top_k"]) == (0.0, 3)
    assert owner.get(url).json() == first.json()
    assert Evaluation.objects.filter(submission_id=created["id"], weight_offset=0.0, top_k=3).count() == 1
    refused = owner.get(f"/api/judges/{created['id']}/evaluation/?n0=-5")
    assert refused.status_code == 400


def test_the_standings_are_stored_at_every_n0_of_the_leaderboard_from_the_judges_ranking(study, owner):
    created = post_judge_json(owner, study, "judge", reference_rows(study)).json()
    submission_standings(submission_id=created["id"])
    standings = Standing.objects.filter(submission_id=created["id"])
    assert sorted(standings.values_list("weight_offset", flat=True)) == list(LEADERBOARD_WEIGHT_OFFSETS)
    default = Evaluation.objects.get(submission_id=created["id"], weight_offset=2.0).result
    stored = standings.get(weight_offset=2.0)
    assert stored.coefficients["rho_w"] == default["ranking"]["rho_w"]


def test_the_owner_lists_their_judges_only(study, owner, django_user_model):
    mine = post_judge_json(owner, study, "mine", reference_rows(study)).json()
    other = owner_client(django_user_model, "other")
    post_judge_json(other, study, "theirs", reference_rows(study))
    listed = owner.get("/api/judges/").json()
    assert [row["id"] for row in listed["results"]] == [mine["id"]]
    assert other.get(f"/api/judges/{mine['id']}/").status_code == 404
    assert other.get(f"/api/judges/{mine['id']}/evaluation/").status_code == 404


def test_a_tie_in_a_study_without_ties_is_refused_by_its_rows_and_nothing_is_stored(study, owner):
    assert not study.allow_ties
    rows = reference_rows(study)
    rows[2]["decision"] = "tie"
    rows[4]["decision"] = "TIE"
    response = post_judge_json(owner, study, "undecided", rows)
    assert response.status_code == 400
    assert response.json() == {
        "detail": "the judge has 2 problems; nothing was stored",
        "errors": [
            "decisions[2], pair 3: this study does not allow ties: decide left or right",
            "decisions[4], pair 5: this study does not allow ties: decide left or right",
        ],
    }
    assert not Submission.objects.filter(kind=Kind.JUDGE).exists()


def test_too_few_decisions_are_refused_with_the_studys_minimum(study, owner):
    pair_count = judge_pairs(study=study).count
    rows = reference_rows(study)[:3]
    response = post_judge_json(owner, study, "lazy", rows)
    assert response.status_code == 400
    assert response.json()["detail"] == (
        f"the judge decides 3 of {pair_count} pairs ({3 / pair_count:.1%}); this study needs at least 50% of its "
        "pairs decided"
    )
    assert not Submission.objects.exists()


def test_a_study_that_has_not_finished_has_no_pairs_and_takes_no_judge(owner):
    running = make_study(tokens=5)
    listing = owner.get(f"/api/studies/{running.slug}/judge-pairs/")
    assert listing.status_code == 409
    assert listing.json()["detail"] == (
        f"study {running.slug!r} is running: its pairs are open for judges once it has finished"
    )
    refused = post_judge_json(owner, running, "early", [{"pair": 1, "decision": "left"}])
    assert refused.status_code == 409


def test_a_name_taken_by_a_model_is_refused_for_a_judge(study, owner):
    scores = [
        {"item": pk, "score": float(score)} for pk, score in study.items.values_list("pk", "final_score")
    ]
    model = owner.post(
        f"/api/studies/{study.slug}/submissions/",
        json.dumps({"model_name": "shared", "scores": scores}),
        content_type="application/json",
    )
    assert model.status_code == 201
    refused = post_judge_json(owner, study, "shared", reference_rows(study))
    assert refused.status_code == 409
    assert refused.json()["detail"] == (
        "you already submitted a model named 'shared' for this study (models and judges share your names); "
        "submissions are never replaced, so choose another name"
    )


def test_anonymous_requests_are_told_to_log_in(study):
    anonymous = Client()
    for url in (f"/api/studies/{study.slug}/judge-pairs/", "/api/judges/"):
        assert anonymous.get(url).status_code == 401
    assert post_judge_json(anonymous, study, "x", []).status_code == 401


def test_the_schema_documents_the_judges_endpoints(tmp_path):
    from django.core.management import call_command

    schema_file = tmp_path / "schema.json"
    call_command(
        "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", "--file", str(schema_file)
    )
    paths = json.loads(schema_file.read_text())["paths"]
    judges = {(url, method) for url, item in paths.items() for method in item if "judge" in url}
    assert judges == {
        ("/api/studies/{slug}/judge-pairs/", "get"),
        ("/api/studies/{slug}/judges/", "post"),
        ("/api/studies/{slug}/judges/leaderboard/", "get"),
        ("/api/judges/", "get"),
        ("/api/judges/{judge_id}/", "get"),
        ("/api/judges/{judge_id}/evaluation/", "get"),
    }
    upload = paths["/api/studies/{slug}/judges/"]["post"]["requestBody"]["content"]
    assert set(upload) == {"application/json", "multipart/form-data"}


def test_no_judge_answer_contains_the_bootstrap_replicates(study, owner):
    created = post_judge_json(owner, study, "judge", reference_rows(study))
    responses = [
        created,
        owner.get("/api/judges/"),
        owner.get(created.json()["url"]),
        owner.get(created.json()["url"] + "evaluation/?n0=1&k=3"),
        Client().get(f"/api/studies/{study.slug}/judges/leaderboard/"),
        Client().get(f"/api/studies/{study.slug}/judges/leaderboard/?format=csv"),
    ]
    assert [response.status_code for response in responses] == [201, 200, 200, 200, 200, 200]
    assert ['"replicates"' in response.content.decode() for response in responses] == [False] * 6
