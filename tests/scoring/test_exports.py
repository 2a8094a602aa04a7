"""Exports of a study: the dataset as CSV and JSON, the raw votes as CSV; staff only."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.http import StreamingHttpResponse
from django.urls import reverse

from collection.models import Study, Vote
from scoring.score_models import BORDA, SCORE_MODELS
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

pytestmark = pytest.mark.django_db

EXPORTS = ("scoring:export-dataset-csv", "scoring:export-dataset-json", "scoring:export-votes-csv")
MODELS_IN_ORDER = (BORDA, *(model for model in SCORE_MODELS if model != BORDA))
DATASET_COLUMNS = [
    "item_id",
    "index",
    "token_a",
    "token_b",
    "area",
    "final_score",
    "final_rank",
    "area_rank",
    "last_ballot",
    "appearances",
    "wins",
    "ties",
    "x_1",
    "x_2",
    "x_3",
    # Every score model's score and rank, the study's own (rescaled Borda by default) first.
    *(f"{kind}_{model}" for model in MODELS_IN_ORDER for kind in ("score", "rank")),
]
VOTE_COLUMNS = [
    "vote_id",
    "ballot",
    "comparison_position",
    "annotator_id",
    "annotator",
    "simulated",
    "left_item_id",
    "left_token_a",
    "left_token_b",
    "left_area",
    "right_item_id",
    "right_token_a",
    "right_token_b",
    "right_area",
    "same_area",
    "choice",
    "chosen_item_id",
    "response_ms",
    "client_response_ms",
    "created_at",
    "prolific_study_id",
    "prolific_session_id",
    "mturk_hit_id",
    "mturk_assignment_id",
    "mturk_submit_to",
    "code_completed",
    "code_no_work",
    "code_screened_out",
]


@pytest.fixture
def finished_study():
    study = make_study(seed=1)
    vote_until(study, voters=annotators(study, 6))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


@pytest.fixture
def staff_client(client, django_user_model):
    client.force_login(
        django_user_model.objects.create_user(username="researcher", password="x", is_staff=True)
    )
    return client


def download(client, name: str, study: Study):
    response = client.get(reverse(name, args=[study.slug]))
    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    return response, b"".join(response.streaming_content).decode("utf-8")


@pytest.mark.parametrize("name", EXPORTS)
@pytest.mark.parametrize("user", [None, "member"])
def test_exports_send_anyone_but_staff_to_the_admin_login(client, django_user_model, name, user):
    study = make_study(start=False)
    if user:
        client.force_login(django_user_model.objects.create_user(username=user, password="x"))
    url = reverse(name, args=[study.slug])
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('admin:login')}?next={url}"


def test_the_dataset_csv_has_one_row_per_item_with_the_expected_columns(staff_client, finished_study):
    response, text = download(staff_client, "scoring:export-dataset-csv", finished_study)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{finished_study.slug}-dataset.csv"'
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    assert reader.fieldnames == DATASET_COLUMNS
    assert [int(row["index"]) for row in rows] == list(range(15))
    items = {item.pk: item for item in finished_study.items.select_related("token_a", "token_b", "area")}
    for row in rows:
        item = items[int(row["item_id"])]
        assert (row["token_a"], row["token_b"], row["area"]) == (
            item.token_a.text,
            item.token_b.text,
            item.area.name,
        )
        assert float(row["final_score"]) == item.final_score  # full precision: repr round-trips
        assert int(row["final_rank"]) == item.final_rank
        assert int(row["area_rank"]) == item.final_rank  # one area: the rank within it is the rank
        assert int(row["last_ballot"]) == item.last_ballot
        assert int(row["appearances"]) == 4 * item.last_ballot
        filled = [row[f"x_{k}"] != "" for k in (1, 2, 3)]
        assert filled == [k <= item.last_ballot for k in (1, 2, 3)]
    assert sum(int(row["wins"]) for row in rows) == 54
    assert rows[0]["x_1"] == rows[0]["x_2"] == rows[0]["x_3"] == "1.0"  # item 0 beats everyone


def test_the_dataset_json_holds_the_study_and_one_object_per_item(staff_client, finished_study):
    response, text = download(staff_client, "scoring:export-dataset-json", finished_study)
    assert response["Content-Disposition"] == f'attachment; filename="{finished_study.slug}-dataset.json"'
    data = json.loads(text)
    study = data["study"]
    assert (study["name"], study["slug"], study["status"]) == (
        finished_study.name,
        finished_study.slug,
        "finished",
    )
    assert study["plan"]["ballot_sizes"] == [15, 8, 4]
    assert study["plan"]["total_comparisons"] == 54
    assert (study["plan"]["ballot_count"], study["plan"]["keep_fraction"], study["plan"]["appearances"]) == (
        3,
        0.5,
        4,
    )
    assert study["finished_at"] == finished_study.finished_at.isoformat()
    assert [ballot["votes"] for ballot in study["ballots"]] == [30, 16, 8]
    assert study["ballots"][0]["rescale_slope"] is None
    assert study["ballots"][1]["rescale_slope"] == finished_study.ballots.get(number=2).rescale_slope
    assert (study["annotators"], study["votes"]) == (6, 54)
    assert study["crowd"] == {
        "people": {"annotators": 6, "votes": 54},
        "simulated": {"annotators": 0, "votes": 0},
    }
    assert len(data["items"]) == 15
    first = data["items"][0]
    assert set(first) == {
        "item_id",
        "index",
        "token_a",
        "token_b",
        "area",
        "final_score",
        "final_rank",
        "area_rank",
        "last_ballot",
        "appearances",
        "wins",
        "ties",
        "win_ratio",
        *(f"{kind}_{model}" for model in MODELS_IN_ORDER for kind in ("score", "rank")),
    }
    assert (first["index"], first["final_rank"], first["win_ratio"]) == (0, 1, [1.0, 1.0, 1.0])
    last_ballot_one = [item for item in data["items"] if item["last_ballot"] == 1]
    assert all(item["win_ratio"][1:] == [None, None] for item in last_ballot_one)


def test_the_dataset_of_a_draft_lists_its_items_with_nothing_measured(staff_client):
    study = make_study(start=False)
    _, text = download(staff_client, "scoring:export-dataset-json", study)
    data = json.loads(text)
    assert data["study"]["status"] == "draft"
    assert data["study"]["ballots"] == []
    assert len(data["items"]) == 15
    assert data["items"][0]["final_score"] is None
    _, text = download(staff_client, "scoring:export-dataset-csv", study)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 15
    assert (rows[0]["final_score"], rows[0]["x_1"], rows[0]["appearances"]) == ("", "", "0")


def test_the_votes_csv_has_one_row_per_vote(staff_client, finished_study):
    response, text = download(staff_client, "scoring:export-votes-csv", finished_study)
    assert response["Content-Disposition"] == f'attachment; filename="{finished_study.slug}-votes.csv"'
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    assert reader.fieldnames == VOTE_COLUMNS
    votes = Vote.objects.filter(ballot__study=finished_study).select_related(
        "ballot",
        "comparison",
        "annotator",
        "left_item__token_a",
        "left_item__token_b",
        "left_item__area",
        "right_item__token_a",
        "right_item__token_b",
        "right_item__area",
    )
    assert [int(row["vote_id"]) for row in rows] == sorted(vote.pk for vote in votes)
    by_id = {vote.pk: vote for vote in votes}
    for row in rows:
        vote = by_id[int(row["vote_id"])]
        chosen = vote.left_item if vote.choice == "left" else vote.right_item
        assert row == {
            "vote_id": str(vote.pk),
            "ballot": str(vote.ballot.number),
            "comparison_position": str(vote.comparison.position),
            "annotator_id": str(vote.annotator_id),
            "annotator": str(vote.annotator),
            "simulated": "0",
            "left_item_id": str(vote.left_item_id),
            "left_token_a": vote.left_item.token_a.text,
            "left_token_b": vote.left_item.token_b.text,
            "left_area": vote.left_item.area.name,
            "right_item_id": str(vote.right_item_id),
            "right_token_a": vote.right_item.token_a.text,
            "right_token_b": vote.right_item.token_b.text,
            "right_area": vote.right_item.area.name,
            "same_area": "1" if vote.left_item.area_id == vote.right_item.area_id else "0",
            "choice": vote.choice,
            "chosen_item_id": str(chosen.pk),
            "response_ms": str(vote.response_ms),
            "client_response_ms": "",
            "created_at": vote.created_at.isoformat(),
            **dict.fromkeys(VOTE_COLUMNS[-8:], ""),  # no platform parameters, no codes per participant
        }
    assert [row["ballot"] for row in rows].count("3") == 8


def test_tokens_with_commas_quotes_and_accents_survive_the_csv(staff_client, finished_study):
    item = finished_study.items.select_related("token_a").get(index=0)
    item.token_a.text = 'café, "latte"'
    item.token_a.save()
    _, text = download(staff_client, "scoring:export-dataset-csv", finished_study)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [row["token_a"] for row in rows if row["index"] == "0"] == ['café, "latte"']
    _, text = download(staff_client, "scoring:export-votes-csv", finished_study)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert any('café, "latte"' in (row["left_token_a"], row["right_token_a"]) for row in rows)


def read_csv(client, name: str, study: Study) -> list[dict]:
    return list(csv.DictReader(io.StringIO(download(client, name, study)[1])))


def test_simulated_annotators_votes_are_marked_in_every_export(staff_client):
    from collection.models import Annotator

    study = make_study(seed=1)
    people = annotators(study, 2, prefix="prolific-")
    machines = [
        Annotator.objects.create(
            study=study, participant_id=f"sim-{i}", simulated=True, consented_at=study.started_at
        )
        for i in range(4)
    ]
    vote_until(study, voters=people + machines, choose=disagreeing_crowd(study))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    human_votes = Vote.objects.filter(ballot__study=study, annotator__in=people).count()
    votes = read_csv(staff_client, "scoring:export-votes-csv", study)
    assert len(votes) == 54
    assert sum(row["simulated"] == "0" for row in votes) == human_votes
    assert {row["annotator"] for row in votes if row["simulated"] == "1"} == {
        f"participant sim-{i}" for i in range(4)
    }
    listed = read_csv(staff_client, "scoring:export-annotators-csv", study)
    assert {row["participant_id"]: row["simulated"] for row in listed} == {
        "prolific-0": "0",
        "prolific-1": "0",
        **{f"sim-{i}": "1" for i in range(4)},
    }
    header = json.loads(download(staff_client, "scoring:export-dataset-json", study)[1])["study"]
    assert header["crowd"] == {
        "people": {"annotators": 2, "votes": human_votes},
        "simulated": {"annotators": 4, "votes": 54 - human_votes},
    }
    assert {person["participant_id"]: person["simulated"] for person in header["participants"]} == {
        "prolific-0": False,
        "prolific-1": False,
        **{f"sim-{i}": True for i in range(4)},
    }


def test_an_excluded_annotator_whose_votes_were_set_aside_is_in_annotators_csv_with_reason_and_codes(
    staff_client, django_user_model
):
    from collection.crowd import participant_code
    from collection.exclusion import annotator_exclude, annotator_readmit
    from collection.models import Annotator

    study = make_study(participant_codes=True)
    crowd = annotators(study, 4, prefix="prolific-")
    Annotator.objects.filter(pk=crowd[3].pk).update(
        prolific_study_id="STUDY-1", prolific_session_id="SESSION-3"
    )
    assert (
        vote_until(study, voters=crowd, choose=disagreeing_crowd(study), max_votes=12) == 12
    )  # ballot 1 of 30
    researcher = django_user_model.objects.get(username="researcher")
    # Both lose their 3 votes of the open ballot; the second is readmitted, and votes no more.
    annotator_exclude(annotator=crowd[3], reason="answers in 300 ms, whatever the pair", by=researcher)
    annotator_exclude(annotator=crowd[2], reason="failed 2 checks", rule="failed_checks")
    annotator_readmit(annotator=crowd[2], by=researcher, reason="the checks were ambiguous")
    assert Vote.objects.filter(annotator__in=crowd[2:]).count() == 0
    rows = {
        row["participant_id"]: row for row in read_csv(staff_client, "scoring:export-annotators-csv", study)
    }
    assert list(rows) == ["prolific-0", "prolific-1", "prolific-2", "prolific-3"]
    excluded = rows["prolific-3"]
    assert {key: excluded[key] for key in EXCLUSION_CELLS} == {
        "votes": "0",
        "simulated": "0",
        "excluded": "1",
        "excluded_by": "researcher",
        "exclusion_reason": "answers in 300 ms, whatever the pair",
        "votes_set_aside": "3",
        "prolific_study_id": "STUDY-1",
        "prolific_session_id": "SESSION-3",
        "code_completed": participant_code(study=study, annotator_id=crowd[3].pk, outcome="completed"),
        "code_screened_out": participant_code(study=study, annotator_id=crowd[3].pk, outcome="screened_out"),
    }
    assert excluded["excluded_at"] == crowd[3].exclusions.get().excluded_at.isoformat()
    readmitted = rows["prolific-2"]
    assert {
        key: readmitted[key]
        for key in ("votes", "excluded", "excluded_by", "exclusion_reason", "votes_set_aside")
    } == {
        "votes": "0",
        "excluded": "0",
        "excluded_by": "",
        "exclusion_reason": "",
        "votes_set_aside": "3",
    }
    assert [rows[f"prolific-{i}"]["excluded"] for i in range(2)] == ["0", "0"]
    assert [rows[f"prolific-{i}"]["votes"] for i in range(2)] == ["3", "3"]


EXCLUSION_CELLS = (
    "votes",
    "simulated",
    "excluded",
    "excluded_by",
    "exclusion_reason",
    "votes_set_aside",
    "prolific_study_id",
    "prolific_session_id",
    "code_completed",
    "code_screened_out",
)


def test_checks_csv_marks_the_answers_of_simulated_annotators(staff_client):
    from collection.checks import check_create
    from collection.models import Annotator
    from collection.voting import comparison_next_for, vote_record

    study = make_study(check_rate=0.2)
    items = list(study.items.order_by("index"))
    check_create(study=study, kind="gold", left_item=items[0], right_item=items[14], expected="left")
    (person,) = annotators(study, 1, prefix="prolific-")
    machine = Annotator.objects.create(
        study=study, participant_id="sim-0", simulated=True, consented_at=study.started_at
    )
    for annotator, choice in ((person, "left"), (machine, "right")):
        served = comparison_next_for(annotator=annotator, check_due=True).assignment
        vote_record(annotator=annotator, assignment_id=served.pk, choice=choice)
    rows = read_csv(staff_client, "scoring:export-checks-csv", study)
    assert [(row["annotator"], row["simulated"], row["correct"]) for row in rows] == [
        ("participant prolific-0", "0", "True"),
        ("participant sim-0", "1", "False"),
    ]
