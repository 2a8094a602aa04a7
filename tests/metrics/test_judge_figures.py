"""A judge of a finished study: its pairs, and its evaluation against the crowd (``metrics.judges``).

The pairs are checked against the votes read back row by row; the evaluation's figures against judges
built to behave in known ways: one that copies the crowd's majority, one at random, one always "left",
one that reverses the crowd's top. A study that keeps a hidden test part shows that nothing of its test
items reaches the development part's evaluation.
"""

from __future__ import annotations

import pytest

from collection.models import Item, Study, Vote
from common.errors import StudyStateError
from metrics.judges import judge_pairs
from tests.factories import make_study

pytestmark = pytest.mark.django_db


def test_judge_pairs_are_the_distinct_pairs_of_the_counted_votes_in_order_each_shown_as_its_first_vote(study):
    pairs = judge_pairs(study=study)
    votes = list(
        Vote.objects.filter(ballot__study=study, ballot__status="closed")
        .order_by("ballot__number", "pk")
        .values_list("left_item__index", "right_item__index")
    )
    first_shown = {}
    for left, right in votes:
        first_shown.setdefault((min(left, right), max(left, right)), (left, right))
    expected = sorted(first_shown)
    assert pairs.count == len(expected)
    shown = list(zip(pairs.left.tolist(), pairs.right.tolist(), strict=True))
    assert sorted((min(pair), max(pair)) for pair in shown) == expected
    assert [(min(pair), max(pair)) for pair in shown] == expected
    assert shown == [first_shown[key] for key in expected]
    ids = dict(Item.objects.filter(study=study).values_list("index", "pk"))
    assert pairs.left_id.tolist() == [ids[index] for index in pairs.left.tolist()]
    assert pairs.right_id.tolist() == [ids[index] for index in pairs.right.tolist()]


def test_judge_pair_rows_carry_the_items_and_their_tokens(study):
    pairs = judge_pairs(study=study)
    rows = pairs.rows(2, 5)
    assert [row["pair"] for row in rows] == [3, 4, 5]
    item = Item.objects.select_related("token_a", "token_b").get(pk=rows[0]["left_item"])
    assert (rows[0]["left_token_a"], rows[0]["left_token_b"]) == (item.token_a.text, item.token_b.text)
    assert rows[0]["left_item"] == int(pairs.left_id[2]) and rows[0]["right_item"] == int(pairs.right_id[2])
    assert len(pairs.rows()) == pairs.count


def test_judge_pairs_refuse_a_study_that_has_not_finished():
    running = make_study()
    assert running.status == Study.Status.RUNNING
    with pytest.raises(StudyStateError):
        judge_pairs(study=running)
