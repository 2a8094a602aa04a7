"""The hidden test part: a seeded draw, stratified by semantic area and spread along a known ranking,
stored when the study starts and fixed from then on (the service refuses with 409, the database too)."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from collection import arrays
from collection.models import Item, Study
from collection.parts import SPLIT_STREAM, items_split_draw, split_planned, split_summary
from collection.split import hidden_counts, split_draw
from collection.studies import study_duplicate
from common.errors import StudyStateError
from tests.factories import annotators, make_study, vote_until

# --- the draw (pure) --------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=8),
    share=st.floats(min_value=0.0, max_value=0.9),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_every_area_gives_its_share_of_test_items_within_one_and_the_total_is_the_rounded_share(
    sizes, share, seed
):
    codes = np.repeat(np.arange(len(sizes)) * 7 + 3, sizes)  # any labels, not 0 … A-1
    hidden = split_draw(codes, share, np.random.default_rng(seed))

    per_area = np.array([hidden[codes == code].sum() for code in np.arange(len(sizes)) * 7 + 3])
    exact = Fraction(repr(share))
    assert all(abs(h - exact * n) < 1 for h, n in zip(per_area.tolist(), sizes, strict=True))
    assert hidden.sum() == math.floor(exact * sum(sizes) + Fraction(1, 2))
    assert per_area.tolist() == hidden_counts(sizes, share).tolist()


def _hamilton(sizes, share: Fraction) -> list[int]:
    """Largest remainders by the rule's words, in fractions: floors, then one more to the largest
    remainders, the lower area first among equal ones."""
    quotas = [share * n for n in sizes]
    counts = [math.floor(q) for q in quotas]
    total = math.floor(share * sum(sizes) + Fraction(1, 2))
    ranked = sorted(range(len(sizes)), key=lambda a: (-(quotas[a] - counts[a]), a))
    for area in ranked[: total - sum(counts)]:
        counts[area] += 1
    return counts


@settings(max_examples=500, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=2_000), min_size=1, max_size=10),
    percent=st.integers(min_value=0, max_value=99),
    thousandths=st.integers(min_value=0, max_value=9),
)
def test_the_counts_are_the_largest_remainders_of_the_share_as_entered_computed_in_fractions(
    sizes, percent, thousandths
):
    entered = f"0.{percent:02d}{thousandths}"  # what a researcher types: 0.2, 0.35, 0.125 …
    assert hidden_counts(sizes, float(entered)).tolist() == _hamilton(sizes, Fraction(entered))


def test_equal_remainders_go_to_the_lower_area_even_where_floats_make_them_differ():
    # 0.2 of 7 and of 152 leave 0.4 each, but 0.2·7 = 1.4000000000000001 and 0.2·152 = 30.400000000000002
    # in floats, which once gave the unit to the area of 152: [28, 1, 7, 2, 31].
    assert hidden_counts([139, 7, 36, 10, 152], 0.2).tolist() == [28, 2, 7, 2, 30]


def test_largest_remainders_give_the_extra_items_to_the_areas_closest_to_the_next_one():
    # 0.3 of 10, 7 and 5: quotas 3.0, 2.1, 1.5; total round(6.6) = 7, one more after the floors 3 + 2 + 1,
    # to the area of 5 (remainder 0.5, the largest).
    assert hidden_counts([10, 7, 5], 0.3).tolist() == [3, 2, 2]
    # Equal remainders: the lower area first. 0.5 of 3, 3, 3: 1.5 each, total round(4.5) = 5 (half up).
    assert hidden_counts([3, 3, 3], 0.5).tolist() == [2, 2, 1]
    assert hidden_counts([4, 0, 9], 0.0).tolist() == [0, 0, 0]


def test_the_same_seed_draws_the_same_test_part_and_another_seed_another():
    codes = np.repeat([0, 1, 2], [40, 25, 35])
    first = split_draw(codes, 0.3, np.random.default_rng([99, SPLIT_STREAM]))
    again = split_draw(codes, 0.3, np.random.default_rng([99, SPLIT_STREAM]))
    other = split_draw(codes, 0.3, np.random.default_rng([100, SPLIT_STREAM]))

    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    assert first.sum() == other.sum() == 30


def test_along_a_known_ranking_the_test_part_takes_one_item_of_every_block_of_equal_rank():
    # One area of 20 items ranked by their key (item 19 first), a quarter hidden: positions ⌊(j + u)·4⌋
    # take exactly one item of each block of 4 consecutive ranks, top and bottom alike.
    key = np.arange(20.0)
    for seed in range(20):
        hidden = split_draw(np.zeros(20, dtype=int), 0.25, np.random.default_rng(seed), order_key=key)
        ranked = hidden[np.argsort(-key)]
        assert ranked.reshape(5, 4).sum(axis=1).tolist() == [1, 1, 1, 1, 1]


def test_without_a_ranking_every_item_is_about_equally_likely_to_be_hidden():
    codes = np.repeat([0, 1], [12, 8])
    draws = np.array([split_draw(codes, 0.25, np.random.default_rng(seed)) for seed in range(4000)])
    frequency = draws.mean(axis=0)
    # Each item is hidden with probability 3/12 (area 0) and 2/8 (area 1); 4000 draws: SD about 0.007.
    assert np.all(np.abs(frequency - 0.25) < 0.03)


def test_a_bad_share_or_areas_are_refused():
    with pytest.raises(ValueError, match=r"hidden share must lie in \[0, 1\)"):
        hidden_counts([3], 1.0)
    with pytest.raises(ValueError, match="one value per item"):
        split_draw([0, 0, 1], 0.5, np.random.default_rng(0), order_key=[1.0, 2.0])


# --- the split stored at the start ----------------------------------------------------------------------

pytestmark_db = pytest.mark.django_db  # the pure tests above need no database


@pytestmark_db
def test_the_start_stores_the_draw_of_the_studys_seed_stratified_by_area():
    study = make_study(tokens=7, areas=3, hidden_share=0.3, seed=2024)  # 21 items per area

    stored = arrays.item_hidden(study_id=study.pk)
    expected = split_draw(
        arrays.item_areas(study_id=study.pk), 0.3, np.random.default_rng([2024, SPLIT_STREAM])
    )
    assert np.array_equal(stored, expected)
    # 0.3 of 21 is 6.3 in each area: 6, 6, 6 and one more to the first area, round(18.9) = 19 in all.
    counts = Counter(Item.objects.filter(study=study, hidden=True).values_list("area__name", flat=True))
    assert sorted(counts.values()) == [6, 6, 7]
    summary = split_summary(study=study)
    assert (summary.test, summary.development, summary.drawn) == (19, 44, True)


@pytestmark_db
def test_a_study_without_a_share_hides_nothing_and_behaves_as_before():
    study = make_study(tokens=6)

    assert not Item.objects.filter(study=study, hidden=True).exists()
    assert split_summary(study=study) is None


@pytestmark_db
def test_a_draft_shows_the_split_its_start_will_store():
    study = make_study(tokens=6, areas=2, hidden_share=0.4, seed=7, start=False)

    planned = split_planned(study)
    summary = split_summary(study=study)
    from collection.lifecycle import study_start

    study_start(study=study)
    assert np.array_equal(arrays.item_hidden(study_id=study.pk), planned)
    assert (summary.drawn, summary.test) == (False, int(planned.sum())) == (False, 12)


@pytestmark_db
def test_drawing_again_after_the_start_is_refused_with_why():
    study = make_study(tokens=6, hidden_share=0.4)
    before = arrays.item_hidden(study_id=study.pk)

    with pytest.raises(StudyStateError) as refused:
        items_split_draw(study=study)

    assert refused.value.status == 409
    assert "was drawn when it started and is fixed" in refused.value.message
    assert np.array_equal(arrays.item_hidden(study_id=study.pk), before)


@pytestmark_db
def test_the_database_refuses_to_move_an_item_between_the_parts_once_the_study_has_started():
    study = make_study(tokens=6, hidden_share=0.4)
    item = Item.objects.filter(study=study, hidden=True).first()

    with pytest.raises(IntegrityError, match="fixed once it has started"), transaction.atomic():
        Item.objects.filter(pk=item.pk).update(hidden=False)

    assert Item.objects.get(pk=item.pk).hidden is True


@pytestmark_db
def test_the_database_lets_a_draft_move_items_between_the_parts():
    study = make_study(tokens=6, hidden_share=0.4, start=False)

    Item.objects.filter(study=study, index=0).update(hidden=True)

    assert Item.objects.get(study=study, index=0).hidden is True


@pytestmark_db
def test_the_database_refuses_a_hidden_share_out_of_bounds():
    study = make_study(tokens=6, start=False)

    with pytest.raises(IntegrityError), transaction.atomic():
        Study.objects.filter(pk=study.pk).update(hidden_share=0.95)


@pytestmark_db
def test_a_replication_hides_the_items_its_original_hides():
    original = make_study(tokens=6, areas=2, hidden_share=0.3, seed=31)
    copy = study_duplicate(study=original)
    from collection.lifecycle import study_start

    study_start(study=copy)

    assert copy.hidden_share == 0.3 and copy.seed != original.seed
    assert np.array_equal(arrays.item_hidden(study_id=copy.pk), arrays.item_hidden(study_id=original.pk))


@pytestmark_db
def test_a_replication_of_a_finished_study_without_a_split_spreads_its_test_part_along_that_ranking():
    original = make_study(tokens=6, ballot_count=2, appearances=6)  # 15 items, one area
    vote_until(original, voters=annotators(original, 6))
    original.refresh_from_db()
    assert original.status == Study.Status.FINISHED
    # Distinct final scores (a crowd's scores tie among the items eliminated early, and the draw orders
    # tied items at random): item i scores (i·7 mod 15)/15.
    for item in Item.objects.filter(study=original):
        Item.objects.filter(pk=item.pk).update(final_score=(item.index * 7 % 15) / 15)
    copy = study_duplicate(study=original)
    Study.objects.filter(pk=copy.pk).update(hidden_share=0.2)
    copy.refresh_from_db()
    from collection.lifecycle import study_start

    study_start(study=copy)

    score = arrays.final_scores(study_id=original.pk, item_count=15)[0]
    hidden = arrays.item_hidden(study_id=copy.pk)
    ranked = hidden[np.argsort(-score)]
    # 3 of 15 hidden: one in each third of the original's ranking (blocks of 5 ranks).
    assert hidden.sum() == 3
    assert ranked.reshape(3, 5).sum(axis=1).tolist() == [1, 1, 1]


@pytestmark_db
def test_the_admin_shows_the_split_and_keeps_the_share_read_only_once_started(admin_client):
    study = make_study(tokens=7, areas=3, hidden_share=0.3, seed=2024)

    response = admin_client.get(reverse("admin:collection_study_change", args=[study.pk]))

    page = response.content.decode()
    assert response.status_code == 200
    assert "hidden_share" not in response.context["adminform"].form.fields  # read-only: frozen
    assert '<strong id="split-test">19</strong>' in page
    assert "Drawn when the study started and fixed since" in page
