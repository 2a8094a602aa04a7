"""A judge in a study that keeps a hidden test part: it decides every pair (the pairs listing lists them
all, as models score every item); its owner reads its figures over the pairs of two development items,
and of the test part only the aggregates the judges' leaderboard ranks on; no judge answer or page but
the pairs listing names an item or a token."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.test import Client

from collection.models import Item
from common.errors import ServiceError
from metrics import services
from metrics.judges import judge_pairs
from metrics.models import Kind, Standing, Submission
from tests.metrics.conftest import study_voted_to_the_end
from tests.metrics.judge_helpers import reference_rows

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r"area\d+-\d+")  # the factories' token texts: area0-3
NAMING_KEYS = {"item", "item_id", "left_item", "right_item", "index"}  # "items", "item_count" are counts


@pytest.fixture(scope="module")
def split_study(django_db_setup, django_db_blocker):
    yield from study_voted_to_the_end(
        django_db_blocker,
        voters=7,
        crowd_seed=3,
        tokens=7,
        areas=2,
        ballot_count=2,
        appearances=8,
        seed=11,
        allow_ties=True,
        hidden_share=0.4,
    )


@pytest.fixture
def study(split_study, db):
    return split_study


def part_pair_counts(study) -> tuple[int, int]:
    """Pairs of two development items, and of two test items."""
    pairs = judge_pairs(study=study)
    hidden = dict(Item.objects.filter(study=study).values_list("pk", "hidden"))
    left = np.array([hidden[pk] for pk in pairs.left_id.tolist()])
    right = np.array([hidden[pk] for pk in pairs.right_id.tolist()])
    return int((~left & ~right).sum()), int((left & right).sum())


@pytest.fixture
def owner_and_judge(study):
    owner = User.objects.create_user("owner")
    judge = services.judge_create(
        study=study, owner=owner, judge_name="judge", data=reference_rows(study), source_format="json"
    )
    assert judge.status == Submission.Status.DONE, judge.error
    services.submission_standings(submission_id=judge.pk)
    client = Client()
    client.force_login(owner)
    return client, judge


def test_a_judge_must_decide_every_pair_of_a_study_with_a_hidden_part(study):
    rows = reference_rows(study)
    with pytest.raises(ServiceError) as refused:
        services.judge_create(
            study=study,
            owner=User.objects.create_user("o"),
            judge_name="j",
            data=rows[1:],
            source_format="json",
        )
    assert refused.value.message == (
        f"the judge decides {len(rows) - 1:,} of {len(rows):,} pairs; study {study.slug!r} keeps a hidden test part "
        f"on which the leaderboard ranks judges, so decide every one of its {len(rows):,} pairs"
    )


def test_the_pairs_listing_lists_every_pair_hidden_ones_too(study):
    client = Client()
    client.force_login(User.objects.create_user("reader"))
    listing = client.get(f"/api/studies/{study.slug}/judge-pairs/?limit=1000").json()
    pairs = judge_pairs(study=study)
    assert listing["count"] == pairs.count
    hidden = set(Item.objects.filter(study=study, hidden=True).values_list("pk", flat=True))
    listed = {row["left_item"] for row in listing["results"]} | {
        row["right_item"] for row in listing["results"]
    }
    assert hidden <= listed


def test_the_owner_reads_the_development_pairs_and_only_aggregates_of_the_test_part(study, owner_and_judge):
    client, judge = owner_and_judge
    development, test = part_pair_counts(study)
    body = client.get(f"/api/judges/{judge.pk}/").json()
    assert (body["evaluation"]["part"], body["evaluation"]["pairs"]) == ("development", development)
    assert (body["test_part"]["part"], body["test_part"]["pairs"]) == ("test", test)
    assert "disagreement" not in body["test_part"] and "areas" not in body["test_part"]
    other = client.get(f"/api/judges/{judge.pk}/evaluation/?n0=0&k=2").json()
    assert other["part"] == "development"


def test_the_judges_leaderboard_ranks_on_the_test_part_alone(study, owner_and_judge):
    _, judge = owner_and_judge
    _, test = part_pair_counts(study)
    board = Client().get(f"/api/studies/{study.slug}/judges/leaderboard/").json()
    assert board["part"] == "test"
    (row,) = board["rows"]
    assert row["judge"]["pairs"] == test
    assert set(Standing.objects.filter(submission=judge).values_list("part", flat=True)) == {"test"}


def names_an_item(value) -> list:
    """Keys of a JSON answer that name an item or a token."""
    found, stack = [], [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            found += [key for key in current if key in NAMING_KEYS or "token" in key.lower()]
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return found


def test_no_judge_answer_or_page_but_the_pairs_listing_names_an_item_or_a_token(study, owner_and_judge):
    client, judge = owner_and_judge
    answers = [
        "/api/judges/",
        f"/api/judges/{judge.pk}/",
        f"/api/judges/{judge.pk}/evaluation/?n0=0&k=2",
        f"/api/studies/{study.slug}/judges/leaderboard/",
    ]
    for url in answers:
        response = client.get(url)
        assert response.status_code == 200, url
        assert names_an_item(response.json()) == [], url
        assert TOKEN.findall(response.content.decode()) == [], url
    pages = [
        f"/models/judges/{judge.pk}/",
        f"/models/studies/{study.slug}/judges/leaderboard/",
        f"/api/studies/{study.slug}/judges/leaderboard/?format=csv",
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        assert TOKEN.findall(response.content.decode()) == [], url
    listing = client.get(f"/api/studies/{study.slug}/judge-pairs/?limit=3").content.decode()
    assert TOKEN.findall(listing)  # the one answer that names them
    assert json.loads(listing)["count"] == judge_pairs(study=study).count
    assert Submission.objects.filter(kind=Kind.JUDGE).count() == 1
