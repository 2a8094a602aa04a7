"""Checks (gold comparisons, instructed-response checks): a researcher adds them, the lease serves them
at the study's check rate through the same answer as a comparison, and their answers are never votes:
not in the ballot's counter, the annotator's quota, the scores or the vote invariants."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test import Client

from collection import checks
from collection.checks import annotator_failed_checks, check_create, checks_import
from collection.lifecycle import ballot_close, leases_expire
from collection.models import Assignment, Ballot, Check, CheckAnswer, Vote
from collection.voting import TIE_REFUSED, comparison_next_for, vote_record, vote_record_and_next
from common.errors import ServiceError
from tests.factories import annotators, committed_callbacks, make_study

pytestmark = pytest.mark.django_db


class Always(random.Random):
    """Draws that always serve a check (0.0 < any rate)."""

    def random(self) -> float:
        return 0.0


class Never(random.Random):
    """Draws that never serve one (0.99 ≥ any allowed rate, at most 0.5)."""

    def random(self) -> float:
        return 0.99


def item(study, a: int, b: int):
    """The item pairing tokens area0-a and area0-b."""
    return study.items.get(token_a__text=f"area0-{min(a, b)}", token_b__text=f"area0-{max(a, b)}")


def gold(study, expected: str = "left") -> Check:
    return check_create(
        study=study, kind="gold", left_item=item(study, 0, 1), right_item=item(study, 2, 3), expected=expected
    )


def instructed(study, expected: str = "right") -> Check:
    return check_create(
        study=study,
        kind="instructed",
        left_item=item(study, 0, 4),
        right_item=item(study, 1, 5),
        expected=expected,
        instruction=f"For this one, choose the pair on the {expected}.",
    )


# --- adding checks ---------------------------------------------------------------------------------


def test_a_check_shows_two_items_of_its_own_study():
    study, other = make_study(), make_study()

    with pytest.raises(ServiceError) as refused:
        check_create(
            study=study,
            kind="gold",
            left_item=item(study, 0, 1),
            right_item=item(other, 2, 3),
            expected="left",
        )

    assert (
        refused.value.message
        == f"the right item {item(other, 2, 3).pk} is not an item of study {study.slug!r}"
    )
    assert not Check.objects.exists()


def test_an_instructed_check_needs_its_instruction_and_a_gold_one_has_none():
    study = make_study()
    pair = {"left_item": item(study, 0, 1), "right_item": item(study, 2, 3), "expected": "left"}

    with pytest.raises(ServiceError) as no_instruction:
        check_create(study=study, kind="instructed", **pair)
    with pytest.raises(ServiceError) as instructed_gold:
        check_create(study=study, kind="gold", instruction="Choose left.", **pair)

    assert no_instruction.value.message == (
        'an instructed-response check needs its instruction, e.g. "For this one, choose the pair on the left."'
    )
    assert instructed_gold.value.message.startswith("a gold comparison shows the study's question")


def area_item(study, area: int, a: int, b: int):
    """The item pairing tokens area<area>-a and area<area>-b."""
    return study.items.get(token_a__text=f"area{area}-{min(a, b)}", token_b__text=f"area{area}-{max(a, b)}")


CROSS_AREAS = (
    "a gold comparison of a study ranked per area sets two items of one semantic area against each "
    "other, as every comparison of the study does; a check across areas would stand out"
)


def test_a_gold_check_across_areas_is_refused_in_a_study_ranked_per_area():
    study = make_study(areas=2, ranking_scope="per_area")
    left, right = area_item(study, 0, 0, 1), area_item(study, 1, 2, 3)

    with pytest.raises(ServiceError) as refused:
        check_create(study=study, kind="gold", left_item=left, right_item=right, expected="left")

    assert refused.value.message == (
        f"{CROSS_AREAS}: the left item area0-0 – area0-1 is in Area0, the right item area1-2 – area1-3 in "
        "Area1; choose two items of one area"
    )
    assert not Check.objects.exists()


def test_a_gold_check_within_an_area_of_a_per_area_study_or_across_areas_of_a_joint_one_is_accepted():
    per_area = make_study(areas=2, ranking_scope="per_area")
    joint = make_study(areas=2, ranking_scope="joint")

    within = check_create(
        study=per_area,
        kind="gold",
        left_item=area_item(per_area, 1, 0, 1),
        right_item=area_item(per_area, 1, 2, 3),
        expected="left",
    )
    across = check_create(
        study=joint,
        kind="gold",
        left_item=area_item(joint, 0, 0, 1),
        right_item=area_item(joint, 1, 2, 3),
        expected="right",
    )
    # An instructed-response check shows its instruction in place of the question: it is a check in plain
    # sight, whatever its items.
    instructed_across = check_create(
        study=per_area,
        kind="instructed",
        left_item=area_item(per_area, 0, 0, 1),
        right_item=area_item(per_area, 1, 2, 3),
        expected="left",
        instruction="For this one, choose the pair on the left.",
    )

    assert set(Check.objects.values_list("pk", flat=True)) == {within.pk, across.pk, instructed_across.pk}


def test_a_checks_file_with_a_gold_check_across_areas_of_a_per_area_study_imports_nothing():
    study = make_study(areas=2, ranking_scope="per_area")
    data = (
        "kind,left_a,left_b,right_a,right_b,expected\n"
        "gold,area0-0,area0-1,area0-2,area0-3,left\n"
        "gold,area0-0,area0-1,area1-2,area1-3,left\n"
    )

    with pytest.raises(ServiceError) as refused:
        checks_import(study=study, data=data)

    assert refused.value.message == "the checks file has 1 problem; nothing was imported"
    assert refused.value.errors == [
        f"line 3: {CROSS_AREAS}: the left item area0-0 – area0-1 is in Area0, the right item area1-2 – "
        "area1-3 in Area1; choose two items of one area"
    ]
    assert not Check.objects.exists()


def test_the_model_validates_a_check_by_the_same_rules():
    from django.core.exceptions import ValidationError

    study = make_study(areas=2, ranking_scope="per_area")
    check = Check(
        study=study,
        kind="gold",
        left_item=area_item(study, 0, 0, 1),
        right_item=area_item(study, 1, 2, 3),
        expected="left",
    )

    with pytest.raises(ValidationError) as refused:
        check.full_clean()

    assert refused.value.message_dict == {
        "__all__": [
            f"{CROSS_AREAS}: the left item area0-0 – area0-1 is in Area0, the right item area1-2 – area1-3 "
            "in Area1; choose two items of one area"
        ]
    }


def test_the_database_refuses_a_check_of_one_item_twice_or_without_a_side():
    study = make_study()
    same = item(study, 0, 1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Check.objects.create(study=study, kind="gold", left_item=same, right_item=same, expected="left")
    with pytest.raises(IntegrityError), transaction.atomic():
        Check.objects.create(
            study=study, kind="gold", left_item=same, right_item=item(study, 2, 3), expected="tie"
        )


def test_checks_are_imported_from_csv_by_the_tokens_of_their_items():
    study = make_study()
    data = (
        "kind,left_a,left_b,right_a,right_b,expected,instruction\n"
        "gold,area0-1,area0-0,area0-2,area0-3,left,\n"
        'instructed,area0-0,area0-4,area0-1,area0-5,right,"For this one, choose the pair on the right."\n'
    )

    added = checks_import(study=study, data=data.encode())

    assert added == 2
    rows = list(Check.objects.filter(study=study).values_list("kind", "left_item", "right_item", "expected"))
    assert rows == [
        ("gold", item(study, 0, 1).pk, item(study, 2, 3).pk, "left"),
        ("instructed", item(study, 0, 4).pk, item(study, 1, 5).pk, "right"),
    ]


def test_a_checks_file_with_problems_imports_nothing_and_lists_them_by_line():
    study = make_study()
    data = (
        "kind,left_a,left_b,right_a,right_b,expected\n"
        "gold,area0-0,area0-1,area0-2,area0-3,left\n"
        "gold,area0-0,nowhere,area0-2,area0-3,left\n"
        "instructed,area0-0,area0-1,area0-2,area0-3,up\n"
    )

    with pytest.raises(ServiceError) as refused:
        checks_import(study=study, data=data)

    assert refused.value.message == "the checks file has 3 problems; nothing was imported"
    assert refused.value.errors == [
        "line 3: no item of the study pairs 'area0-0' with 'nowhere' (left)",
        'line 4: expected must be "left" or "right", got \'up\'',
        'line 4: an instructed-response check needs its instruction, e.g. "For this one, choose the pair on '
        'the left."',
    ]
    assert not Check.objects.exists()


# --- serving -----------------------------------------------------------------------------------------


def test_no_check_is_served_at_a_rate_of_zero():
    study = make_study(check_rate=0.0)
    gold(study)
    (annotator,) = annotators(study, 1)

    result = comparison_next_for(annotator=annotator, rng=Always())

    assert result.assignment.comparison_id is not None and result.assignment.quality_check_id is None


def test_a_served_check_looks_like_a_comparison_and_moves_no_progress():
    study = make_study(check_rate=0.5)
    check = instructed(study, expected="right")
    (annotator,) = annotators(study, 1)
    before = comparison_next_for(annotator=annotator, rng=Never())
    vote_record(annotator=annotator, assignment_id=before.assignment.pk, choice="left")

    served = comparison_next_for(annotator=annotator, rng=Always())

    assert (served.assignment.comparison_id, served.assignment.quality_check_id) == (None, check.pk)
    assert served.sides == {
        "left": {"item": item(study, 0, 4).pk, "tokens": ["area0-0", "area0-4"]},
        "right": {"item": item(study, 1, 5).pk, "tokens": ["area0-1", "area0-5"]},
    }
    assert served.question(study) == "For this one, choose the pair on the right."
    assert (served.progress.votes_in_ballot, served.progress.votes_total) == (1, 1)


def test_a_gold_check_shows_the_study_question():
    study = make_study(check_rate=0.5)
    gold(study)
    (annotator,) = annotators(study, 1)

    served = comparison_next_for(annotator=annotator, rng=Always())

    assert served.assignment.quality_check_id is not None
    assert served.question(study) == study.question


def test_the_held_check_comes_back_until_it_is_answered():
    study = make_study(check_rate=0.5)
    check = gold(study)
    (annotator,) = annotators(study, 1)
    served = comparison_next_for(annotator=annotator, rng=Always())

    again = comparison_next_for(annotator=annotator, rng=Never())

    assert again.assignment.pk == served.assignment.pk
    assert again.assignment.quality_check_id == check.pk
    assert again.sides == served.sides


def test_each_check_is_answered_once_then_comparisons_follow():
    study = make_study(check_rate=0.5)
    first, second = gold(study), instructed(study)
    (annotator,) = annotators(study, 1)
    answered = []
    for _ in range(3):
        served = comparison_next_for(annotator=annotator, rng=Always())
        answered.append(served.assignment.quality_check_id)
        vote_record(annotator=annotator, assignment_id=served.assignment.pk, choice="left")

    assert sorted(answered[:2]) == [first.pk, second.pk]
    assert answered[2] is None  # none left to answer: a comparison
    assert CheckAnswer.objects.filter(annotator=annotator).count() == 2


def test_the_share_of_checks_served_is_the_check_rate():
    # 400 leases at a rate of 0.25 with enough checks never to run out: the count of checks is
    # Binomial(400, 0.25), mean 100, standard deviation √75 ≈ 8.7; a fixed seed, bounds at 3 σ.
    study = make_study(
        tokens=10, ballot_count=1, appearances=40, check_rate=0.25
    )  # 45 items, 900 comparisons
    for number in range(120):
        left = item(study, 0, 1 + number % 9)
        check_create(study=study, kind="gold", left_item=left, right_item=item(study, 2, 3), expected="left")
    voters = annotators(study, 8)
    rng = random.Random(2024)
    served_checks = 0
    for lease in range(400):
        annotator = voters[lease % len(voters)]
        result = comparison_next_for(annotator=annotator, rng=rng)
        served_checks += result.assignment.quality_check_id is not None
        with committed_callbacks():
            vote_record(annotator=annotator, assignment_id=result.assignment.pk, choice="left")

    assert 74 <= served_checks <= 126
    assert CheckAnswer.objects.count() == served_checks
    assert Vote.objects.count() == 400 - served_checks


# --- answering ---------------------------------------------------------------------------------------


def test_an_answer_to_a_check_is_never_a_vote():
    study = make_study(check_rate=0.5)
    check = gold(study, expected="left")
    (annotator,) = annotators(study, 1)
    ballot = Ballot.objects.get(study=study, number=1)
    served = comparison_next_for(annotator=annotator, rng=Always())

    answer, created = vote_record(
        annotator=annotator, assignment_id=served.assignment.pk, choice="right", client_response_ms=1500
    )

    assert created and isinstance(answer, CheckAnswer)
    assert (answer.quality_check_id, answer.choice, answer.correct, answer.client_response_ms) == (
        check.pk,
        "right",
        False,
        1500,
    )
    ballot.refresh_from_db()
    assert ballot.votes_recorded == 0 and not Vote.objects.exists()
    assert Assignment.objects.get(pk=served.assignment.pk).status == Assignment.Status.ANSWERED
    assert annotator_failed_checks(annotator=annotator) == 1
    nxt = comparison_next_for(annotator=annotator, rng=Never())
    assert (nxt.progress.votes_in_ballot, nxt.progress.votes_total) == (0, 0)


def test_a_retried_answer_returns_the_recorded_one():
    study = make_study(check_rate=0.5)
    gold(study, expected="left")
    (annotator,) = annotators(study, 1)
    served = comparison_next_for(annotator=annotator, rng=Always())
    first, _ = vote_record(annotator=annotator, assignment_id=served.assignment.pk, choice="left")

    again, created = vote_record(annotator=annotator, assignment_id=served.assignment.pk, choice="right")

    assert (again.pk, again.choice, again.correct, created) == (first.pk, "left", True, False)
    assert CheckAnswer.objects.count() == 1


def test_a_tie_on_a_check_is_refused_where_the_study_has_no_ties():
    study = make_study(check_rate=0.5, allow_ties=False)
    gold(study)
    (annotator,) = annotators(study, 1)
    served = comparison_next_for(annotator=annotator, rng=Always())

    with pytest.raises(ServiceError) as refused:
        vote_record(annotator=annotator, assignment_id=served.assignment.pk, choice="tie")

    assert (refused.value.status, refused.value.message) == (400, TIE_REFUSED)
    assert not CheckAnswer.objects.exists()


def test_a_check_whose_lease_ran_out_is_refused_and_served_again():
    study = make_study(check_rate=0.5, lease_seconds=60)
    check = gold(study)
    (annotator,) = annotators(study, 1)
    served = comparison_next_for(annotator=annotator, rng=Always())
    later = served.assignment.expires_at + timedelta(seconds=1)

    with pytest.raises(ServiceError) as refused:
        vote_record(annotator=annotator, assignment_id=served.assignment.pk, choice="left", now=later)
    leases_expire(now=later)
    again = comparison_next_for(annotator=annotator, now=later, rng=Always())

    assert refused.value.status == 409
    assert refused.value.message.startswith("your time for this comparison ran out")
    assert again.assignment.quality_check_id == check.pk and again.assignment.pk != served.assignment.pk


def test_the_close_of_a_ballot_ends_a_held_check():
    study = make_study(check_rate=0.5)
    gold(study)
    (annotator,) = annotators(study, 1)
    served = comparison_next_for(annotator=annotator, rng=Always())

    with committed_callbacks():
        ballot_close(ballot_id=served.assignment.ballot_id)
    with pytest.raises(ServiceError) as refused:
        vote_record(annotator=annotator, assignment_id=served.assignment.pk, choice="left")

    assert Assignment.objects.get(pk=served.assignment.pk).status == Assignment.Status.CANCELLED
    assert (refused.value.status, refused.value.message) == (
        409,
        "ballot 1 is closed; this comparison no longer takes votes",
    )


def test_the_database_refuses_an_assignment_of_both_a_comparison_and_a_check():
    study = make_study(check_rate=0.5)
    check = gold(study)
    (annotator,) = annotators(study, 1)
    held = comparison_next_for(annotator=annotator, rng=Never()).assignment

    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.filter(pk=held.pk).update(quality_check=check)
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.filter(pk=held.pk).update(status=Assignment.Status.ANSWERED)


# --- through the API and the page --------------------------------------------------------------------


def join(client: Client, study, participant: str) -> None:
    client.get(f"/s/{study.slug}/", {"participant": participant})
    client.post(f"/s/{study.slug}/", {"consent": "yes", "participant": participant})


def test_the_api_serves_a_check_in_the_body_of_a_comparison_and_records_its_answer(monkeypatch):
    study = make_study(check_rate=0.5)
    instructed(study, expected="right")
    client = Client()
    join(client, study, "api")
    monkeypatch.setattr(checks, "_DRAWS", Always())

    served = client.get(f"/api/studies/{study.slug}/next/")
    body = served.json()
    monkeypatch.setattr(checks, "_DRAWS", Never())
    answered = client.post(
        "/api/votes/", {"assignment": body["assignment"], "choice": "right"}, content_type="application/json"
    )

    assert served.status_code == 200
    assert set(body) == {"assignment", "expires_at", "question", "allow_ties", "left", "right", "progress"}
    assert body["question"] == "For this one, choose the pair on the right."
    assert answered.status_code == 201
    reply = answered.json()
    answer = CheckAnswer.objects.get()
    assert (reply["vote"], reply["assignment"], reply["choice"], reply["created"]) == (
        answer.pk,
        body["assignment"],
        "right",
        True,
    )
    assert answer.correct and not Vote.objects.exists()
    assert reply["next"]["question"] == study.question  # a comparison again


def test_the_voting_page_shows_the_instruction_and_records_the_answer(monkeypatch):
    study = make_study(check_rate=0.5)
    instructed(study, expected="right")
    client = Client()
    join(client, study, "page")
    monkeypatch.setattr(checks, "_DRAWS", Always())

    page = client.get(f"/s/{study.slug}/vote/")
    assignment = Assignment.objects.get(status="active")
    monkeypatch.setattr(checks, "_DRAWS", Never())
    after = client.post(f"/s/{study.slug}/vote/", {"assignment": assignment.pk, "choice": "left"})

    html = page.content.decode()
    assert 'id="question" tabindex="-1">For this one, choose the pair on the right.</legend>' in html
    assert after.status_code == 200
    answer = CheckAnswer.objects.get()
    assert (answer.choice, answer.correct) == ("left", False)
    assert f'id="question" tabindex="-1">{study.question}</legend>' in after.content.decode()


def test_a_judgement_on_a_comparison_costs_no_more_statements_with_checks_on(monkeypatch):
    # The bounds of tests/collection/test_statements.py: a vote pays nothing for the checks.
    from django.test.utils import CaptureQueriesContext

    from tests.collection.test_statements import BOUNDS

    bounds = BOUNDS
    study = make_study(tokens=8, votes_per_annotator_per_ballot=None, check_rate=0.5)
    gold(study)
    (annotator,) = annotators(study, 1)
    with CaptureQueriesContext(connection) as lease:
        result = comparison_next_for(annotator=annotator, rng=Never())
    with CaptureQueriesContext(connection) as vote:
        vote_record(annotator=annotator, assignment_id=result.assignment.pk, choice="left")

    assert len(lease) <= bounds["first lease"] and len(vote) <= bounds["vote"]


def test_vote_record_and_next_answers_a_check_then_leases_the_next():
    study = make_study(check_rate=0.5)
    gold(study, expected="right")
    (annotator,) = annotators(study, 1)
    served = comparison_next_for(annotator=annotator, rng=Always())

    answer, created, nxt = vote_record_and_next(
        annotator=annotator, assignment_id=served.assignment.pk, choice="right"
    )

    assert isinstance(answer, CheckAnswer) and answer.correct and created
    assert nxt.assignment is not None


# --- the admin ---------------------------------------------------------------------------------------


def inline_data(study, rows: list[dict], initial: int = 0) -> dict:
    """The study's change form as the admin posts it, with ``rows`` in the checks' inline (the first
    ``initial`` of them the study's checks)."""
    data = {"checks-TOTAL_FORMS": str(len(rows)), "checks-INITIAL_FORMS": str(initial)}
    data |= {"translations-TOTAL_FORMS": "0", "translations-INITIAL_FORMS": "0"}
    for number, row in enumerate(rows):
        data |= {f"checks-{number}-{name}": value for name, value in row.items()}
    return data


def post_study_page(admin_client, study, rows: list[dict], initial: int = 0):
    from tests.collection.test_study_changes import admin_form

    form = admin_form(admin_client, study)
    values = {name: form.initial.get(name, field.initial) for name, field in form.fields.items()}
    data = {name: "" if value is None else value for name, value in values.items() if value is not False}
    data = {name: "on" if value is True else value for name, value in data.items()}
    return admin_client.post(
        f"/admin/collection/study/{study.pk}/change/", data | inline_data(study, rows, initial)
    )


def test_the_study_page_adds_checks_inline_by_the_tokens_of_their_items(admin_client):
    study = make_study()
    row = {
        "kind": "instructed",
        "left_a": "AREA0-1",  # any case, either order, as in a checks file
        "left_b": " area0-0 ",
        "right_a": "area0-2",
        "right_b": "area0-3",
        "expected": "left",
        "instruction": "For this one, choose the pair on the left.",
    }

    response = post_study_page(admin_client, study, [row])

    assert response.status_code == 302
    check = Check.objects.get(study=study)
    assert (check.kind, check.left_item, check.right_item, check.expected, check.instruction) == (
        "instructed",
        item(study, 0, 1),
        item(study, 2, 3),
        "left",
        "For this one, choose the pair on the left.",
    )


def test_the_study_page_shows_each_check_by_the_tokens_of_its_items(admin_client):
    study = make_study()
    gold(study)

    formset = (
        admin_client.get(f"/admin/collection/study/{study.pk}/change/")
        .context["inline_admin_formsets"][0]
        .formset
    )

    shown = formset.forms[0]
    assert {name: shown[name].value() for name in ("left_a", "left_b", "right_a", "right_b")} == {
        "left_a": "area0-0",
        "left_b": "area0-1",
        "right_a": "area0-2",
        "right_b": "area0-3",
    }
    assert "left_item" not in shown.fields and "right_item" not in shown.fields


def test_the_study_page_refuses_tokens_that_pair_no_item_of_the_study(admin_client):
    study, other = make_study(tokens=6), make_study(tokens=8)
    assert other.items.filter(token_a__text="area0-6", token_b__text="area0-7").exists()
    row = {
        "kind": "gold",
        "left_a": "area0-0",
        "left_b": "area0-1",
        "right_a": "area0-6",  # an item of the other study only
        "right_b": "area0-7",
        "expected": "left",
    }

    response = post_study_page(admin_client, study, [row])

    assert response.status_code == 200
    errors = response.context["inline_admin_formsets"][0].formset.errors
    assert errors == [{"__all__": ["no item of the study pairs 'area0-6' with 'area0-7' (right)"]}]
    assert not Check.objects.exists()


def test_the_study_page_refuses_a_gold_check_across_areas_of_a_study_ranked_per_area(admin_client):
    study = make_study(areas=2, ranking_scope="per_area")
    row = {
        "kind": "gold",
        "left_a": "area0-0",
        "left_b": "area0-1",
        "right_a": "area1-2",
        "right_b": "area1-3",
        "expected": "left",
    }

    response = post_study_page(admin_client, study, [row])

    assert response.status_code == 200
    errors = response.context["inline_admin_formsets"][0].formset.errors
    assert errors == [
        {
            "__all__": [
                f"{CROSS_AREAS}: the left item area0-0 – area0-1 is in Area0, the right item area1-2 – "
                "area1-3 in Area1; choose two items of one area"
            ]
        }
    ]
    assert not Check.objects.exists()


def checks_upload(admin_client, study, content: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("checks.csv", content.encode(), content_type="text/csv")
    return admin_client.post(f"/admin/collection/study/{study.pk}/checks-upload/", {"file": upload})


def test_the_study_page_uploads_a_checks_file(admin_client):
    from django.contrib.messages import get_messages

    study = make_study()
    data = (
        "kind,left_a,left_b,right_a,right_b,expected,instruction\n"
        "gold,area0-1,area0-0,area0-2,area0-3,left,\n"
        'instructed,area0-0,area0-4,area0-1,area0-5,right,"For this one, choose the pair on the right."\n'
    )

    response = checks_upload(admin_client, study, data)

    assert (response.status_code, response["Location"]) == (
        302,
        f"/admin/collection/study/{study.pk}/change/#checks-group",
    )
    assert [str(message) for message in get_messages(response.wsgi_request)] == [
        f"Imported 2 checks into “{study}”."
    ]
    assert list(Check.objects.filter(study=study).values_list("kind", "left_item", "right_item")) == [
        ("gold", item(study, 0, 1).pk, item(study, 2, 3).pk),
        ("instructed", item(study, 0, 4).pk, item(study, 1, 5).pk),
    ]


def test_a_checks_file_with_problems_is_refused_on_the_study_page_and_imports_nothing(admin_client):
    study = make_study(areas=2, ranking_scope="per_area")
    data = (
        "kind,left_a,left_b,right_a,right_b,expected\n"
        "gold,area0-0,area0-1,area0-2,area0-3,left\n"
        "gold,area0-0,area0-1,area1-2,area1-3,left\n"
        "gold,area0-0,nowhere,area0-2,area0-3,left\n"
    )

    response = checks_upload(admin_client, study, data)

    assert response.status_code == 400
    assert response.context["error_message"] == "The checks file has 2 problems; nothing was imported."
    assert response.context["error_lines"] == [
        f"line 3: {CROSS_AREAS}: the left item area0-0 – area0-1 is in Area0, the right item area1-2 – "
        "area1-3 in Area1; choose two items of one area",
        "line 4: no item of the study pairs 'area0-0' with 'nowhere' (left)",
    ]
    assert not Check.objects.exists()


# --- the rule: failed checks screen an annotator out ---------------------------------------------


@pytest.mark.parametrize("rule_on", [True, False])
def test_failing_the_studys_number_of_checks_screens_the_annotator_out_when_the_rule_is_on(rule_on):
    from collection.models import Exclusion
    from collection.voting import NextReason

    study = make_study(check_rate=0.5, quality_max_failed_checks=2, exclude_flagged_annotators=rule_on)
    gold(study, expected="left"), instructed(study, expected="right")
    careless, careful = annotators(study, 2)
    for annotator, answer in (
        (careless, lambda check: "right" if check.expected == "left" else "left"),
        (careful, lambda check: check.expected),
    ):
        for _ in range(2):
            served = comparison_next_for(annotator=annotator, rng=Always())
            check = Check.objects.get(pk=served.assignment.quality_check_id)
            vote_record(annotator=annotator, assignment_id=served.assignment.pk, choice=answer(check))
    assert annotator_failed_checks(annotator=careless) == 2
    excluded = Exclusion.objects.filter(annotator=careless, lifted_at__isnull=True)
    if rule_on:
        (exclusion,) = excluded
        assert (
            exclusion.rule == "failed_checks"
            and exclusion.reason == "failed 2 checks; the study's threshold is 2"
        )
        careless.refresh_from_db()
        assert comparison_next_for(annotator=careless, rng=Never()).reason == NextReason.EXCLUDED
    else:
        assert not excluded.exists()
    assert not Exclusion.objects.filter(annotator=careful).exists()  # right twice: not touched


def test_the_study_page_names_the_gold_checks_across_areas_a_per_area_study_held_before_the_rule(
    admin_client,
):
    from django.contrib.messages import get_messages

    study = make_study(areas=2, ranking_scope="per_area")
    # Added before such checks were refused: the database has no rule for it.
    held = Check.objects.create(
        study=study,
        kind="gold",
        left_item=area_item(study, 0, 0, 1),
        right_item=area_item(study, 1, 2, 3),
        expected="left",
    )
    url = f"/admin/collection/study/{study.pk}/change/"

    page = admin_client.get(url)
    kept = post_study_page(admin_client, study, [])  # a save that leaves the check as it is
    row = {
        "id": held.pk,
        "study": study.pk,
        "kind": "gold",
        "left_a": "area0-0",
        "left_b": "area0-1",
        "right_a": "area1-2",
        "right_b": "area1-3",
        "expected": "left",
    }
    refused = post_study_page(admin_client, study, [row], initial=1)
    deleted = post_study_page(admin_client, study, [row | {"DELETE": "on"}], initial=1)

    assert [str(message) for message in get_messages(page.wsgi_request)] == [
        f"Gold check {held.pk} (area0-0 – area0-1 against area1-2 – area1-3) sets items of two semantic "
        "areas against each other, which no comparison of a study ranked per area does, so annotators can "
        "tell it from a comparison: delete it in the Checks below, or make it an instructed-response check."
    ]
    assert (kept.status_code, refused.status_code, deleted.status_code) == (302, 200, 302)
    assert refused.context["inline_admin_formsets"][0].formset.errors[0]["__all__"][0].startswith(CROSS_AREAS)
    assert not Check.objects.filter(pk=held.pk).exists()
