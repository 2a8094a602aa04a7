"""The instrument card: its dict on a finished study, the Markdown datasheet, the page and the downloads.

The study of most tests: 8 tokens in one area → 28 items; n_b = 2, α = 0.5, M = 8 → ballots of 28 and
14 items with 8·28/2 = 112 and 8·14/2 = 56 comparisons, N_comp = 168, M_top = 16, M_unif = 12; six
annotators vote round-robin (the lower item index wins) until the study finishes.
"""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from collection.lifecycle import study_start
from collection.models import Study
from collection.studies import study_duplicate
from metrics.card import count, number, percent
from metrics.card_render import card_markdown
from metrics.instrument import instrument_card
from metrics.models import StudyFigure
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

pytestmark = pytest.mark.django_db

SVG = "{http://www.w3.org/2000/svg}"
HEADINGS = (
    "## 1. Measurement procedure (Welty §5.1)",
    "## 2. Principle of measurement (Welty §5.2)",
    "## 3. Precision (Welty §5.6)",
    "## 4. Repeatability (Welty §5.7)",
    "## 5. Reproducibility (Welty §5.8)",
    "## 6. Resolution (Welty §5.9)",
    "## 7. Chance level (Lombardo et al. Eq. 8–9)",
    "## 8. How to cite, and what it cannot tell",
    "## 9. Changes after the start (Welty §5.1)",
    "## 10. Score models (Lombardo et al. Eq. 8–9)",
)
NAN = re.compile(r"\b(nan|inf|infinity)\b", re.IGNORECASE)


def finish(study: Study, prefix: str = "p") -> Study:
    vote_until(
        study, voters=annotators(study, 6, prefix=prefix), choose=disagreeing_crowd(study, seed=len(prefix))
    )
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    return study


@pytest.fixture
def finished_study():
    return finish(make_study(tokens=8, ballot_count=2, appearances=8, seed=3))


def labels_of(study: Study) -> dict[int, str]:
    return {i: f"{a} – {b}" for i, a, b in study.items.values_list("index", "token_a__text", "token_b__text")}


def page_svgs(html: str) -> dict[str, ET.Element]:
    """The SVG plots of the card page, by figure name, parsed as XML."""
    figure = r'<figure class="card-figure" id="figure-(\w+)">\s*<div class="plot-scroll"[^>]*>(<svg.*?</svg>)'
    found = re.findall(figure, html, re.DOTALL)
    return {name: ET.fromstring(svg) for name, svg in found}


# --- the card dict ---------------------------------------------------------------------------------


def test_the_card_counts_the_items_votes_and_annotators_of_the_study(finished_study):
    card = instrument_card(study=finished_study)
    procedure = card["procedure"]
    comparisons = list(finished_study.ballots.order_by("number").values_list("comparison_count", flat=True))
    assert (procedure["items"], procedure["tokens"], procedure["annotators"]) == (28, 8, 6)
    assert comparisons == [112, 56]
    assert procedure["votes"] == sum(comparisons) == 168
    assert (procedure["plan"]["sizes"], procedure["plan"]["comparisons"]) == ([28, 14], [112, 56])
    assert [b["votes_recorded"] for b in procedure["ballots"]] == [112, 56]
    assert procedure["votes_per_annotator"]["count"] == 6
    assert procedure["votes_per_annotator"]["mean"] == 168 / 6


def test_precision_gives_every_item_an_interval_around_its_score(finished_study):
    precision = instrument_card(study=finished_study)["precision"]
    items = precision["items"]
    assert [row["index"] for row in items] == list(range(28))
    assert precision["replicates"] == 1000
    assert all(row["sd"] >= 0 for row in items)
    assert precision["mean_sd"] == pytest.approx(sum(row["sd"] for row in items) / 28)
    inside = [row["lower"] <= row["score"] <= row["upper"] for row in items]
    assert sum(inside) >= 0.9 * len(items)


def test_chance_level_of_weighted_coefficients_is_below_zero(finished_study):
    chance = instrument_card(study=finished_study)["chance"]
    assert chance["rho_w"]["mean"] < 0
    assert chance["tau_w"]["mean"] < 0
    assert chance["draws"] == 1000


# --- Markdown --------------------------------------------------------------------------------------


def test_the_markdown_has_every_section_and_the_exact_plan(finished_study):
    text = card_markdown(instrument_card(study=finished_study))
    headings = [line for line in text.splitlines() if line.startswith("## ") and line != "## Appendix"]
    assert headings == list(HEADINGS)
    assert text.startswith(f"# Instrument card: {finished_study.name}\n")
    assert "| 1 | 28 | 112 | 14 | closed | 112 |" in text
    assert "| 2 | 14 | 56 | — | closed | 56 |" in text
    assert "- **Comparisons planned N_comp (Lombardo et al. Eq. 3)**: 168" in text
    assert "- **Appearances of a top item M_top = n_b·M (Eq. 4)**: 16, against M_unif = 12.0" in text
    assert "- **Annotators (with votes in closed ballots)**: 6" in text
    assert "- **Votes measured (in closed ballots)**: 168" in text
    assert "No finished replication: duplicate the study to measure it" in text
    assert NAN.search(text) is None


def test_the_markdown_reads_the_numbers_of_the_card(finished_study):
    card = instrument_card(study=finished_study)
    text = card_markdown(card)
    precision, resolved, chance = card["precision"], card["resolution"], card["chance"]
    assert f"- **Mean SD of ȳ (mean standard error)**: {number(precision['mean_sd'])}" in text
    assert f"±{number(2 * precision['sd_quantiles']['median'])} on the 0 to 1 scale" in text
    assert f"- **Resolution**: {number(resolved['resolution'])} on the ȳ scale, at 95% agreement" in text
    above, total = resolved["item_pairs_above_resolution"], resolved["item_pairs_total"]
    assert total == 28 * 27 // 2
    assert f"{count(above)} of {count(total)} ({percent(above / total)})" in text
    rho_w = chance["rho_w"]
    assert (
        f"- **ρ_w of unrelated rankings (mean ± SD)**: {number(rho_w['mean'])} ± {number(rho_w['sd'])}"
        in text
    )


def test_unmeasured_and_non_finite_values_read_not_measured(finished_study):
    card = copy.deepcopy(instrument_card(study=finished_study))
    card["precision"]["mean_sd"] = float("nan")
    card["precision"]["items"][0].update(sd=float("nan"), lower=None, upper=None)
    card["chance"]["rho_w"]["sd"] = float("inf")
    card["repeatability"]["split_half"]["rho"]["spearman_brown"] = None
    text = card_markdown(card)
    assert NAN.search(text) is None
    assert "- **Mean SD of ȳ (mean standard error)**: not measured" in text
    assert "- **ρ corrected by Spearman-Brown 2r/(1+r)**: not measured" in text


def test_an_undefined_resolution_says_why():
    card = {
        "study": {"name": "S", "slug": "s", "status": "finished"},
        "resolution": {
            "target": 0.95,
            "resolution": None,
            "compared_pairs": 40,
            "overall_agreement": 0.6,
            "curve": {"threshold": [0.1, 0.3], "agreement": [0.6, 0.5], "pairs": [40, 2]},
            "item_pairs_total": 45,
            "item_pairs_above_resolution": None,
        },
    }
    text = card_markdown(card)
    assert "- **Resolution**: undefined" in text
    assert "Undefined: the agreement does not reach 95% at any threshold" in text
    assert "| 0.100 | 40 | 60.0% |" in text  # the curve at t = 0.1
    assert "Not measured yet: precision needs the votes of at least one closed ballot." in text
    assert NAN.search(text) is None


def test_krippendorff_alpha_is_read_as_a_figure_of_the_hardest_pairs(finished_study):
    card = copy.deepcopy(instrument_card(study=finished_study))
    card["repeatability"]["krippendorff_alpha"] = {"alpha": 0.41234, "pairs": 17, "votes": 40}
    text = card_markdown(card)
    assert "- **Krippendorff's α (nominal: left item, right item, tie)**: 0.412" in text
    assert "- **Item pairs judged more than once**: 17" in text
    assert "mostly top items compared again in the last ballots, the hardest ones" in text


def test_numbers_keep_three_significant_digits():
    assert [number(v) for v in (0.1102338, 1.0, -0.3080377, 0.04441824, 1008.0, 0.0)] == [
        "0.110",
        "1.00",
        "-0.308",
        "0.0444",
        "1008",
        "0",
    ]
    assert [number(v) for v in (None, float("nan"), float("-inf"))] == ["not measured"] * 3
    assert (count(61425), percent(0.9379310), percent(None)) == ("61,425", "93.8%", "not measured")


# --- the page and the downloads --------------------------------------------------------------------


def test_the_page_draws_the_precision_and_resolution_plots(client, finished_study):
    card = instrument_card(study=finished_study)
    response = client.get(reverse("metrics:card", args=[finished_study.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    plots = page_svgs(html)
    assert sorted(plots) == ["precision", "resolution"]
    precision_points = plots["precision"].findall(f"{SVG}g[@class='series']/{SVG}circle")
    assert len(precision_points) == 28
    curve_points = plots["resolution"].findall(f"{SVG}g[@class='series']/{SVG}circle")
    assert len(curve_points) == len(card["resolution"]["curve"]["threshold"])
    legend = [t.text for t in plots["resolution"].iter(f"{SVG}text")]
    assert "95% agreement" in legend
    assert f"resolution = {number(card['resolution']['resolution'])}" in legend
    assert NAN.search(html) is None


def test_the_page_links_the_downloads_and_names_the_items(client, finished_study):
    html = client.get(reverse("metrics:card", args=[finished_study.slug])).content.decode()
    for name in ("metrics:card-markdown", "metrics:card-json"):
        assert f'href="{reverse(name, args=[finished_study.slug])}" download' in html
    for heading in HEADINGS:
        assert heading.removeprefix("## ") in html
    assert f"<td>{labels_of(finished_study)[0]}</td>" in html


def test_the_markdown_download_is_the_datasheet(client, finished_study):
    response = client.get(reverse("metrics:card-markdown", args=[finished_study.slug]))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert (
        response["Content-Disposition"] == f'attachment; filename="{finished_study.slug}-instrument-card.md"'
    )
    expected = card_markdown(instrument_card(study=finished_study), item_labels=labels_of(finished_study))
    assert response.content.decode("utf-8") == expected


def test_the_json_download_is_the_card(client, finished_study):
    response = client.get(reverse("metrics:card-json", args=[finished_study.slug]))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="{finished_study.slug}-instrument-card.json"'
    )

    def refuse(constant):
        raise AssertionError(f"{constant} in the JSON")

    assert json.loads(response.content, parse_constant=refuse) == instrument_card(study=finished_study)


def test_a_draft_says_nothing_was_measured(client):
    draft = make_study(tokens=8, ballot_count=2, appearances=8, start=False)
    response = client.get(reverse("metrics:card", args=[draft.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Nothing has been measured yet: this study is a draft." in html
    assert "<svg" not in html
    for name in ("metrics:card-markdown", "metrics:card-json"):
        download = client.get(reverse(name, args=[draft.slug]))
        assert download.status_code == 409
        assert download.content.decode().startswith(
            f"Study {draft.slug!r} is a draft: nothing has been measured yet."
        )
    assert not StudyFigure.objects.filter(study=draft).exists()


def test_an_unknown_study_is_not_found(client):
    for name in ("metrics:card", "metrics:card-markdown", "metrics:card-json"):
        assert client.get(reverse(name, args=["no-such-study"])).status_code == 404


def test_a_running_study_is_provisional_and_unnamed(client):
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=3)
    vote_until(study, voters=annotators(study, 6), max_votes=120)  # ballot 1 closed, ballot 2 open
    html = client.get(reverse("metrics:card", args=[study.slug])).content.decode()
    assert "Provisional: the study is still running." in html
    assert sorted(page_svgs(html)) == ["precision", "resolution"]
    assert "<td>item 0</td>" in html  # the current order is not tied to tokens while annotators vote
    assert labels_of(study)[0] not in html
    text = client.get(reverse("metrics:card-markdown", args=[study.slug])).content.decode()
    assert "> **Provisional: the study is still running." in text
    assert "- **Votes measured (in closed ballots)**: 112" in text


def test_a_running_study_without_a_closed_ballot_has_nothing_measured_yet(client):
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=3)
    vote_until(study, voters=annotators(study, 6), max_votes=20)
    html = client.get(reverse("metrics:card", args=[study.slug])).content.decode()
    assert "Provisional: the study is still running." in html
    assert "Not measured yet: precision needs the votes of at least one closed ballot." in html
    assert page_svgs(html) == {}
    assert NAN.search(html) is None


# --- cache and reproducibility ---------------------------------------------------------------------


def test_the_card_is_recomputed_when_a_vote_closes_a_ballot():
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=3)
    voters = annotators(study, 6)
    vote_until(study, voters=voters, max_votes=112 + 55)  # ballot 2 lacks one vote
    before = instrument_card(study=study)
    assert (before["study"]["status"], before["procedure"]["votes"]) == ("running", 112)
    assert instrument_card(study=study) == before  # read from the cache
    vote_until(study, voters=voters, max_votes=1)  # closes ballot 2, and the study finishes
    after = instrument_card(study=study)
    assert (after["study"]["status"], after["procedure"]["votes"]) == ("finished", 168)
    assert StudyFigure.objects.filter(study=study, kind="card").count() == 1


def test_a_finished_duplicate_reports_reproducibility(client, finished_study):
    replication = study_duplicate(study=finished_study)
    # A duplicate draws a new random seed; fixed here so that its schedules, and so the ρ asserted
    # below, are the same on every run (with a random seed, ρ fell to 0.41 in one CI run).
    Study.objects.filter(pk=replication.pk).update(seed=finished_study.seed + 1)
    replication.refresh_from_db()
    study_start(study=replication)
    finish(replication, prefix="q")
    entries = instrument_card(study=replication)["reproducibility"]
    assert [(e["study"], e["items"]) for e in entries] == [(finished_study.slug, 28)]
    assert entries[0]["rho"] > 0.5  # both crowds let the lower index win
    original = instrument_card(study=finished_study)["reproducibility"]
    assert [(e["study"], e["items"]) for e in original] == [(replication.slug, 28)]
    text = client.get(reverse("metrics:card-markdown", args=[replication.slug])).content.decode()
    assert f"| {finished_study.name} ({finished_study.slug}) | 28 | {number(entries[0]['rho'])} |" in text
    assert "No finished replication" not in text


def test_the_original_card_learns_of_a_replication_that_finishes_later(finished_study):
    assert instrument_card(study=finished_study)["reproducibility"] == []
    replication = study_duplicate(study=finished_study)
    study_start(study=replication)
    finish(replication, prefix="q")
    entries = instrument_card(study=finished_study)["reproducibility"]
    assert [e["study"] for e in entries] == [replication.slug]


def test_a_study_that_finishes_has_its_card_computed_in_the_background():
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=3)
    voters = annotators(study, 6)
    vote_until(study, voters=voters, max_votes=112 + 55)  # ballot 2 lacks one vote
    assert not StudyFigure.objects.filter(study=study, kind="card").exists()

    vote_until(study, voters=voters, max_votes=1)  # closes ballot 2, and the study finishes

    card = StudyFigure.objects.get(study=study, kind="card").value
    assert (card["study"]["status"], card["procedure"]["votes"]) == ("finished", 168)
    with CaptureQueriesContext(connection) as queries:
        assert instrument_card(study=study) == card
    assert [q["sql"] for q in queries if q["sql"].startswith(("INSERT", "UPDATE"))] == []  # read back


def test_a_replication_that_finishes_refreshes_the_card_of_the_original(finished_study):
    assert StudyFigure.objects.get(study=finished_study, kind="card").value["reproducibility"] == []
    replication = study_duplicate(study=finished_study)
    study_start(study=replication)

    finish(replication, prefix="q")

    refreshed = StudyFigure.objects.get(study=finished_study, kind="card").value
    assert [entry["study"] for entry in refreshed["reproducibility"]] == [replication.slug]


# --- how fragile the top is ------------------------------------------------------------------------


def test_the_fragility_table_rescores_to_the_studys_own_final_scores(finished_study):
    # The design held fixed and every vote kept, the recomputation is the close's own: the same ȳ.
    from collection import arrays
    from metrics.instrument import fragility_table
    from metrics.selectors import study_votes
    from scoring.fragility import rescore

    table = fragility_table(study_votes(study=finished_study))
    stored, _, last_ballot = arrays.final_scores(study_id=finished_study.pk, item_count=table.item_count)
    np.testing.assert_allclose(rescore(table), stored, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(table.last_ballot, last_ballot)
    assert len(table) == instrument_card(study=finished_study)["procedure"]["votes"]


def test_the_card_says_how_few_votes_change_the_top_item_and_the_top_k_set(finished_study):
    from metrics.instrument import fragility_table
    from metrics.selectors import study_votes
    from scoring.fragility import removals_to_change, top_of

    card = instrument_card(study=finished_study)
    entries = card["fragility"]["entries"]
    k = finished_study.default_top_k(28)  # a tenth of the 28 items: 2
    assert [entry["k"] for entry in entries] == [1, k]
    table = fragility_table(study_votes(study=finished_study))
    for entry in entries:
        found = removals_to_change(table, entry["k"], max_steps=card["fragility"]["max_steps"])
        assert (entry["votes"], entry["total"], entry["exact"]) == (found.votes, 168, False)
        keep = np.ones(len(table), dtype=bool)
        keep[list(found.removed)] = False
        assert top_of(table, entry["k"], keep) != top_of(table, entry["k"])
    markdown = card_markdown(instrument_card(study=finished_study), item_labels=labels_of(finished_study))
    first = entries[0]
    assert (
        f"- **Votes whose removal changes the top item**: at most {count(first['votes'])} of 168 votes "
        f"({percent(first['share'], 3)})" in markdown
    )


# --- excluded annotators ---------------------------------------------------------------------------


def test_the_card_reports_an_exclusion_by_counts_and_never_says_who(client):
    from collection.exclusion import annotator_exclude
    from collection.models import Annotator
    from scoring.exclusion import scores_without_excluded

    study = finish(make_study(tokens=8, ballot_count=2, appearances=8, seed=3), prefix="ex")
    assert instrument_card(study=study)["exclusions"] is None
    careless = Annotator.objects.filter(study=study).order_by("pk").first()
    annotator_exclude(annotator=careless, reason="clicked at random", rule="")

    card = instrument_card(study=study)  # the exclusion log is part of what the cached card depends on
    excluded = card["exclusions"]
    expected = scores_without_excluded(study=study)
    assert excluded["annotators"] == 1
    assert excluded["votes_excluded"] == expected.votes_excluded == careless.votes.count()
    assert excluded["votes_closed"] == 168
    assert excluded["by_reason"] == {
        "researcher": {"annotators": 1, "votes_excluded": careless.votes.count(), "votes_set_aside": 0}
    }
    markdown = card_markdown(card, item_labels=labels_of(study))
    assert f"- **Their votes in the closed ballots**: {careless.votes.count()} of 168" in markdown
    page = client.get(reverse("metrics:card", args=[study.slug])).content.decode()
    assert "Annotators excluded" in page
    assert careless.participant_id not in page and "clicked at random" not in page


# --- simulated annotators and checks (issue 34 §4.8) -----------------------------------------------


def simulated_annotators(study: Study, count: int) -> list:
    """Annotators as ``simulate_voters`` makes them: marked simulated."""
    from collection.models import Annotator

    return [
        Annotator.objects.create(
            study=study, participant_id=f"sim-{i}", simulated=True, consented_at=study.started_at
        )
        for i in range(count)
    ]


def test_a_card_of_simulated_votes_says_so_at_its_head_and_offers_no_citation(client):
    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=3)
    person = annotators(study, 1, prefix="prolific-")
    assert vote_until(study, voters=person, choose=disagreeing_crowd(study), max_votes=9) == 9
    vote_until(study, voters=simulated_annotators(study, 5), choose=disagreeing_crowd(study, seed=7))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    card = instrument_card(study=study)
    assert card["crowd"] == {
        "people": {"annotators": 1, "votes": 9},
        "simulated": {"annotators": 5, "votes": 159},
    }
    text = card_markdown(card, item_labels=labels_of(study))
    said = "168 votes: 9 by 1 person, 159 by 5 simulated annotators"
    notices = [line for line in text.splitlines() if line.startswith("> **")]
    assert notices[0].startswith(f"> **Simulated votes: {said} in the closed ballots (94.6%).")
    assert "- **Annotators (with votes in closed ballots)**: 6: 1 person and 5 simulated annotators" in text
    assert f"- **Votes measured (in closed ballots)**: {said}" in text
    assert "How to cite:" not in text
    assert "No citation: 159 of the 168 votes were cast by simulated annotators" in text
    assert "publishable" not in text
    # One person never judges a pair twice: their votes alone have no α; that of every vote is not called
    # publishable.
    assert card["repeatability"]["krippendorff_alpha"]["pairs"] == 12
    assert card["repeatability"]["krippendorff_alpha_people"] is None
    assert "The people's votes alone repeat too few pairs for an α of their own." in text
    assert "of the votes (159 of 168) were cast by simulated annotators: α measures how consistently" in text
    html = client.get(reverse("metrics:card", args=[study.slug])).content.decode()
    assert f"Simulated votes: {said} in the closed ballots (94.6%)." in html
    assert "How to cite:" not in html


def test_the_card_gives_the_alpha_of_the_peoples_votes_alone_beside_that_of_every_vote():
    import krippendorff

    from collection.arrays import study_votes
    from metrics.metrology import pair_value_counts

    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=3)
    people = annotators(study, 4, prefix="prolific-")
    vote_until(study, voters=people + simulated_annotators(study, 2), choose=disagreeing_crowd(study))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    votes = study_votes(study_id=study.pk, closed_only=True)
    theirs = np.isin(votes.annotator, [person.pk for person in people])
    assert theirs.sum() == 112  # round-robin: four votes in six
    winner_is_low = np.where(votes.left < votes.right, votes.outcome, 1.0 - votes.outcome)
    units, counts = pair_value_counts(votes.pair_low[theirs], votes.pair_high[theirs], winner_is_low[theirs])
    assert units.size >= 2
    expected = krippendorff.alpha(value_counts=counts, level_of_measurement="nominal")
    card = instrument_card(study=study)
    assert card["repeatability"]["krippendorff_alpha_people"] == {
        "alpha": pytest.approx(expected),
        "pairs": int(units.size),
        "votes": int(counts.sum()),
    }
    text = card_markdown(card)
    assert f"- **Krippendorff's α of the people's votes alone**: {number(expected)}" in text
    assert f"- **Item pairs people judged more than once**: {units.size}" in text


def test_a_card_of_people_only_cites_and_says_nothing_of_simulation(finished_study):
    card = instrument_card(study=finished_study)
    assert card["crowd"] == {
        "people": {"annotators": 6, "votes": 168},
        "simulated": {"annotators": 0, "votes": 0},
    }
    text = card_markdown(card)
    assert "How to cite: “" in text
    assert "ranked from 168 votes by 6 annotators" in text
    assert "simulated" not in text.lower()


def answer_checks(annotator, choice_of: dict) -> None:
    """The annotator answers every check of ``choice_of`` (check → "left" or "right"), served by the lease."""
    from collection.voting import comparison_next_for, vote_record

    for _ in choice_of:
        served = comparison_next_for(annotator=annotator, check_due=True).assignment
        check = next(check for check in choice_of if check.pk == served.quality_check_id)
        vote_record(annotator=annotator, assignment_id=served.pk, choice=choice_of[check])


def test_the_card_reports_the_check_rate_and_the_accuracy_on_checks_with_counts():
    from collection.checks import check_create

    study = make_study(tokens=8, ballot_count=2, appearances=8, seed=3, check_rate=0.1)
    items = list(study.items.order_by("index"))
    gold = check_create(study=study, kind="gold", left_item=items[0], right_item=items[27], expected="left")
    other = check_create(study=study, kind="gold", left_item=items[1], right_item=items[26], expected="right")
    told = check_create(
        study=study,
        kind="instructed",
        left_item=items[2],
        right_item=items[25],
        expected="left",
        instruction="For this one, choose the pair on the left.",
    )
    right = {gold: "left", other: "right", told: "left"}
    wrong = {gold: "right", other: "left", told: "right"}
    people = annotators(study, 6)
    patterns = ["RRR", "RWR", "WRR", "RRW", "RRR", "WWR"]  # gold 8 of 12 right, instructed 5 of 6
    for annotator, pattern in zip(people, patterns, strict=True):
        answer_checks(
            annotator,
            {
                check: (right if mark == "R" else wrong)[check]
                for check, mark in zip((gold, other, told), pattern, strict=True)
            },
        )
    robot = simulated_annotators(study, 1)
    answer_checks(robot[0], {gold: "left", other: "left", told: "right"})  # gold 1 of 2, instructed 0 of 1
    # Every annotator has answered every check: no further lease serves one, and they vote until the end.
    vote_until(study, voters=people + robot, choose=disagreeing_crowd(study))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    card = instrument_card(study=study)
    assert card["checks"]["gold"] == {
        "checks": 2,
        "people": {"annotators": 6, "answered": 12, "correct": 8},
        "simulated": {"annotators": 1, "answered": 2, "correct": 1},
    }
    text = card_markdown(card)
    assert (
        "- **Checks**: 10% of the comparisons served are checks, from 2 gold comparisons and 1 "
        "instructed-response check; each annotator answers each check once" in text
    )
    assert (
        "- **Gold comparisons answered as expected (all ballots)**: 8 of 12 answers (66.7%), by 6 people; "
        "by simulated annotators 1 of 2 (50.0%)" in text
    )
    assert (
        "- **Instructed responses followed (all ballots)**: 5 of 6 answers (83.3%), by 6 people; "
        "by simulated annotators 0 of 1 (0.0%)" in text
    )


def test_a_card_without_checks_says_none_were_mixed_in(finished_study):
    text = card_markdown(instrument_card(study=finished_study))
    assert (
        "- **Checks**: none: no gold comparison or instructed-response check was mixed into the comparisons"
        in text
    )
