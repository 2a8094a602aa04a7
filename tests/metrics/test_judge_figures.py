"""A judge of a finished study: its pairs, and its evaluation against the crowd (``metrics.judges``).

The pairs are checked against the votes read back row by row; the evaluation's figures against judges
built to behave in known ways: one that copies the crowd's majority, one at random, one always "left",
one that reverses the crowd's top. A study that keeps a hidden test part shows that nothing of its test
items reaches the development part's evaluation.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from collection.models import Item, Study, Vote
from common.errors import StudyStateError
from config.celery import app as celery_app
from metrics.correlation import weighted_spearman
from metrics.judges import judge_pairs, judge_result
from metrics.selectors import final_scores
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until
from tests.metrics.conftest import study_voted_to_the_end

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


# --- judges of known behaviour on a crowd whose pairs repeat ----------------------------------------


@pytest.fixture(scope="module")
def crowd_study(django_db_setup, django_db_blocker):
    """21 items (7 tokens), 2 ballots of 24 appearances each (more than the 20 other items, so pairs
    repeat), no ties, voted to the end by 12 annotators who see the items' order through their own noise
    (none careless or one-sided, so that the crowd's majority carries the order)."""
    eager = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, True
    with django_db_blocker.unblock():
        study = make_study(tokens=7, ballot_count=2, appearances=24, seed=13)
        crowd = disagreeing_crowd(study, seed=6, careless_every=10**6, biased_every=10**6)
        vote_until(study, voters=annotators(study, 12), choose=crowd)
        study.refresh_from_db()
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager
    assert study.status == Study.Status.FINISHED
    yield study
    with django_db_blocker.unblock():
        study.delete()


def crowd_in_judge_orientation(study):
    """Per pair: the tally of the counted votes in the judge's orientation (left, right, tie) and the
    category of its first vote, read back from the Vote rows one by one."""
    pairs = judge_pairs(study=study)
    position = {(int(a), int(b)): p for p, (a, b) in enumerate(zip(pairs.left, pairs.right, strict=True))}
    tally = np.zeros((pairs.count, 3), dtype=int)
    first = np.full(pairs.count, -1)
    for left, right, choice in (
        Vote.objects.filter(ballot__study=study, ballot__status="closed")
        .order_by("ballot__number", "pk")
        .values_list("left_item__index", "right_item__index", "choice")
    ):
        if (left, right) in position:
            pair, category = position[(left, right)], {"left": 0, "right": 1, "tie": 2}[choice]
        else:
            pair, category = position[(right, left)], {"left": 1, "right": 0, "tie": 2}[choice]
        tally[pair, category] += 1
        if first[pair] < 0:
            first[pair] = category
    return pairs, tally, first


def copy_decisions(tally, first):
    """The crowd's majority on each pair, a tie of counts broken by the pair's first vote."""
    top = tally.max(axis=1)
    strict = (tally == top[:, None]).sum(axis=1) == 1
    category = np.where(strict, tally.argmax(axis=1), first)
    return np.array([1.0, 0.0, 0.5])[category]


def evaluate_judge(study, decisions, part="all"):
    return judge_result(study=study, decisions=decisions, weight_offset=2.0, top_k=5, part=part, store=False)


def test_a_judge_that_copies_the_crowds_majority_measures_like_the_crowd(crowd_study):
    pairs, tally, first = crowd_in_judge_orientation(crowd_study)
    result = evaluate_judge(crowd_study, copy_decisions(tally, first))
    agreement = result["agreement"]
    assert agreement["majority"]["value"] == 1.0
    assert agreement["majority"]["pairs"] == int(
        ((tally.sum(axis=1) >= 2) & (tally.max(axis=1) * 2 > tally.sum(axis=1))).sum()
    )
    # Its decision holds the vote it is compared with, so it reaches the crowd's own agreement and beyond.
    assert agreement["kappa"]["value"] >= agreement["kappa"]["crowd"]["value"]
    assert agreement["single"]["value"] >= agreement["single"]["crowd"]["value"]
    assert result["verdict"]["indistinguishable"] is True
    assert result["verdict"]["direction"] == "like the crowd"
    assert result["verdict"]["splits"] == 100
    assert "measures like the crowd" in result["verdict"]["sentence"]
    assert result["pairs"] == result["decided"] == pairs.count and result["coverage"] == 1.0


def test_a_random_judge_is_at_chance(crowd_study):
    pairs = judge_pairs(study=crowd_study)
    result = evaluate_judge(crowd_study, np.random.default_rng(1).choice([1.0, 0.0], size=pairs.count))
    low, high = result["agreement"]["single"]["interval"]
    assert low <= 0.5 <= high
    low, high = result["agreement"]["kappa"]["interval"]
    assert low <= 0.0 <= high
    assert result["verdict"]["direction"] == "worse than the crowd"


def test_a_judge_that_always_says_left_is_caught(crowd_study):
    pairs = judge_pairs(study=crowd_study)
    side = evaluate_judge(crowd_study, np.ones(pairs.count))["agreement"]["side"]
    assert side["biased"] is True
    assert side["left_share"] == 1.0
    assert side["p_value"] == pytest.approx(2 * 0.5**pairs.count)
    assert "biased to the left" in side["sentence"]


def test_a_judge_that_reverses_the_crowds_top_keeps_a_high_kappa_and_loses_rho_w(crowd_study):
    pairs, tally, first = crowd_in_judge_orientation(crowd_study)
    copy = copy_decisions(tally, first)
    top = np.argsort(-final_scores(study=crowd_study), kind="stable")[:5]
    reversed_top = np.where(np.isin(pairs.left, top) & np.isin(pairs.right, top), 1.0 - copy, copy)
    reverse, faithful = evaluate_judge(crowd_study, reversed_top), evaluate_judge(crowd_study, copy)
    assert reverse["agreement"]["kappa"]["value"] >= 0.6  # 10 of 210 pairs reversed
    # ρ_w of the crowd's own order with its top five reversed: what the construction aims at.
    order = np.arange(1.0, 22.0)
    aimed = weighted_spearman(order, np.concatenate([order[:5][::-1], order[5:]]), 2.0)
    assert reverse["ranking"]["rho_w"]["value"] < (aimed + faithful["ranking"]["rho_w"]["value"]) / 2
    assert reverse["ranking"]["rho_w"]["value"] < faithful["ranking"]["rho_w"]["interval"][0]


# --- a per-area study that keeps a hidden test part -------------------------------------------------


@pytest.fixture(scope="module")
def split_area_study(django_db_setup, django_db_blocker):
    """Two areas of 5 tokens (20 items), ranked per area, 40% hidden, ties allowed, 2 ballots of 16
    appearances, voted to the end by 10 annotators of a crowd that disagrees."""
    eager = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = True, True
    with django_db_blocker.unblock():
        study = make_study(
            tokens=5,
            areas=2,
            ballot_count=2,
            appearances=16,
            seed=17,
            allow_ties=True,
            hidden_share=0.4,
            ranking_scope=Study.RankingScope.PER_AREA,
        )
        vote_until(study, voters=annotators(study, 10), choose=disagreeing_crowd(study, seed=9))
        study.refresh_from_db()
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = eager
    assert study.status == Study.Status.FINISHED
    yield study
    with django_db_blocker.unblock():
        study.delete()


def numbers_and_keys(value, path=()):
    """Every (path, leaf) of a nested result."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from numbers_and_keys(inner, (*path, key))
    elif isinstance(value, list):
        for inner in value:
            yield from numbers_and_keys(inner, (*path, "[]"))
    else:
        yield path, value


def test_the_development_evaluation_says_nothing_of_the_hidden_items(split_area_study):
    study = split_area_study
    pairs, tally, first = crowd_in_judge_orientation(study)
    hidden = np.zeros(study.items.count(), dtype=bool)
    hidden[list(Item.objects.filter(study=study, hidden=True).values_list("index", flat=True))] = True
    touches_hidden = hidden[pairs.left] | hidden[pairs.right]
    assert touches_hidden.any() and (hidden[pairs.left] & hidden[pairs.right]).any()
    copy = copy_decisions(tally, first)
    # The same judge, but on every pair that touches a hidden item: always left, or undecided.
    distinctive = np.where(touches_hidden, 1.0, copy)
    silent = np.where(touches_hidden, np.nan, copy)
    results = [
        evaluate_judge(study, decisions, part="development") for decisions in (copy, distinctive, silent)
    ]
    for result in results:
        assert result["part"] == "development"
        assert result["pairs"] == int((~touches_hidden).sum()) == result["decided"]
        # nothing per item or per pair: no key names one, anywhere in the result
        for path, _ in numbers_and_keys(result):
            assert not set(path) & {
                "item",
                "items_list",
                "index",
                "pair",
                "left_item",
                "right_item",
                "scores",
            }
        text = json.dumps(result, allow_nan=False)  # JSON-safe: no NaN, no numpy integer
        for item in Item.objects.filter(study=study, hidden=True):
            assert f'"item": {item.pk}' not in text and f'"index": {item.index}' not in text
    for changed in results[1:]:
        assert changed["agreement"] == results[0]["agreement"]
        assert changed["disagreement"] == results[0]["disagreement"]
    # Over every pair the same change shows: the figures above would have caught it.
    everywhere = [evaluate_judge(study, decisions, part="all") for decisions in (copy, distinctive)]
    assert everywhere[1]["agreement"]["side"] != everywhere[0]["agreement"]["side"]
    assert everywhere[1]["disagreement"] != everywhere[0]["disagreement"]
    # Its side is that of the development pairs only: the hidden "left"s do not count.
    assert results[1]["agreement"]["side"]["decisive"] == results[0]["agreement"]["side"]["decisive"]


def test_a_per_area_study_gives_a_judge_its_coefficients_per_area(split_area_study):
    pairs, tally, first = crowd_in_judge_orientation(split_area_study)
    result = evaluate_judge(split_area_study, copy_decisions(tally, first), part="development")
    assert [entry["area"] for entry in result["areas"]] == ["Area0", "Area1"]
    for entry in result["areas"]:
        assert entry["rho_w"]["value"] is not None and entry["rho_w"]["interval"] is not None
    assert {row["label"] for row in result["disagreement"]["by_area"]} <= {"Area0", "Area1", "across areas"}
    development = Item.objects.filter(study=split_area_study, hidden=False)
    assert result["ranking"]["items"] == split_area_study.items.count()
    assert result["ranking"]["covered"] == development.count()


@pytest.fixture(scope="module")
def adaptive_study(django_db_setup, django_db_blocker):
    """66 items (12 tokens), 4 ballots of α = 0.5 (66, 33, 17, 9 items), 10 appearances, voted to the end
    by 16 annotators of a crowd that disagrees (careless and one-sided annotators among them): the
    adaptive design whose ballots' tiers a verdict must not hand to the judge."""
    yield from study_voted_to_the_end(
        django_db_blocker, voters=16, crowd_seed=3, tokens=12, ballot_count=4, appearances=10, seed=21
    )


@pytest.mark.parametrize("judge", ["random", "always left"])
def test_across_ballots_a_judge_blind_to_the_items_is_worse_than_the_crowds_half(adaptive_study, judge):
    pairs = judge_pairs(study=adaptive_study)
    decisions = (
        np.random.default_rng(5).choice([1.0, 0.0], size=pairs.count)
        if judge == "random"
        else np.ones(pairs.count)
    )
    verdict = evaluate_judge(adaptive_study, decisions)["verdict"]
    assert verdict["direction"] == "worse than the crowd", verdict["sentence"]
    assert verdict["difference"]["interval"][1] < 0


def test_across_ballots_the_crowds_own_votes_measure_like_the_crowd(adaptive_study):
    pairs, tally, first = crowd_in_judge_orientation(adaptive_study)
    verdict = evaluate_judge(adaptive_study, copy_decisions(tally, first))["verdict"]
    assert verdict["direction"] != "worse than the crowd", verdict["sentence"]
