"""A judge through the client and the command line, against a live server: the pairs, decisions from a
dict, a list, a CSV and a JSONL file, the evaluation, the judges' leaderboard, and refusals.

The fixture's crowd always chooses the item of lower index, so a judge that does the same agrees with
every vote, and one that does the opposite with none."""

from __future__ import annotations

import io
import json

import pytest
from yardstick_client import ApiError, decision_rows
from yardstick_client.cli import main

from collection.models import Item, Vote
from metrics.models import Submission


def crowd_pairs(study) -> set[tuple[int, int]]:
    """The distinct pairs of item ids the crowd voted on, lower index first."""
    by_index = dict(Item.objects.filter(study=study).values_list("index", "id"))
    return {
        (by_index[low], by_index[high])
        for low, high in Vote.objects.filter(ballot__study=study).values_list("pair_low", "pair_high")
    }


def like_the_crowd(pairs: list[dict], study) -> dict[int, str]:
    """The side of the item of lower index on every pair: what the fixture's crowd chose."""
    index = dict(Item.objects.filter(study=study).values_list("id", "index"))
    return {
        pair["pair"]: "left" if index[pair["left_item"]] < index[pair["right_item"]] else "right"
        for pair in pairs
    }


def against_the_crowd(pairs: list[dict], study) -> dict[int, str]:
    opposite = {"left": "right", "right": "left"}
    return {number: opposite[side] for number, side in like_the_crowd(pairs, study).items()}


def test_the_pairs_are_every_pair_the_crowd_compared_once_each(connect, server, owner_token, finished_study):
    pairs = connect(server, owner_token).judge_pairs(finished_study.slug)

    index = dict(Item.objects.filter(study=finished_study).values_list("id", "index"))
    listed = {tuple(sorted((pair["left_item"], pair["right_item"]), key=index.get)) for pair in pairs}
    assert [pair["pair"] for pair in pairs] == list(range(1, len(pairs) + 1))
    assert len(listed) == len(pairs)
    assert listed == crowd_pairs(finished_study)


def test_a_judge_that_decides_as_the_crowd_agrees_with_every_vote(
    connect, server, owner_token, finished_study
):
    client = connect(server, owner_token)
    pairs = client.judge_pairs(finished_study.slug)

    judge = client.submit_judge(finished_study.slug, "lower-index", like_the_crowd(pairs, finished_study))

    evaluation = judge["evaluation"]
    assert (judge["status"], judge["decided"], judge["coverage"]) == ("done", len(pairs), 1.0)
    assert evaluation["agreement"]["single"]["value"] == 1.0
    assert (
        evaluation["agreement"]["single"]["votes"]
        == Vote.objects.filter(ballot__study=finished_study).count()
    )
    assert evaluation["ranking"]["rho"]["value"] == pytest.approx(1.0)  # the crowd's very outcomes
    assert evaluation["verdict"]["sentence"]


def test_a_judge_against_the_crowd_agrees_with_no_vote(connect, server, owner_token, finished_study):
    client = connect(server, owner_token)
    pairs = client.judge_pairs(finished_study.slug)

    judge = client.submit_judge(finished_study.slug, "higher-index", against_the_crowd(pairs, finished_study))

    assert judge["evaluation"]["agreement"]["single"]["value"] == 0.0
    # Not exactly -1: the crowd's ballots, which the judge's scores keep, were drawn for the crowd's survivors.
    assert judge["evaluation"]["ranking"]["rho"]["value"] < 0


def test_a_list_follows_the_pairs_and_none_leaves_a_pair_undecided(
    connect, server, owner_token, finished_study
):
    client = connect(server, owner_token)
    pairs = client.judge_pairs(finished_study.slug)
    decisions = [None if pair["pair"] == 1 else "left" for pair in pairs]

    judge = client.submit_judge(finished_study.slug, "all-left", decisions, pairs=pairs, wait=False)

    stored = Submission.objects.get(pk=judge["id"])
    assert (stored.kind, stored.decisions) == ("judge", [None] + [1] * (len(pairs) - 1))
    assert judge["decided"] == len(pairs) - 1


def test_decisions_from_a_csv_and_a_jsonl_file(connect, server, owner_token, finished_study, tmp_path):
    client = connect(server, owner_token)
    pairs = client.judge_pairs(finished_study.slug)
    sides = like_the_crowd(pairs, finished_study)
    csv_file = tmp_path / "judge.csv"
    csv_file.write_text("pair,decision\n" + "".join(f"{pair},{side}\n" for pair, side in sides.items()))
    jsonl = "".join(json.dumps({"pair": pair, "decision": side}) + "\n" for pair, side in sides.items())

    from_csv = client.submit_judge(finished_study.slug, "from-csv", file=csv_file, wait=False)
    from_jsonl = client.submit_judge(
        finished_study.slug, "from-jsonl", file=io.BytesIO(jsonl.encode()), wait=False
    )

    expected = [1 if sides[number] == "left" else 0 for number in range(1, len(pairs) + 1)]
    assert Submission.objects.get(pk=from_csv["id"]).decisions == expected
    assert Submission.objects.get(pk=from_jsonl["id"]).decisions == expected


def test_a_tie_in_a_study_without_ties_is_refused_with_the_servers_reason(
    connect, server, owner_token, finished_study
):
    client = connect(server, owner_token)
    pairs = client.judge_pairs(finished_study.slug)

    with pytest.raises(ApiError) as refusal:
        client.submit_judge(finished_study.slug, "undecided", {pair["pair"]: "tie" for pair in pairs})

    assert refusal.value.status == 400
    assert "ties" in str(refusal.value)
    assert not Submission.objects.filter(model_name="undecided").exists()


def test_decision_rows_say_what_is_wrong_before_sending():
    pairs = [{"pair": 1}, {"pair": 2}]

    assert decision_rows({2: "Left", 1: "tie"}) == [
        {"pair": 2, "decision": "left"},
        {"pair": 1, "decision": "tie"},
    ]
    assert decision_rows(["right", None], pairs) == [{"pair": 1, "decision": "right"}]
    with pytest.raises(ValueError, match="1 decisions for 2 pairs"):
        decision_rows(["left"], pairs)
    with pytest.raises(ValueError, match="pair 2: a decision is left, right or tie, not 'up'"):
        decision_rows({2: "up"})
    with pytest.raises(TypeError, match="needs the pairs"):
        decision_rows(["left", "right"])


def test_another_n0_and_the_judges_leaderboard(connect, server, owner_token, finished_study):
    client = connect(server, owner_token)
    pairs = client.judge_pairs(finished_study.slug)
    judge = client.submit_judge(finished_study.slug, "lower-index", like_the_crowd(pairs, finished_study))

    at_n0_1 = client.judge_evaluation(judge["id"], n0=1)
    board = client.judge_leaderboard(finished_study.slug, metric="rho_w")

    assert at_n0_1["ranking"]["weight_offset"] == 1
    assert [(row["judge_name"], row["owner"]) for row in board["rows"]] == [("lower-index", "ann")]
    assert board["rows"][0]["value"] == judge["evaluation"]["ranking"]["rho_w"]["value"]


def yardstick(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_the_command_line_lists_submits_and_ranks_judges(
    connect, server, owner_token, finished_study, tmp_path, monkeypatch
):
    monkeypatch.setenv("YARDSTICK_URL", server)
    monkeypatch.setenv("YARDSTICK_TOKEN", owner_token)
    status, listing, _ = yardstick("judge", "pairs", finished_study.slug)
    rows = listing.splitlines()
    decisions = tmp_path / "judge.csv"
    decisions.write_text("pair,decision\n" + "".join(f"{row.split(',')[0]},left\n" for row in rows[1:]))

    submitted = yardstick("--quiet", "judge", "submit", finished_study.slug, "all-left", str(decisions))
    board = yardstick("judge", "leaderboard", finished_study.slug)
    refused = yardstick("judge", "submit", finished_study.slug, "all-left", str(decisions))

    judge = Submission.objects.get(model_name="all-left")
    assert status == 0
    assert rows[0] == "pair,left_item,left_token_a,left_token_b,right_item,right_token_a,right_token_b"
    assert len(rows) - 1 == len(crowd_pairs(finished_study))
    assert submitted[0] == 0
    assert submitted[1].splitlines()[0] == (
        f"Judge {judge.pk}, 'all-left' on '{finished_study.slug}': {len(rows) - 1} of {len(rows) - 1} pairs decided"
    )
    assert (
        submitted[1].splitlines()[1]
        == connect(server, owner_token).judge(judge.pk)["evaluation"]["verdict"]["sentence"]
    )
    assert board[0] == 0 and "all-left (ann)" in board[1]
    assert refused[0] == 1 and "all-left" in refused[2]
