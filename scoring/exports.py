"""Selectors of the exports: every vote, every check answer and every annotator as CSV rows, and the study part of the JSON
dataset.

The dataset itself is ``scoring.selectors.study_dataset``; its exports add every score model's score and rank
(``score_<model>``, ``rank_<model>``, ``scoring.side_by_side``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from collection.crowd import OUTCOMES, PLATFORM_PARAMETERS, participant_code
from collection.models import Annotator, CheckAnswer, Exclusion, Item, Study, Vote
from collection.studies import study_area_plans
from common.errors import ServiceError
from scoring.selectors import StudyDataset, annotator_figures, study_overview
from scoring.side_by_side import score_columns, study_model_scores

# The annotator's crowd platform parameters and, with the study's participant_codes, their own codes.
CROWD_COLUMNS = (*PLATFORM_PARAMETERS.values(), *(f"code_{outcome}" for outcome in OUTCOMES))

VOTE_COLUMNS = (
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
    *CROWD_COLUMNS,
)


@dataclass(frozen=True)
class AnnotatorCells:
    """What every export says of an annotator: label, participant id, whether simulated, and one cell per
    ``CROWD_COLUMNS`` (codes blank without participant_codes, ``collection.crowd.participant_code``)."""

    label: str
    participant_id: str | None
    simulated: bool
    crowd: list


def _annotator_cells(study: Study) -> dict[int, AnnotatorCells]:
    """Every annotator of the study, by id (one query)."""
    cells = {}
    for annotator in Annotator.objects.filter(study=study).select_related("user").order_by("pk"):
        codes = [
            participant_code(study=study, annotator_id=annotator.pk, outcome=outcome)
            if study.participant_codes
            else ""
            for outcome in OUTCOMES
        ]
        platform = [getattr(annotator, field) for field in PLATFORM_PARAMETERS.values()]
        cells[annotator.pk] = AnnotatorCells(
            label=str(annotator),
            participant_id=annotator.participant_id,
            simulated=annotator.simulated,
            crowd=[*platform, *codes],
        )
    return cells


def study_vote_rows(*, study: Study, chunk_size: int = 2000) -> Iterator[list]:
    """Every vote of the study in the order recorded, one list of cells per ``VOTE_COLUMNS``.

    Each of the two items comes with its semantic area; ``same_area`` is 1 when both items are of one
    area, 0 for a comparison across areas (possible in a joint study only, never in one ranked per area).
    Streams from the database in chunks, so memory does not grow with the number of votes.
    """
    people = _annotator_cells(study)
    item_cells = {  # tokens and area of each item
        item_id: (token_a, token_b, area)
        for item_id, token_a, token_b, area in Item.objects.filter(study=study).values_list(
            "id", "token_a__text", "token_b__text", "area__name"
        )
    }
    votes = (
        Vote.objects.filter(ballot__study=study)
        .order_by("pk")
        .values_list(
            "pk",
            "ballot__number",
            "comparison__position",
            "annotator_id",
            "left_item_id",
            "right_item_id",
            "choice",
            "response_ms",
            "client_response_ms",
            "created_at",
        )
    )
    for pk, ballot, position, annotator_id, left, right, choice, response, client, created in votes.iterator(
        chunk_size=chunk_size
    ):
        chosen = left if choice == "left" else right if choice == "right" else None
        yield [
            pk,
            ballot,
            position,
            annotator_id,
            people[annotator_id].label,
            int(people[annotator_id].simulated),
            left,
            *item_cells[left],
            right,
            *item_cells[right],
            int(item_cells[left][2] == item_cells[right][2]),
            choice,
            chosen,
            response,
            client,
            created.isoformat(),
            *people[annotator_id].crowd,
        ]


ANNOTATOR_CSV_COLUMNS = (
    "annotator_id",
    "annotator",
    "participant_id",
    "simulated",
    "votes",
    "median_response_ms",
    "fast_share",
    "left_choice_rate",
    "left_p_value",
    "left_p_holm",
    "tie_rate",
    "majority_agreement",
    "majority_compared",
    "ranking_agreement",
    "ranking_compared",
    "self_agreement",
    "self_compared",
    "self_repeated_pairs",
    "checks_answered",
    "checks_failed",
    "check_accuracy",
    "flags",
    "flag_reasons",
    "excluded",
    "excluded_at",
    "excluded_by",
    "exclusion_reason",
    "votes_set_aside",
    *CROWD_COLUMNS,
)


def study_annotator_rows(*, study: Study) -> Iterator[list]:
    """Every annotator who voted, answered a check or was excluded, one list of cells per
    ``ANNOTATOR_CSV_COLUMNS``: those with figures most votes first, then the excluded ones without (every
    vote they cast was in the open ballot at their exclusion, and set aside).

    The figures and flags of the results page (``annotator_figures``); ``flags`` holds the codes of
    the flags raised, separated by ``;``, and ``flag_reasons`` the reason of each, in the same order.
    ``simulated`` is 1 for an annotator of ``simulate_voters``. ``excluded`` is 1 while an exclusion is
    active, with when, by whom (a researcher's name or the rule) and why; ``votes_set_aside`` counts their
    open-ballot votes taken out at every exclusion, readmitted or not. Then the crowd platform's parameters
    and the annotator's own codes, to match them there (a rejection on Prolific, say).
    """
    figures = annotator_figures(study=study)
    people = _annotator_cells(study)
    exclusions = _exclusion_cells(study)

    def cells(annotator_id: int, figure_cells: dict) -> list:
        person = people[annotator_id]
        row = {
            "annotator_id": annotator_id,
            "annotator": person.label,
            "participant_id": person.participant_id,
            "simulated": int(person.simulated),
            **figure_cells,
            **exclusions.get(annotator_id, NOT_EXCLUDED),
            **dict(zip(CROWD_COLUMNS, person.crowd, strict=True)),
        }
        return [row.get(column) for column in ANNOTATOR_CSV_COLUMNS]

    for position in figures.order():
        row = figures.row(int(position))
        yield cells(
            row.annotator_id,
            {
                "votes": row.votes,
                "median_response_ms": row.median_response_ms,
                "fast_share": row.fast_share,
                "left_choice_rate": row.left_choice_rate,
                "left_p_value": row.left_p_value,
                "left_p_holm": row.left_p_holm,
                "tie_rate": row.tie_rate,
                "majority_agreement": row.majority_agreement,
                "majority_compared": row.majority_compared,
                "ranking_agreement": row.ranking_agreement,
                "ranking_compared": row.ranking_compared,
                "self_agreement": row.self_agreement,
                "self_compared": row.self_compared,
                "self_repeated_pairs": row.self_repeated_pairs,
                "checks_answered": row.checks_answered,
                "checks_failed": row.checks_failed,
                "check_accuracy": row.check_accuracy,
                "flags": ";".join(row.flag_codes),
                "flag_reasons": "; ".join(flag.reason for flag in row.flags),
            },
        )
    with_figures = set(figures.annotator_id.tolist())
    for annotator_id in sorted(set(exclusions) - with_figures):
        yield cells(annotator_id, {"votes": 0, "checks_answered": 0, "checks_failed": 0})


NOT_EXCLUDED = {"excluded": 0, "votes_set_aside": 0}


def _exclusion_cells(study: Study) -> dict[int, dict]:
    """{annotator id: the exclusion cells of ``ANNOTATOR_CSV_COLUMNS``} for every annotator ever excluded:
    their active exclusion, if any, and the votes set aside at all of them (one query)."""
    cells: dict[int, dict] = {}
    for exclusion in Exclusion.objects.filter(study=study).order_by("excluded_at", "pk"):
        row = cells.setdefault(exclusion.annotator_id, dict(NOT_EXCLUDED))
        row["votes_set_aside"] += exclusion.votes_set_aside
        if exclusion.active:
            row.update(
                excluded=1,
                excluded_at=exclusion.excluded_at.isoformat(),
                excluded_by=exclusion.by,
                exclusion_reason=exclusion.reason,
            )
    return cells


CHECK_ANSWER_COLUMNS = (
    "answer_id",
    "ballot",
    "annotator_id",
    "annotator",
    "simulated",
    "check_id",
    "kind",
    "instruction",
    "left_item_id",
    "left_token_a",
    "left_token_b",
    "right_item_id",
    "right_token_a",
    "right_token_b",
    "expected",
    "choice",
    "correct",
    "response_ms",
    "client_response_ms",
    "created_at",
)


def study_check_answer_rows(*, study: Study, chunk_size: int = 5000) -> Iterator[list]:
    """Every answer to the study's checks, one list of cells per ``CHECK_ANSWER_COLUMNS``, in the order
    recorded. Never votes: ``votes.csv`` and the scores hold none of them."""
    people = _annotator_cells(study)
    tokens = _item_tokens(study)
    answers = (
        CheckAnswer.objects.filter(annotator__study=study)
        .order_by("pk")
        .values_list(
            "pk",
            "assignment__ballot__number",
            "annotator_id",
            "quality_check_id",
            "quality_check__kind",
            "quality_check__instruction",
            "quality_check__left_item_id",
            "quality_check__right_item_id",
            "quality_check__expected",
            "choice",
            "correct",
            "response_ms",
            "client_response_ms",
            "created_at",
        )
    )
    for (
        pk,
        ballot,
        annotator_id,
        check_id,
        kind,
        instruction,
        left,
        right,
        expected,
        choice,
        correct,
        response,
        client,
        created,
    ) in answers.iterator(chunk_size=chunk_size):
        yield [
            pk,
            ballot,
            annotator_id,
            people[annotator_id].label,
            int(people[annotator_id].simulated),
            check_id,
            kind,
            instruction,
            left,
            *tokens[left],
            right,
            *tokens[right],
            expected,
            choice,
            correct,
            response,
            client,
            created.isoformat(),
        ]


def study_export_header(*, study: Study) -> dict:
    """The study part of the JSON export: name, slug, question, plan, status, dates and ballots."""
    overview = study_overview(study=study)

    def iso(moment) -> str | None:
        return moment.isoformat() if moment else None

    return {
        "name": study.name,
        "slug": study.slug,
        "question": study.question,
        "allow_ties": study.allow_ties,
        "status": study.status,
        "ranking_scope": study.ranking_scope,
        "plan": {
            "ballot_count": study.ballot_count,
            "keep_fraction": study.keep_fraction,
            "appearances": study.appearances,
            "comparison_budget": study.comparison_budget,
            "item_count": overview.item_count,
            "ballot_sizes": overview.plan["sizes"] if overview.plan else None,
            "comparisons": overview.plan["comparisons"] if overview.plan else None,
            "total_comparisons": overview.plan["total_comparisons"] if overview.plan else None,
            "areas": _area_plans(study),
        },
        "created_at": iso(study.created_at),
        "started_at": iso(study.started_at),
        "finished_at": iso(study.finished_at),
        "annotators": overview.voter_count,
        # Everyone who joined, voters or not (a no-work exit has no vote): the codes to match.
        "participants": [
            {
                "annotator_id": pk,
                "participant_id": person.participant_id,
                "simulated": person.simulated,
                **dict(zip(CROWD_COLUMNS, person.crowd, strict=True)),
            }
            for pk, person in _annotator_cells(study).items()
        ],
        "votes": overview.vote_count,
        # The votes and voters above, people and simulated annotators (simulate_voters) apart.
        "crowd": overview.crowd.as_dict(),
        "ballots": [
            {
                "number": ballot["number"],
                "status": ballot["status"],
                "items": ballot["items"],
                "comparisons": ballot["comparisons"],
                "votes": ballot["votes"],
                "rescale_slope": ballot["rescale_slope"],
                "area_rescale_slopes": ballot["area_rescale_slopes"],
                "opened_at": iso(ballot["opened_at"]),
                "closed_at": iso(ballot["closed_at"]),
            }
            for ballot in overview.ballots
        ],
    }


def _area_plans(study: Study) -> dict | None:
    """Each semantic area's ballot sizes and comparisons in a study ranked per area; None in a joint one."""
    if study.ranking_scope != Study.RankingScope.PER_AREA:
        return None
    try:
        plans = study_area_plans(study=study).by_area
    except ServiceError:
        return None
    return {
        name: {
            "item_count": plan.item_count,
            "ballot_sizes": list(plan.sizes),
            "comparisons": list(plan.comparisons),
            "total_comparisons": plan.total_comparisons,
        }
        for name, plan in plans.items()
    }


def _item_tokens(study: Study) -> dict[int, tuple[str, str]]:
    """Each item's two tokens, by id (one query)."""
    rows = Item.objects.filter(study=study).values_list("id", "token_a__text", "token_b__text")
    return {item_id: (token_a, token_b) for item_id, token_a, token_b in rows}


def dataset_export_columns(*, dataset: StudyDataset) -> tuple[str, ...]:
    """The columns of ``dataset.csv``: the dataset's, then ``score_<model>`` and ``rank_<model>`` of every
    score model, the study's own first."""
    return dataset.columns + score_columns(study_model_scores(study=dataset.study).models)


def dataset_export_csv_rows(*, dataset: StudyDataset) -> Iterator[list]:
    """The rows of ``dataset.csv`` in index order, matching ``dataset_export_columns``: every score model
    scores the votes of the closed ballots, those the final ranking counts."""
    side_by_side = study_model_scores(study=dataset.study)  # now, before the first row is sent
    # Index order: an item's position is its index.
    return (cells + side_by_side.cells(position) for position, cells in enumerate(dataset.csv_rows()))


def dataset_export_rows(*, dataset: StudyDataset) -> Iterator[dict]:
    """The items of ``dataset.json`` in index order: the dataset's row and every model's score and rank."""
    side_by_side = study_model_scores(study=dataset.study)  # now, before the first row is sent
    return (row | side_by_side.fields(position) for position, row in enumerate(dataset.rows()))
