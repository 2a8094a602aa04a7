"""A researcher's flow through the client: create a study from a tokens CSV, plan it, start it, watch it."""

from __future__ import annotations

import io

from collection.models import Study
from tests.factories import annotators, vote_until

ANIMALS = ["cat", "dog", "horse", "cow", "lion", "tiger", "wolf", "sheep"]
PLAN = {"ballot_count": 3, "keep_fraction": 0.5, "appearances": 4, "votes_per_annotator_per_ballot": None}


def tokens_file(tmp_path):
    path = tmp_path / "tokens.csv"
    path.write_text("token,area\n" + "".join(f"{word},animals\n" for word in ANIMALS))
    return path


def test_a_study_is_created_from_a_tokens_csv_with_its_items_and_plan(connect, server, staff_token, tmp_path):
    client = connect(server, staff_token)

    study = client.create_study("Animals", "animals", tokens=tokens_file(tmp_path), **PLAN)
    plan = client.plan("animals")

    assert (study["slug"], study["name"], study["status"]) == ("animals", "Animals", "draft")
    assert Study.objects.get(slug="animals").tokens.count() == 8
    # 8 tokens: 8·7/2 = 28 items; N(k) = 28, round(0.5·28) = 14, 7 (Eq. 2); M·N(k)/2 comparisons each.
    assert (plan["item_count"], plan["sizes"], plan["comparisons"]) == (28, [28, 14, 7], [56, 28, 14])
    assert plan["total_comparisons"] == 98


def test_a_started_study_is_followed_to_its_end(connect, server, staff_token, tmp_path):
    stream = io.StringIO()
    client = connect(server, staff_token, progress=True, progress_stream=stream)
    client.create_study("Animals", "animals", tokens=tokens_file(tmp_path), **PLAN)

    started = client.start("animals")
    before = client.progress("animals")
    study = Study.objects.get(slug="animals")
    crowd = annotators(study, 5)
    vote_until(study, voters=crowd, max_votes=20)
    during = client.progress("animals")
    vote_until(study, voters=crowd)
    ballots = client.watch("animals", poll_seconds=0.05, timeout=60)

    assert started["status"] == "running"
    assert [(b["number"], b["status"], b["items"], b["comparisons"], b["votes"]) for b in before] == [
        (1, "open", 28, 56, 0)
    ]
    assert [(b["number"], b["votes"], b["percent"]) for b in during] == [
        (1, 20, 35)
    ]  # 20 / 56 = 35.7%, floored
    assert [(b["number"], b["status"], b["items"], b["votes"]) for b in ballots] == [
        (1, "closed", 28, 56),
        (2, "closed", 14, 28),
        (3, "closed", 7, 14),
    ]
    assert client.study("animals")["status"] == "finished"
    bar = stream.getvalue()
    assert (
        "study animals [##############################] 100%  ballot 3 of 3 (closed): 14 of 14 votes" in bar
    )
    assert bar.endswith("\n")
    ranking = client.results("animals")
    assert [row["rank"] for row in ranking] == list(range(1, 29))


def test_a_study_can_be_listed_changed_and_its_ballot_closed(connect, server, staff_token, tmp_path):
    client = connect(server, staff_token)
    client.create_study("Animals", "animals", tokens=tokens_file(tmp_path), **PLAN)

    changed = client.update_study("animals", question="Which two animals are more alike?")
    client.start("animals")
    closing = client.close_ballot("animals")

    assert changed["question"] == "Which two animals are more alike?"
    assert [study["slug"] for study in client.studies()] == ["animals"]
    assert closing["ballot"] == 1


def test_many_items_are_made_by_a_job_that_the_client_follows(
    connect, server, staff_token, tmp_path, monkeypatch
):
    monkeypatch.setattr("collection.limits.SYNC_GENERATION_ITEMS", 10)  # 28 items: a job, as 100,000 would be
    stream = io.StringIO()
    client = connect(server, staff_token, progress=True, progress_stream=stream)

    study = client.create_study("Animals", "animals", tokens=tokens_file(tmp_path), **PLAN)

    assert Study.objects.get(slug="animals").items.count() == 28
    assert study["slug"] == "animals"
    job = Study.objects.get(slug="animals").jobs.get()
    assert (job.kind, job.status) == ("items_generate", "done")
    assert stream.getvalue().endswith("items_generate [##############################] 100%  done\x1b[K\n")
