"""The staff results page and its selectors: dataset, Figure 2 and 4 data, annotator figures."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from datetime import timedelta

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from collection.models import Annotator, Assignment, Ballot, Comparison, Item, ItemScore, Study, Vote
from scoring.agreement import majority_agreement
from scoring.borda import final_order, rescale_slope
from scoring.selectors import annotator_stats, ballot_rescaling, scores_by_rank, study_dataset
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db

# make_study's defaults: 6 tokens → 15 items; n_b = 3, α = 0.5, M = 4 → ballots of 15, 8, 4 items,
# 30 + 16 + 8 = 54 comparisons. The seed fixes the schedules, so the figures below are reproducible.
SEED = 1
M = 4


@pytest.fixture
def finished_study():
    """A finished study in which the item with the lower index always wins."""
    study = make_study(seed=SEED)
    vote_until(study, voters=annotators(study, 6))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


@pytest.fixture
def running_study():
    """Ballot 1 (30 comparisons) voted and closed, ballot 2 open with 5 of its 16 votes."""
    study = make_study(seed=SEED)
    vote_until(study, voters=annotators(study, 6), max_votes=35)
    study.refresh_from_db()
    assert study.status == Study.Status.RUNNING
    return study


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_user(username="researcher", password="x", is_staff=True)
    client.force_login(user)
    return client


# --- study_dataset ---------------------------------------------------------------------------------


def test_lower_index_always_winning_ranks_the_last_ballot_by_index(finished_study):
    dataset = study_dataset(study=finished_study)
    last = dataset.last_ballot == 3
    assert dataset.index[last].tolist() == [0, 1, 2, 3]
    assert dataset.rank[last].tolist() == [1, 2, 3, 4]


def test_dataset_reports_the_stored_final_ranking(finished_study):
    dataset = study_dataset(study=finished_study)
    stored = list(
        finished_study.items.order_by("index").values_list("final_score", "final_rank", "last_ballot")
    )
    assert [(row["final_score"], row["final_rank"], row["last_ballot"]) for row in dataset.rows()] == stored
    assert sorted(dataset.rank.tolist()) == list(range(1, 16))
    # The stored ranks are the engine's order of the stored scores.
    order = final_order(dataset.score, dataset.last_ballot)
    assert dataset.rank[order].tolist() == list(range(1, 16))


def test_every_item_appears_m_times_in_every_ballot_it_reached(finished_study):
    dataset = study_dataset(study=finished_study)
    assert dataset.appearances.tolist() == (M * dataset.last_ballot).tolist()
    assert sorted(dataset.last_ballot.tolist()) == [1] * 7 + [2] * 4 + [3] * 4


def test_wins_are_the_votes_each_item_won_and_there_are_no_ties(finished_study):
    expected_wins = np.zeros(15, dtype=np.int64)
    for vote in Vote.objects.filter(ballot__study=finished_study).select_related("left_item", "right_item"):
        winner = vote.left_item if vote.choice == "left" else vote.right_item
        expected_wins[winner.index] += 1
    dataset = study_dataset(study=finished_study)
    assert dataset.wins.tolist() == expected_wins.tolist()
    assert dataset.wins.sum() == 54
    assert dataset.ties.tolist() == [0] * 15


def test_win_ratios_per_ballot_are_the_stored_x_and_empty_after_the_last_ballot(finished_study):
    dataset = study_dataset(study=finished_study)
    stored = {
        (index, number): ratio
        for index, number, ratio in ItemScore.objects.filter(ballot__study=finished_study).values_list(
            "item__index", "ballot__number", "win_ratio"
        )
    }
    for row in dataset.rows():
        assert row["win_ratio"] == [stored.get((row["index"], k)) for k in (1, 2, 3)]
        assert row["win_ratio"][row["last_ballot"] :] == [None] * (3 - row["last_ballot"])
    # The item with index 0 beats every other: x = 1 in every ballot.
    assert dataset.row(0)["win_ratio"] == [1.0, 1.0, 1.0]
    assert dataset.row(0)["wins"] == 3 * M


def test_a_running_study_reports_scores_so_far_and_no_final_rank(running_study):
    dataset = study_dataset(study=running_study)
    first = dict(
        ItemScore.objects.filter(ballot__study=running_study, ballot__number=1).values_list(
            "item__index", "score"
        )
    )
    survivors = set(
        ItemScore.objects.filter(ballot__study=running_study, ballot__number=1, survived=True).values_list(
            "item__index", flat=True
        )
    )
    assert len(survivors) == 8
    for row in dataset.rows():
        assert row["final_rank"] is None
        assert row["final_score"] == first[row["index"]]
        assert row["last_ballot"] == (2 if row["index"] in survivors else 1)
        assert row["appearances"] == M  # ballot 2 is open: its votes are not scored yet
        assert row["win_ratio"][1:] == [None, None]


def test_a_draft_has_items_and_nothing_measured():
    study = make_study(start=False)
    dataset = study_dataset(study=study)
    assert len(dataset) == 15
    row = dataset.row(0)
    assert (row["token_a"], row["token_b"], row["area"]) == ("area0-0", "area0-1", "Area0")
    assert (row["final_score"], row["final_rank"], row["last_ballot"]) == (None, None, None)
    assert (row["appearances"], row["wins"], row["ties"], row["win_ratio"]) == (0, 0, 0, [None, None, None])
    assert not dataset.has_scores
    assert dataset.top(50) == []


def test_the_top_of_the_ranking_follows_the_final_ranks(finished_study):
    top = study_dataset(study=finished_study).top(5)
    assert [row["rank"] for row in top] == [1, 2, 3, 4, 5]
    assert [row["final_rank"] for row in top] == [1, 2, 3, 4, 5]
    assert [row["index"] for row in top] == list(
        Item.objects.filter(study=finished_study, final_rank__lte=5)
        .order_by("final_rank")
        .values_list("index", flat=True)
    )


# --- Figure 2 and Figure 4 data --------------------------------------------------------------------


def test_rescaling_data_pairs_x_of_ballot_k_with_the_score_of_ballot_k_minus_1(finished_study):
    for number in (2, 3):
        ballot = Ballot.objects.get(study=finished_study, number=number)
        data = ballot_rescaling(ballot=ballot)
        x = dict(ItemScore.objects.filter(ballot=ballot).values_list("item__index", "win_ratio"))
        previous = dict(
            ItemScore.objects.filter(ballot__study=finished_study, ballot__number=number - 1).values_list(
                "item__index", "score"
            )
        )
        assert data.item_index.tolist() == sorted(x)
        assert data.win_ratio.tolist() == [x[i] for i in sorted(x)]
        assert data.previous_score.tolist() == [previous[i] for i in sorted(x)]
        assert data.rescale_slope == ballot.rescale_slope
        assert data.rescale_slope == pytest.approx(
            rescale_slope(data.win_ratio, data.previous_score), abs=1e-12
        )
    assert ballot_rescaling(ballot=Ballot.objects.get(study=finished_study, number=2)).item_index.size == 8


def test_rescaling_is_refused_for_the_first_ballot(finished_study):
    with pytest.raises(ValueError, match="k ≥ 2"):
        ballot_rescaling(ballot=Ballot.objects.get(study=finished_study, number=1))


def test_scores_by_rank_gives_final_ranks_with_x_per_ballot(finished_study):
    data = scores_by_rank(study=finished_study)
    dataset = study_dataset(study=finished_study)
    assert data.final is True
    assert data.ballot_numbers == (1, 2, 3)
    assert data.rank.tolist() == dataset.rank.tolist()
    assert np.isfinite(data.win_ratio).sum(axis=0).tolist() == [15, 8, 4]
    assert data.score.tolist() == dataset.score.tolist()


def test_scores_by_rank_of_a_running_study_uses_the_current_order(running_study):
    data = scores_by_rank(study=running_study)
    dataset = study_dataset(study=running_study)
    assert data.final is False
    order = final_order(dataset.score, dataset.last_ballot)
    assert data.rank[order].tolist() == list(range(1, 16))


# --- annotators ------------------------------------------------------------------------------------


def cast(study, ballot, annotator, left: int, right: int, choice: str, response_ms: int) -> Vote:
    """A vote on items ``left`` and ``right`` (item indices) as stored by the voting service."""
    items = {item.index: item for item in study.items.all()}
    position = Comparison.objects.filter(ballot=ballot).count()
    comparison = Comparison.objects.create(
        ballot=ballot,
        position=position,
        left_item=items[left],
        right_item=items[right],
        pair_low=min(left, right),
        pair_high=max(left, right),
        status=Comparison.Status.VOTED,
    )
    now = timezone.now()
    assignment = Assignment.objects.create(
        comparison=comparison,
        ballot=ballot,
        annotator=annotator,
        status=Assignment.Status.VOTED,
        issued_at=now,
        expires_at=now + timedelta(minutes=5),
    )
    return Vote.objects.create(
        assignment=assignment,
        comparison=comparison,
        annotator=annotator,
        ballot=ballot,
        left_item=items[left],
        right_item=items[right],
        pair_low=min(left, right),
        pair_high=max(left, right),
        choice=choice,
        response_ms=response_ms,
    )


@pytest.fixture
def hand_votes(django_user_model):
    """Ten votes on six items (indices 0-5) by five annotators, worked out by hand in the tests.

    pair (0, 1): a → 0, b → 0 (shown on the right), c → 1 (shown on the left), d → 0
    pair (2, 3): a → 2, b → 3
    pair (4, 5): a tie, b tie, c → 4 (shown on the right)
    pair (1, 2): e → 1, nobody else
    """
    study = make_study(tokens=4, start=False, allow_ties=True)
    study.status = Study.Status.RUNNING
    study.save()
    ballot = Ballot.objects.create(study=study, number=1, comparison_count=10)
    a = Annotator.objects.create(study=study, participant_id="a")
    b = Annotator.objects.create(study=study, participant_id="b")
    c = Annotator.objects.create(study=study, participant_id="c")
    d = Annotator.objects.create(study=study, session_key="session-d")
    e = Annotator.objects.create(study=study, user=django_user_model.objects.create_user(username="erin"))
    cast(study, ballot, a, 0, 1, "left", 1000)
    cast(study, ballot, a, 2, 3, "left", 3000)
    cast(study, ballot, a, 4, 5, "tie", 2000)
    cast(study, ballot, b, 1, 0, "right", 4000)
    cast(study, ballot, b, 2, 3, "right", 1000)
    cast(study, ballot, b, 4, 5, "tie", 1500)
    cast(study, ballot, c, 1, 0, "left", 700)
    cast(study, ballot, c, 5, 4, "right", 900)
    cast(study, ballot, d, 0, 1, "left", 5000)
    cast(study, ballot, e, 1, 2, "left", 1200)
    return study, {"a": a, "b": b, "c": c, "d": d, "e": e}


def by_label(stats):
    return {row.label: row for row in stats}


def test_annotators_are_labelled_by_participant_user_or_anonymous_id(hand_votes):
    study, people = hand_votes
    stats = annotator_stats(study=study)
    assert [row.label for row in stats] == [
        "participant a",
        "participant b",
        "participant c",
        f"anonymous #{people['d'].pk}",
        "user erin",
    ]
    assert [row.votes for row in stats] == [3, 3, 2, 1, 1]


def test_median_response_time_per_annotator(hand_votes):
    study, _ = hand_votes
    stats = annotator_stats(study=study)
    assert [row.median_response_ms for row in stats] == [2000.0, 1500.0, 800.0, 5000.0, 1200.0]


def test_left_choice_rate_counts_non_tie_votes_and_tie_rate_all_votes(hand_votes):
    study, _ = hand_votes
    stats = annotator_stats(study=study)
    assert [row.left_choice_rate for row in stats] == [1.0, 0.0, 0.5, 1.0, 1.0]
    assert [row.tie_rate for row in stats] == [1 / 3, 1 / 3, 0.0, 0.0, 0.0]


def test_agreement_with_the_majority_compares_chosen_items_not_sides(hand_votes):
    # a: (0,1) others 0,1,0 → 0, agrees; (2,3) others 3 → disagrees; (4,5) others tie, 4 → split.
    # b: (0,1) others 0,1,0 → 0, b chose 0 from the right: agrees; (2,3) disagrees; (4,5) split.
    # c: (0,1) others all 0 → disagrees; (4,5) others tie, tie → tie, c chose 4: disagrees.
    # d: (0,1) others 0,0,1 → 0, agrees. e: nobody else judged (1,2) → None.
    study, _ = hand_votes
    stats = annotator_stats(study=study)
    assert [row.majority_agreement for row in stats] == [0.5, 0.5, 0.0, 1.0, None]
    assert [row.majority_compared for row in stats] == [2, 2, 2, 1, 0]


def test_agreement_with_the_final_ranking_is_none_while_running(hand_votes):
    study, _ = hand_votes
    assert [row.ranking_agreement for row in annotator_stats(study=study)] == [None] * 5


def test_agreement_with_the_final_ranking_skips_ties_and_equal_scores(hand_votes):
    study, _ = hand_votes
    for index, score in enumerate([0.9, 0.6, 0.6, 0.3, 0.5, 0.2]):
        Item.objects.filter(study=study, index=index).update(final_score=score, final_rank=index + 1)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.FINISHED)
    study.refresh_from_db()
    stats = annotator_stats(study=study)
    # a: 0 over 1 yes, 2 over 3 yes (tie skipped); b: 0 over 1 yes, 3 over 2 no; c: 1 over 0 no,
    # 4 over 5 yes; d: 0 over 1 yes; e: 1 and 2 have the same ȳ, nothing to compare.
    assert [row.ranking_agreement for row in stats] == [1.0, 0.5, 0.5, 1.0, None]
    assert [row.ranking_compared for row in stats] == [2, 2, 2, 1, 0]


def test_majority_agreement_leaves_out_the_vote_itself():
    # One pair, votes: low, low, high. Others of vote 0: low, high → split; of vote 2: low, low.
    agrees, compared = majority_agreement([7, 7, 7], [0, 0, 1])
    assert compared.tolist() == [False, False, True]
    assert agrees.tolist() == [False, False, False]


def test_left_choice_rate_of_the_factory_votes(finished_study):
    stats = annotator_stats(study=finished_study)
    for row in stats:
        choices = list(Vote.objects.filter(annotator_id=row.annotator_id).values_list("choice", flat=True))
        assert row.votes == len(choices)
        assert row.left_choice_rate == choices.count("left") / len(choices)
        assert row.tie_rate == 0.0
        # Everybody chose the lower index, so wherever others judged the same pair they agreed.
        assert row.majority_agreement in (1.0, None)
    assert sum(row.votes for row in stats) == 54


def test_agreement_with_the_final_ranking_of_the_factory_votes(finished_study):
    score = dict(finished_study.items.values_list("id", "final_score"))
    stats = annotator_stats(study=finished_study)
    for row in stats:
        better = compared = 0
        for vote in Vote.objects.filter(annotator_id=row.annotator_id):
            chosen, other = (
                (vote.left_item_id, vote.right_item_id)
                if vote.choice == "left"
                else (vote.right_item_id, vote.left_item_id)
            )
            if score[chosen] != score[other]:
                compared += 1
                better += score[chosen] > score[other]
        assert row.ranking_compared == compared
        assert row.ranking_agreement == (better / compared if compared else None)


# --- the page --------------------------------------------------------------------------------------


def svg_documents(html: str) -> list[ET.Element]:
    return [ET.fromstring(match) for match in re.findall(r"<svg\b.*?</svg>", html, flags=re.S)]


@pytest.mark.parametrize("user", [None, "member"])
def test_the_results_page_sends_anyone_but_staff_to_the_admin_login(client, django_user_model, user):
    study = make_study(start=False)
    if user:
        client.force_login(django_user_model.objects.create_user(username=user, password="x"))
    url = reverse("scoring:results", args=[study.slug])
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('admin:login')}?next={url}"


def test_the_results_page_of_an_unknown_study_is_404(staff_client):
    assert staff_client.get(reverse("scoring:results", args=["no-such-study"])).status_code == 404


def test_the_page_of_a_draft_says_nothing_was_collected(staff_client):
    study = make_study(start=False)
    response = staff_client.get(reverse("scoring:results", args=[study.slug]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was collected yet: this study is a draft." in html
    assert svg_documents(html) == []
    assert "15 items" in html


def test_the_page_of_a_finished_study_shows_both_figures_and_the_tables(staff_client, finished_study):
    response = staff_client.get(reverse("scoring:results", args=[finished_study.slug]))
    html = response.content.decode()
    assert response.status_code == 200
    plots = svg_documents(html)
    titles = [plot.find("{http://www.w3.org/2000/svg}title").text for plot in plots]
    assert titles == [
        "Ballot 2: x(2) against ȳ(1)",
        "Ballot 3: x(3) against ȳ(2)",
        "Scores by ballot against rank",
    ]
    slope = Ballot.objects.get(study=finished_study, number=2).rescale_slope
    assert f"b̂ = {slope:.4f}" in html
    assert "Final ranking: top 15 of 15 items" in html
    assert html.count('<th scope="row">participant p') == 6
    for name in ("export-dataset-csv", "export-dataset-json", "export-votes-csv"):
        assert f'href="{reverse(f"scoring:{name}", args=[finished_study.slug])}"' in html
    assert "54" in html  # votes


def test_the_page_of_a_running_study_shows_what_there_is(staff_client, running_study):
    html = staff_client.get(reverse("scoring:results", args=[running_study.slug])).content.decode()
    plots = svg_documents(html)
    assert [plot.find("{http://www.w3.org/2000/svg}title").text for plot in plots] == [
        "Scores by ballot against rank (so far)"
    ]
    assert "This plot appears once ballot 2 has closed." in html
    assert "Current ranking: top 15 of 15 items" in html
    assert '<progress max="16" value="5"' in html


@hypothesis_settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2)), min_size=1, max_size=40),
)
def test_majority_agreement_matches_a_vote_by_vote_count(votes):
    pair_key = [pair for pair, _ in votes]
    outcome = [result for _, result in votes]
    agrees, compared = majority_agreement(pair_key, outcome)
    for number, (pair, result) in enumerate(votes):
        others = Counter(
            r for other, (p, r) in enumerate(votes) if p == pair and other != number
        ).most_common()
        has_majority = bool(others) and (len(others) == 1 or others[0][1] > others[1][1])
        assert compared[number] == has_majority
        assert agrees[number] == (has_majority and others[0][0] == result)


@pytest.mark.parametrize(("ballots", "said"), [(1, "= 1 ballot,"), (3, "= 3 ballots,")])
def test_the_plan_line_counts_its_ballots_in_words(staff_client, ballots, said):
    study = make_study(start=False, ballot_count=ballots)
    html = staff_client.get(reverse("scoring:results", args=[study.slug])).content.decode()
    assert f"n<sub>b</sub> {said}" in html


def test_the_page_counts_simulated_annotators_votes_apart_and_marks_them(staff_client):
    from tests.factories import disagreeing_crowd

    study = make_study(seed=SEED)
    people = annotators(study, 2, prefix="prolific-")
    machines = [
        Annotator.objects.create(
            study=study, participant_id=f"sim-{i}", simulated=True, consented_at=study.started_at
        )
        for i in range(4)
    ]
    vote_until(study, voters=people + machines, choose=disagreeing_crowd(study))
    human = Vote.objects.filter(ballot__study=study, annotator__in=people).count()
    html = staff_client.get(reverse("scoring:results", args=[study.slug])).content.decode()
    assert f"54 votes: {human} by 2 people, {54 - human} by 4 simulated annotators" in html
    assert "Annotators: 6, 4 simulated," in html
    for i in range(4):
        assert (
            f'<th scope="row">participant sim-{i} <span class="simulated-note">simulated</span></th>' in html
        )
    assert '<th scope="row">participant prolific-0</th>' in html


def plot_point_tables(html: str) -> list[dict]:
    """Each plot's points table (its text alternative): caption, header and rows of cell texts."""
    tables = []
    for block in re.findall(r'<details class="plot-points">(.*?)</details>', html, flags=re.S):
        table = ET.fromstring(re.search(r"<table.*?</table>", block, flags=re.S).group(0))
        tables.append(
            {
                "summary": re.search(r"<summary>(.*?)</summary>", block).group(1),
                "caption": table.find("caption").text,
                "header": [th.text for th in table.iter("th")],
                "rows": [[td.text for td in tr.iter("td")] for tr in table.find("tbody").iter("tr")],
            }
        )
    return tables


def plotted_points(plot: ET.Element) -> int:
    return len(
        plot.findall(".//{http://www.w3.org/2000/svg}g[@class='series']/{http://www.w3.org/2000/svg}circle")
    )


def test_each_plot_of_the_results_page_has_its_points_as_a_table(staff_client, finished_study):
    html = staff_client.get(reverse("scoring:results", args=[finished_study.slug])).content.decode()
    plots, tables = svg_documents(html), plot_point_tables(html)

    assert [table["caption"] for table in tables] == [
        "Ballot 2: x(2) and ȳ(1) of each item plotted",
        "Ballot 3: x(3) and ȳ(2) of each item plotted",
        "x(k) of each ballot and ȳ of each item, by its final rank",
    ]
    assert [table["summary"] for table in tables] == [
        "The plotted points as a table (8 rows)",
        "The plotted points as a table (4 rows)",
        "The plotted points as a table (15 rows)",
    ]
    # Every point drawn is a figure in a table: one per item in Figure 2; in Figure 4, x(1) of 15 items,
    # x(2) of 8 and x(3) of 4, and 15 ȳ (the ballots' sizes), 42 points.
    assert [plotted_points(plot) for plot in plots] == [8, 4, 42]
    figure_4 = tables[2]
    assert figure_4["header"] == ["Rank", "Item", "x(1)", "x(2)", "x(3)", "ȳ"]
    assert sum(cell != "—" for row in figure_4["rows"] for cell in row[2:]) == 42

    # The values are the stored ones: x(k) of each ballot and the scores.
    labels = {item.index: f"{item.token_a.text} – {item.token_b.text}" for item in finished_study.items.all()}
    stored = {
        (index, number): (ratio, score)
        for index, number, ratio, score in ItemScore.objects.filter(ballot__study=finished_study).values_list(
            "item__index", "ballot__number", "win_ratio", "score"
        )
    }
    by_label = {label: index for index, label in labels.items()}
    for number, table in ((2, tables[0]), (3, tables[1])):
        assert table["header"] == ["Item", f"x({number})", f"ȳ({number - 1})"]
        for label, x, previous in table["rows"]:
            index = by_label[label]
            assert (x, previous) == (
                f"{stored[index, number][0]:.4f}",
                f"{stored[index, number - 1][1]:.4f}",
            )
        assert [float(row[1]) for row in table["rows"]] == sorted(
            (float(row[1]) for row in table["rows"]), reverse=True
        )
    # Ballot 3 holds items 0 to 3, and the lower index always wins: item 0 wins all, item 3 none.
    assert sorted(by_label[row[0]] for row in tables[1]["rows"]) == [0, 1, 2, 3]
    assert (tables[1]["rows"][0][:2], tables[1]["rows"][-1][:2]) == (
        [labels[0], "1.0000"],
        [labels[3], "0.0000"],
    )
    final = {
        index: (rank, score)
        for index, rank, score in finished_study.items.values_list("index", "final_rank", "final_score")
    }
    assert [row[0] for row in figure_4["rows"]] == [str(rank) for rank in range(1, 16)]
    for row in figure_4["rows"]:
        index = by_label[row[1]]
        assert (row[0], row[5]) == (str(final[index][0]), f"{final[index][1]:.4f}")
        last = max(number for (i, number) in stored if i == index)
        assert row[2:5] == [f"{stored[index, k][0]:.4f}" if k <= last else "—" for k in (1, 2, 3)]
    assert figure_4["rows"][0][1:5] == [labels[0], "1.0000", "1.0000", "1.0000"]  # item 0 wins every vote


def test_a_running_studys_points_table_is_by_its_current_rank(staff_client, running_study):
    html = staff_client.get(reverse("scoring:results", args=[running_study.slug])).content.decode()
    tables = plot_point_tables(html)
    assert [table["caption"] for table in tables] == [
        "x(k) of each ballot and ȳ of each item, by its current rank"
    ]
    assert [row[0] for row in tables[0]["rows"]] == [str(rank) for rank in range(1, 16)]
