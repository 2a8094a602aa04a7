"""Quality control on a simulated crowd with bad annotators: speeders, annotators who always pick one
side and random clickers are each flagged by the right threshold, the good ones are not; the results
page's annotator table sorts, filters by flag and pages with plain links; annotators.csv carries it."""

from __future__ import annotations

import csv
import html
import io
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from collection.models import Annotator, Assignment, Ballot, Comparison, Study, Vote
from scoring import views
from scoring.selectors import annotator_stats
from tests.factories import QualityCrowd, annotators, make_study, vote_until

pytestmark = pytest.mark.django_db

# 6 tokens → 15 items, 105 pairs; one ballot with M = 100: 750 comparisons, about 7 votes per pair, so
# the others of a vote have a clear majority. 16 annotators (p0 … p15) vote 46 or 47 times each.
KINDS = ["good"] * 10 + ["speeder", "speeder", "left", "right", "random", "random"]
SPEEDERS = {"participant p10", "participant p11"}
ONE_SIDED = {"participant p12", "participant p13"}
RANDOM = {"participant p14", "participant p15"}
BAD = SPEEDERS | ONE_SIDED | RANDOM


def crowd_vote(study: Study, kinds: list[str], *, seed: int = 5, max_votes: int | None = None) -> dict:
    voters = annotators(study, len(kinds))
    crowd = QualityCrowd(
        study, {voter.pk: kind for voter, kind in zip(voters, kinds, strict=True)}, seed=seed
    )
    vote_until(study, voters=voters, choose=crowd.choose, respond=crowd.respond, max_votes=max_votes)
    study.refresh_from_db()
    return {f"participant p{number}": kind for number, kind in enumerate(kinds)}


@pytest.fixture
def crowd_study() -> Study:
    # A random clicker agrees with a clear majority half the time; the good ones here nearly always.
    study = make_study(tokens=6, ballot_count=1, appearances=100, seed=5, quality_min_majority_agreement=0.65)
    crowd_vote(study, KINDS)
    assert study.status == Study.Status.FINISHED
    return study


@pytest.fixture
def staff(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_user("researcher", password="x", is_staff=True))
    return client


def flags_by_label(study: Study) -> dict[str, tuple[str, ...]]:
    return {row.label: row.flag_codes for row in annotator_stats(study=study)}


# --- the flags ---------------------------------------------------------------------------------------


def test_speeders_are_flagged_for_fast_answers(crowd_study):
    stats = {row.label: row for row in annotator_stats(study=crowd_study)}
    for label in SPEEDERS:
        assert "fast" in stats[label].flag_codes
        assert stats[label].fast_share == 1.0
    assert {label for label, row in stats.items() if "fast" in row.flag_codes} == SPEEDERS


def test_annotators_who_always_pick_one_side_are_flagged_for_position_bias(crowd_study):
    stats = {row.label: row for row in annotator_stats(study=crowd_study)}
    assert stats["participant p12"].left_choice_rate == 1.0
    assert stats["participant p13"].left_choice_rate == 0.0
    for label in ONE_SIDED:
        votes = stats[label].votes
        assert stats[label].left_p_value == pytest.approx(2 * 0.5**votes, rel=1e-9)
        assert stats[label].left_p_holm == pytest.approx(16 * 2 * 0.5**votes, rel=1e-9)  # the smallest two
    assert {label for label, row in stats.items() if "position" in row.flag_codes} == ONE_SIDED


def test_random_clickers_are_flagged_only_for_disagreeing_with_the_majority(crowd_study):
    flags = flags_by_label(crowd_study)
    for label in RANDOM:
        assert flags[label] == ("majority",)
    assert {label for label, codes in flags.items() if "majority" in codes} <= BAD


def test_good_annotators_are_not_flagged(crowd_study):
    flags = flags_by_label(crowd_study)
    assert {label: codes for label, codes in flags.items() if label not in BAD} == {
        f"participant p{number}": () for number in range(10)
    }


def test_a_flag_says_why_in_words(crowd_study):
    stats = {row.label: row for row in annotator_stats(study=crowd_study)}
    fast = stats["participant p10"].flags[0]
    assert (fast.code, fast.label) == ("fast", "too many fast answers")
    assert fast.reason == "100% of 47 answers faster than 1,000 ms (at most 25% allowed)"
    position = [flag for flag in stats["participant p12"].flags if flag.code == "position"][0]
    assert position.reason.startswith("left chosen in 47 of 47 non-tie votes: p = ")
    assert position.reason.endswith("after Holm's correction over 16 annotators (α = 0.05)")


def test_a_blank_threshold_turns_its_check_off(crowd_study):
    crowd_study.quality_fast_ms = None
    crowd_study.quality_position_alpha = None
    crowd_study.quality_min_majority_agreement = None
    crowd_study.save()
    stats = annotator_stats(study=crowd_study)
    assert {row.flags for row in stats} == {()}
    assert {row.fast_share for row in stats} == {None}


def test_stricter_thresholds_flag_more(crowd_study):
    crowd_study.quality_fast_ms = 10_000  # every answer of this crowd is under 9 s
    crowd_study.save()
    flags = flags_by_label(crowd_study)
    assert all("fast" in codes for codes in flags.values())


def test_annotators_with_fewer_than_ten_votes_are_not_judged():
    study = make_study(tokens=6, ballot_count=1, appearances=100, seed=5)
    crowd_vote(study, ["speeder", "left"], max_votes=18)
    stats = {row.label: row for row in annotator_stats(study=study)}
    assert [stats[label].votes for label in ("participant p0", "participant p1")] == [9, 9]
    assert stats["participant p0"].fast_share == 1.0
    assert stats["participant p1"].left_choice_rate == 1.0
    assert stats["participant p1"].left_p_holm is None  # not in the family of tests
    assert {row.flags for row in stats.values()} == {()}

    # One more vote each: ten, judged. 10 of 10 left: p = 2/1024, × 2 by Holm over the two tested.
    for annotator in Annotator.objects.filter(study=study).order_by("pk"):
        vote_until(study, voters=[annotator], max_votes=1)
    stats = {row.label: row for row in annotator_stats(study=study)}
    assert stats["participant p0"].flag_codes == ("fast",)
    assert stats["participant p1"].left_p_value == pytest.approx(2 / 1024)
    assert stats["participant p1"].left_p_holm == pytest.approx(4 / 1024)
    assert "position" in stats["participant p1"].flag_codes


def test_self_agreement_is_undefined_where_the_design_never_repeats_a_pair(crowd_study):
    # The ballots never give an annotator a pair they judged (vote_once_per_pair_per_annotator).
    stats = annotator_stats(study=crowd_study)
    assert {(row.self_agreement, row.self_repeated_pairs) for row in stats} == {(None, 0)}
    crowd_study.quality_min_self_agreement = 0.9
    crowd_study.save()
    assert not any("self" in row.flag_codes for row in annotator_stats(study=crowd_study))


# --- the page ----------------------------------------------------------------------------------------


def page(client: Client, study: Study, query: str = "") -> str:
    response = client.get(f"/studies/{study.slug}/results/{query}")
    assert response.status_code == 200
    return response.content.decode()


def listed(content: str) -> list[str]:
    """The annotators of the table, in the order shown."""
    table = content.split('class="data annotators"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<th scope="row">([^<]*)</th>', table)


def links(content: str, label: str) -> str:
    """The href of the link whose text starts with ``label``."""
    match = re.search(r'<a href="([^"]*)"[^>]*>\s*' + re.escape(label), content)
    assert match, label
    return html.unescape(match.group(1))


def test_the_heading_counts_the_flagged_annotators(crowd_study, staff):
    assert "Annotators: 16, 6 flagged</h2>" in page(staff, crowd_study)


def test_the_table_filters_by_flag(crowd_study, staff):
    assert set(listed(page(staff, crowd_study, "?flag=position"))) == ONE_SIDED
    assert set(listed(page(staff, crowd_study, "?flag=fast"))) == SPEEDERS
    assert set(listed(page(staff, crowd_study, "?flag=any"))) == BAD
    assert len(listed(page(staff, crowd_study, "?flag=nonsense"))) == 16  # unknown: no filter


def test_the_filter_links_say_how_many_each_shows(crowd_study, staff):
    content = page(staff, crowd_study)
    assert links(content, "flagged (6)") == "?flag=any#annotators-heading"
    assert links(content, "position bias (2)") == "?flag=position#annotators-heading"
    assert links(content, "all (16)") == "?#annotators-heading"


def test_the_table_sorts_by_any_column_both_ways(crowd_study, staff):
    stats = annotator_stats(study=crowd_study)
    by_fast = listed(page(staff, crowd_study, "?sort=-fast"))
    assert set(by_fast[:2]) == SPEEDERS
    by_majority = listed(page(staff, crowd_study, "?sort=majority"))
    expected = sorted(stats, key=lambda row: (row.majority_agreement, row.annotator_id))
    assert by_majority == [row.label for row in expected]
    by_name = listed(page(staff, crowd_study, "?sort=annotator"))
    assert by_name == sorted(by_name)
    assert listed(page(staff, crowd_study, "?sort=-annotator")) == sorted(by_name, reverse=True)
    assert set(listed(page(staff, crowd_study, "?sort=-flags"))[:6]) == BAD


def test_a_sort_link_reverses_the_current_column_and_keeps_the_filter(crowd_study, staff):
    content = page(staff, crowd_study, "?sort=-fast&flag=any")
    assert links(content, "Fast answers") == "?flag=any&sort=fast#annotators-heading"
    assert links(content, "Agreement with the majority") == "?flag=any&sort=-majority#annotators-heading"
    assert 'aria-sort="descending"' in content


def test_an_unknown_sort_falls_back_to_most_votes_first(crowd_study, staff):
    assert listed(page(staff, crowd_study, "?sort=drop+table")) == listed(page(staff, crowd_study))


def test_the_table_pages(crowd_study, staff, monkeypatch):
    monkeypatch.setattr(views, "ANNOTATORS_PER_PAGE", 5)
    first = page(staff, crowd_study, "?sort=annotator")
    assert "page 1 of 4" in first
    assert links(first, "next") == "?sort=annotator&page=2#annotators-heading"
    shown = [listed(page(staff, crowd_study, f"?sort=annotator&page={number}")) for number in (1, 2, 3, 4)]
    assert [len(rows) for rows in shown] == [5, 5, 5, 1]
    everyone = sum(shown, [])
    assert everyone == sorted(f"participant p{number}" for number in range(16))  # each once, in order
    assert listed(page(staff, crowd_study, "?sort=annotator&page=99")) == shown[3]  # past the end: the last
    assert listed(page(staff, crowd_study, "?sort=annotator&page=x")) == shown[0]
    flagged = [listed(page(staff, crowd_study, f"?flag=any&page={number}")) for number in (1, 2)]
    assert [len(rows) for rows in flagged] == [5, 1]
    assert set(sum(flagged, [])) == BAD


# --- more than 100 annotators ----------------------------------------------------------------------


def test_a_table_of_120_annotators_shows_50_per_page(staff):
    study = make_study(tokens=4, start=False)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.RUNNING)
    ballot = Ballot.objects.create(study=study, number=1, comparison_count=120)
    left, right = study.items.order_by("index")[:2]
    people = Annotator.objects.bulk_create(
        [Annotator(study=study, participant_id=f"q{number:03d}") for number in range(120)]
    )
    comparisons = Comparison.objects.bulk_create(
        [
            Comparison(
                ballot=ballot,
                position=number,
                left_item=left,
                right_item=right,
                pair_low=0,
                pair_high=1,
                status=Comparison.Status.VOTED,
            )
            for number in range(120)
        ]
    )
    now = timezone.now()
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                comparison=comparison,
                ballot=ballot,
                annotator=person,
                status=Assignment.Status.VOTED,
                issued_at=now,
                expires_at=now + timedelta(minutes=5),
            )
            for comparison, person in zip(comparisons, people, strict=True)
        ]
    )
    Vote.objects.bulk_create(
        [
            Vote(
                assignment=assignment,
                comparison=assignment.comparison,
                annotator=assignment.annotator,
                ballot=ballot,
                left_item=left,
                right_item=right,
                pair_low=0,
                pair_high=1,
                choice="left",
                response_ms=100 * number,
            )
            for number, assignment in enumerate(assignments)
        ]
    )
    study.refresh_from_db()

    first = page(staff, study, "?sort=annotator")
    assert "Annotators: 120, 0 flagged</h2>" in first
    assert "page 1 of 3" in first
    assert listed(first) == [f"participant q{number:03d}" for number in range(50)]
    assert listed(page(staff, study, "?sort=annotator&page=3")) == [
        f"participant q{number:03d}" for number in range(100, 120)
    ]
    assert listed(page(staff, study, "?sort=median_response"))[0] == "participant q000"


# --- the export --------------------------------------------------------------------------------------


def test_annotators_csv_carries_the_figures_and_flags(crowd_study, staff):
    response = staff.get(f"/studies/{crowd_study.slug}/export/annotators.csv")
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{crowd_study.slug}-annotators.csv"'
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    stats = {row.label: row for row in annotator_stats(study=crowd_study)}
    assert [row["annotator"] for row in rows] == list(stats)  # most votes first, as the table
    for row in rows:
        expected = stats[row["annotator"]]
        assert row["flags"] == ";".join(expected.flag_codes)
        assert row["flag_reasons"] == "; ".join(flag.reason for flag in expected.flags)
        assert int(row["votes"]) == expected.votes
        assert float(row["fast_share"]) == pytest.approx(expected.fast_share)
        assert float(row["left_p_value"]) == pytest.approx(expected.left_p_value)
        assert row["self_agreement"] == ""
    assert {row["annotator"] for row in rows if "fast" in row["flags"].split(";")} == SPEEDERS
