"""The REST API: who may call what, and what each endpoint does (through the real services)."""

from datetime import datetime, timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token as ApiToken

from collection.identity import SESSION_ANNOTATORS, annotator_consent, annotator_for
from collection.models import Annotator, Assignment, Ballot, Study, Vote
from collection.pools import MAX_UPLOAD_BYTES
from collection.studies import study_plan
from collection.voting import comparison_next_for, vote_record
from scoring.plan import ballot_sizes
from tests.factories import annotators, committed_callbacks, make_study, tokens_csv, vote_until

pytestmark = pytest.mark.django_db

NOT_LOGGED_IN = {
    "detail": "no credentials: send the header 'Authorization: Token <key>' (POST your username and password "
    "to /api/auth/token/ to get the key)"
}
NOT_STAFF = {
    "detail": "this endpoint is for staff: log in through the admin with a staff account, "
    "or send the header 'Authorization: Token <key>' of one"
}


def session_annotator(study: Study, *, client: Client | None = None, consent: bool = True):
    """A browser whose session holds an anonymous annotator of ``study``, as the entry page leaves it."""
    client = client or Client()
    session = client.session
    annotator = annotator_for(study=study, session_key=session.session_key)
    if consent:
        annotator_consent(annotator=annotator)
    session[SESSION_ANNOTATORS] = {**session.get(SESSION_ANNOTATORS, {}), str(study.pk): annotator.pk}
    session.save()
    return client, annotator


def vote_record_for(annotator: Annotator, assignment: Assignment) -> None:
    vote_record(annotator=annotator, assignment_id=assignment.pk, choice="left")


def next_of(client: Client, study: Study):
    return client.get(f"/api/studies/{study.slug}/next/")


def vote(client: Client, assignment_id: int, choice: str = "left", *, headers=None, **fields):
    return client.post(
        "/api/votes/",
        {"assignment": assignment_id, "choice": choice, **fields},
        content_type="application/json",
        headers=headers,
    )


@pytest.fixture
def staff_client(django_user_model):
    staff = django_user_model.objects.create_user("researcher", password="x", is_staff=True)
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def user_client(django_user_model):
    user = django_user_model.objects.create_user("volunteer", password="x")
    client = Client()
    client.force_login(user)
    return client


# --- annotators: next ----------------------------------------------------------------------------


def test_next_gives_an_assignment_with_both_items_the_question_and_the_progress():
    study = make_study()
    client, annotator = session_annotator(study)

    response = next_of(client, study)

    assert response.status_code == 200
    assignment = Assignment.objects.get(annotator=annotator)
    left, right = assignment.comparison.left_item, assignment.comparison.right_item
    body = response.json()
    assert datetime.fromisoformat(body.pop("expires_at")) == assignment.expires_at
    assert body == {
        "assignment": assignment.pk,
        "question": "Which pair of words is more closely related?",
        "allow_ties": False,
        "left": {"item": left.pk, "tokens": [left.token_a.text, left.token_b.text]},
        "right": {"item": right.pk, "tokens": [right.token_a.text, right.token_b.text]},
        "progress": {
            "ballot": 1,
            "ballot_count": 3,
            "votes_in_ballot": 0,
            "cap": None,
            "votes_total": 0,
            "ballot_voted": 0,
            "ballot_comparisons": 30,
            "quota_percent": None,
            "ballot_percent": 0,
        },
    }


def test_next_returns_the_same_assignment_while_its_lease_runs():
    study = make_study()
    client, annotator = session_annotator(study)

    first = next_of(client, study).json()["assignment"]
    second = next_of(client, study).json()["assignment"]

    assert second == first
    assert Assignment.objects.filter(annotator=annotator).count() == 1


def test_next_without_an_annotator_for_the_study_says_to_open_the_study_link_first():
    study = make_study()

    response = next_of(Client(), study)

    assert response.status_code == 403
    assert response.json() == {
        "detail": f"you are not an annotator of this study yet: open the study link /s/{study.slug}/ first; "
        "it identifies you and shows the instructions"
    }
    assert Assignment.objects.count() == 0


def test_next_before_consent_is_refused_and_leases_nothing():
    study = make_study()
    client, _ = session_annotator(study, consent=False)

    response = next_of(client, study)

    assert response.status_code == 403
    assert response.json() == {
        "detail": f"you have not agreed to take part yet: open the study link /s/{study.slug}/, read the "
        "instructions and give your consent, then ask for a comparison again"
    }
    assert Assignment.objects.count() == 0


def test_an_annotator_of_one_study_is_not_an_annotator_of_another():
    study, other = make_study(), make_study()
    client, _ = session_annotator(study)

    assert next_of(client, other).status_code == 403


def test_next_for_an_unknown_study_is_404():
    response = Client().get("/api/studies/no-such-study/next/")

    assert response.status_code == 404
    assert response.json() == {"detail": "there is no study 'no-such-study'; check the link you were given"}


def test_next_when_the_quota_is_reached_is_204_with_the_reason_and_no_retry_time():
    study = make_study(votes_per_annotator_per_ballot=1)
    client, _ = session_annotator(study)
    assert vote(client, next_of(client, study).json()["assignment"]).status_code == 201

    response = next_of(client, study)

    assert response.status_code == 204
    assert response.content == b""
    assert response["X-Yardstick-Reason"] == "quota"
    assert "Retry-After" not in response


def test_next_when_every_comparison_is_held_is_204_with_a_retry_time():
    study = make_study(tokens=3, ballot_count=1, appearances=2)  # 3 items, 3 comparisons
    for holder in annotators(study, 3):
        comparison_next_for(annotator=holder)
    client, _ = session_annotator(study)

    response = next_of(client, study)

    assert response.status_code == 204
    assert response["X-Yardstick-Reason"] == "all_leased"
    assert response["Retry-After"] in ("2", "3", "4")  # about one judgement (voting.ALL_LEASED_RETRY_SECONDS)


def test_next_when_the_study_is_finished_is_204_with_the_reason():
    study = make_study()
    vote_until(study, voters=annotators(study, 4))
    client, _ = session_annotator(study)

    response = next_of(client, study)

    assert response.status_code == 204
    assert response["X-Yardstick-Reason"] == "finished"


def test_a_logged_in_user_votes_as_their_own_annotator_once_they_consented(user_client):
    study = make_study()
    assert next_of(user_client, study).status_code == 403  # not an annotator of this study yet
    assert not Annotator.objects.filter(study=study).exists()  # asking created nothing
    assert user_client.post(f"/s/{study.slug}/", {"consent": "yes"}).status_code == 302
    annotator = Annotator.objects.get(study=study, user__username="volunteer")

    assignment = next_of(user_client, study).json()["assignment"]
    response = vote(user_client, assignment, "right")

    assert response.status_code == 201
    assert Vote.objects.get().annotator == annotator


# --- annotators: votes ---------------------------------------------------------------------------


def test_a_vote_is_recorded_and_a_retry_returns_the_same_vote_without_a_second_row():
    study = make_study()
    client, annotator = session_annotator(study)
    assignment = next_of(client, study).json()["assignment"]

    first = vote(client, assignment, "left", client_response_ms=1234)
    retry = vote(client, assignment, "right")

    recorded = Vote.objects.get()
    held = Assignment.objects.get(annotator=annotator, status=Assignment.Status.ACTIVE)
    recorded_fields = {"vote": recorded.pk, "assignment": assignment, "choice": "left"}
    assert first.status_code == 201
    assert {key: first.json()[key] for key in [*recorded_fields, "created"]} == {
        **recorded_fields,
        "created": True,
    }
    assert retry.status_code == 200
    assert {key: retry.json()[key] for key in [*recorded_fields, "created"]} == {
        **recorded_fields,
        "created": False,
    }
    assert (recorded.annotator, recorded.choice, recorded.client_response_ms) == (annotator, "left", 1234)
    # Both answers carry the annotator's next comparison: the one the first leased, which the retry
    # finds still held, exactly as GET next shows it.
    assert held.pk != assignment and first.json()["next"]["assignment"] == held.pk
    assert first.json()["next"] == retry.json()["next"] == next_of(client, study).json()
    assert (first.json()["next_reason"], first.json()["next_retry_after"]) == ("ok", None)
    assert Assignment.objects.filter(annotator=annotator).count() == 2


def test_a_votes_answer_carries_the_next_comparison_as_get_next_would_show_it():
    study = make_study(votes_per_annotator_per_ballot=3)
    client, annotator = session_annotator(study)
    first = next_of(client, study).json()

    answer = vote(client, first["assignment"], "right").json()["next"]

    held = Assignment.objects.select_related("comparison").get(annotator=annotator, status="active")
    left, right = held.comparison.left_item, held.comparison.right_item
    assert datetime.fromisoformat(answer.pop("expires_at")) == held.expires_at
    assert answer == {
        "assignment": held.pk,
        "question": "Which pair of words is more closely related?",
        "allow_ties": False,
        "left": {"item": left.pk, "tokens": [left.token_a.text, left.token_b.text]},
        "right": {"item": right.pk, "tokens": [right.token_a.text, right.token_b.text]},
        "progress": {
            "ballot": 1,
            "ballot_count": 3,
            "votes_in_ballot": 1,
            "cap": 3,
            "votes_total": 1,
            "ballot_voted": 1,
            "ballot_comparisons": 30,
            "quota_percent": 33,
            "ballot_percent": 3,
        },
    }
    assert {held.comparison.pair_low, held.comparison.pair_high} != set(
        Vote.objects.values_list("pair_low", "pair_high").get()
    )


def test_the_vote_that_reaches_the_quota_says_there_is_no_next_and_why():
    study = make_study(votes_per_annotator_per_ballot=2)
    client, annotator = session_annotator(study)
    first = vote(client, next_of(client, study).json()["assignment"]).json()
    second = vote(client, first["next"]["assignment"], "right")

    assert second.status_code == 201
    body = second.json()
    assert (body["next"], body["next_reason"], body["next_retry_after"]) == (None, "quota", None)
    assert not Assignment.objects.filter(annotator=annotator, status="active").exists()
    assert "Retry-After" not in second


def test_a_vote_when_the_rest_is_held_by_others_says_when_to_ask_again():
    study = make_study(tokens=3, ballot_count=1, appearances=2, lease_seconds=45)  # 3 comparisons
    client, _ = session_annotator(study)
    mine = next_of(client, study).json()["assignment"]
    for holder in annotators(study, 2):
        comparison_next_for(annotator=holder)

    body = vote(client, mine).json()

    # About one judgement's time, whatever the lease's length: the leases held are being voted on.
    assert (body["created"], body["next"], body["next_reason"]) == (True, None, "all_leased")
    assert body["next_retry_after"] in (2, 3, 4)


def test_the_vote_that_completes_the_last_ballot_says_the_study_finished():
    study = make_study(tokens=3, ballot_count=1, appearances=2)  # one ballot of 3 comparisons
    others = annotators(study, 2)
    for holder in others:
        held = comparison_next_for(annotator=holder).assignment
        vote_record_for(holder, held)
    client, _ = session_annotator(study)
    mine = next_of(client, study).json()["assignment"]

    with committed_callbacks():
        response = vote(client, mine)
    repeated = vote(client, mine)

    assert response.status_code == 201
    assert (response.json()["next"], response.json()["next_reason"]) == (None, "ballot_closing")
    assert Study.objects.get(pk=study.pk).status == Study.Status.FINISHED
    assert (repeated.status_code, repeated.json()["next_reason"]) == (200, "finished")


def test_a_tie_is_refused_when_the_study_does_not_allow_ties():
    study = make_study(allow_ties=False)
    client, _ = session_annotator(study)
    assignment = next_of(client, study).json()["assignment"]

    response = vote(client, assignment, "tie")

    assert response.status_code == 400
    assert response.json() == {"detail": 'this study does not allow ties: choose "left" or "right"'}
    assert Vote.objects.count() == 0


def test_a_tie_is_recorded_when_the_study_allows_ties():
    study = make_study(allow_ties=True)
    client, _ = session_annotator(study)
    body = next_of(client, study).json()

    response = vote(client, body["assignment"], "tie")

    assert body["allow_ties"] is True
    assert (response.status_code, response.json()["choice"]) == (201, "tie")


def test_an_unknown_choice_is_refused_naming_the_allowed_values():
    study = make_study()
    client, _ = session_annotator(study)
    assignment = next_of(client, study).json()["assignment"]

    response = vote(client, assignment, "up")

    assert response.status_code == 400
    assert response.json() == {
        "detail": 'choice: "up" is not a choice: send one of "left", "right", "tie".',
        "errors": ['choice: "up" is not a choice: send one of "left", "right", "tie".'],
    }


def test_a_negative_client_response_time_is_refused():
    study = make_study()
    client, _ = session_annotator(study)
    assignment = next_of(client, study).json()["assignment"]

    response = vote(client, assignment, client_response_ms=-5)

    assert response.status_code == 400
    assert response.json()["errors"] == [
        "client_response_ms: Ensure this value is greater than or equal to 0."
    ]


def test_a_vote_after_the_lease_expired_is_409_and_not_recorded():
    study = make_study()
    client, _ = session_annotator(study)
    assignment = next_of(client, study).json()["assignment"]
    Assignment.objects.filter(pk=assignment).update(expires_at=timezone.now() - timedelta(seconds=1))

    response = vote(client, assignment)

    assert response.status_code == 409
    assert response.json() == {
        "detail": "your time for this comparison ran out and it went back to the pool; ask for the next one"
    }
    assert Vote.objects.count() == 0


def test_a_vote_on_a_closed_ballot_is_409():
    study = make_study()
    client, _ = session_annotator(study)
    assignment = next_of(client, study).json()["assignment"]
    Ballot.objects.filter(study=study).update(status=Ballot.Status.CLOSED)

    response = vote(client, assignment)

    assert response.status_code == 409
    assert response.json() == {"detail": "ballot 1 is closed; this comparison no longer takes votes"}


def test_an_annotator_cannot_vote_on_another_annotators_assignment():
    study = make_study()
    alice, _ = session_annotator(study)
    bob, _ = session_annotator(study)
    assignment = next_of(alice, study).json()["assignment"]

    response = vote(bob, assignment)

    assert response.status_code == 404
    assert response.json() == {"detail": f"assignment {assignment} is not one of yours"}
    assert Vote.objects.count() == 0


def test_an_annotator_cannot_read_another_annotators_vote_by_retrying_it():
    study = make_study()
    alice, _ = session_annotator(study)
    bob, _ = session_annotator(study)
    assignment = next_of(alice, study).json()["assignment"]
    assert vote(alice, assignment, "right").status_code == 201

    response = vote(bob, assignment, "left")

    assert response.status_code == 404
    assert response.json() == {"detail": f"assignment {assignment} is not one of yours"}


def test_an_assignment_of_a_study_the_caller_is_not_in_is_404_like_an_unknown_one():
    study, other = make_study(), make_study()
    alice, _ = session_annotator(study)
    bob, _ = session_annotator(other)
    assignment = next_of(alice, study).json()["assignment"]

    foreign = vote(bob, assignment)
    unknown = vote(bob, assignment + 1000)

    assert (foreign.status_code, unknown.status_code) == (404, 404)
    assert foreign.json() == {"detail": f"assignment {assignment} is not one of yours"}
    assert unknown.json() == {"detail": f"assignment {assignment + 1000} is not one of yours"}


def test_a_session_annotators_vote_without_the_csrf_token_is_refused():
    study = make_study()
    client, _ = session_annotator(study, client=Client(enforce_csrf_checks=True))
    assignment = next_of(client, study).json()["assignment"]

    refused = vote(client, assignment)
    accepted = vote(client, assignment, headers={"X-CSRFToken": client.cookies["csrftoken"].value})

    assert refused.status_code == 403
    assert refused.json() == {
        "detail": "CSRF Failed: CSRF token missing. Send the csrftoken cookie's value in the X-CSRFToken header."
    }
    assert accepted.status_code == 201
    assert Vote.objects.count() == 1


def test_a_vote_without_any_identity_is_404():
    study = make_study()
    alice, _ = session_annotator(study)
    assignment = next_of(alice, study).json()["assignment"]

    response = vote(Client(enforce_csrf_checks=True), assignment)

    assert response.status_code == 404
    assert response.json() == {"detail": f"assignment {assignment} is not one of yours"}


# --- staff: who may call -------------------------------------------------------------------------

STAFF_ENDPOINTS = [
    ("get", "/api/studies/"),
    ("post", "/api/studies/"),
    ("get", "/api/studies/{slug}/"),
    ("put", "/api/studies/{slug}/"),
    ("patch", "/api/studies/{slug}/"),
    ("delete", "/api/studies/{slug}/"),
    ("get", "/api/studies/{slug}/tokens/"),
    ("post", "/api/studies/{slug}/tokens/"),
    ("get", "/api/studies/{slug}/items/"),
    ("post", "/api/studies/{slug}/items/generate/"),
    ("post", "/api/studies/{slug}/items/upload/"),
    ("get", "/api/studies/{slug}/plan/"),
    ("post", "/api/studies/{slug}/start/"),
    ("post", "/api/studies/{slug}/close-ballot/"),
    ("post", "/api/studies/{slug}/duplicate/"),
    ("get", "/api/studies/{slug}/progress/"),
    ("get", "/api/studies/{slug}/results/"),
]


def call_every_staff_endpoint(client: Client, study: Study) -> dict:
    return {
        (method, path): getattr(client, method)(path.format(slug=study.slug), content_type="application/json")
        for method, path in STAFF_ENDPOINTS
    }


def test_anonymous_requests_reach_no_staff_endpoint_and_change_nothing():
    study = make_study(start=False)

    responses = call_every_staff_endpoint(Client(), study)

    assert {key: (r.status_code, r.json()) for key, r in responses.items()} == {
        key: (401, NOT_LOGGED_IN) for key in responses
    }
    study.refresh_from_db()
    assert (study.status, Study.objects.count(), study.items.count()) == ("draft", 1, 15)


def test_logged_in_users_who_are_not_staff_reach_no_staff_endpoint(user_client):
    study = make_study(start=False)

    responses = call_every_staff_endpoint(user_client, study)

    assert {key: (r.status_code, r.json()) for key, r in responses.items()} == {
        key: (403, NOT_STAFF) for key in responses
    }
    study.refresh_from_db()
    assert (study.status, Study.objects.count()) == ("draft", 1)


def test_an_annotator_cannot_reach_results_progress_tokens_or_items():
    study = make_study()
    vote_until(study, voters=annotators(study, 4))
    client, _ = session_annotator(study)
    paths = ["results", "progress", "tokens", "items", "plan"]

    statuses = {path: client.get(f"/api/studies/{study.slug}/{path}/").status_code for path in paths}

    assert statuses == dict.fromkeys(paths, 401)  # the annotator's cookie is no credential of a user


def test_a_staff_token_authenticates_without_a_session(django_user_model):
    staff = django_user_model.objects.create_user("robot", is_staff=True)
    key = ApiToken.objects.create(user=staff).key
    make_study()

    response = Client().get("/api/studies/", HTTP_AUTHORIZATION=f"Token {key}")

    assert response.status_code == 200
    assert response.json()["count"] == 1


def test_a_staff_session_post_without_the_csrf_token_is_refused(django_user_model):
    staff = django_user_model.objects.create_user("careful", is_staff=True)
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)

    response = client.post("/api/studies/", {"name": "X", "slug": "x"}, content_type="application/json")

    assert response.status_code == 403
    assert Study.objects.count() == 0


# --- staff: studies ------------------------------------------------------------------------------


def test_staff_create_a_draft_study_owned_by_them(staff_client):
    response = staff_client.post(
        "/api/studies/",
        {"name": "Pilot", "slug": "pilot", "ballot_count": 4, "keep_fraction": 0.5, "appearances": 20},
        content_type="application/json",
    )

    assert response.status_code == 201
    body = response.json()
    assert (body["slug"], body["status"], body["created_by"], body["ballot_count"]) == (
        "pilot",
        "draft",
        "researcher",
        4,
    )
    assert Study.objects.get(slug="pilot").created_by.username == "researcher"


def test_a_keep_fraction_outside_0_1_is_refused_with_the_allowed_range(staff_client):
    response = staff_client.post(
        "/api/studies/", {"name": "P", "slug": "p", "keep_fraction": 1.5}, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [
        "keep_fraction: keep_fraction α must lie strictly between 0 and 1 (the paper uses 0.5), got 1.5"
    ]


def test_a_study_needs_appearances_or_a_comparison_budget(staff_client):
    response = staff_client.post(
        "/api/studies/", {"name": "P", "slug": "p", "appearances": None}, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [
        "appearances: the plan needs the appearances M of each item per ballot (the paper uses 20) or a "
        "comparison budget from which M is derived"
    ]
    assert not Study.objects.exists()


def test_a_plan_impossible_for_the_drafts_items_is_refused_with_the_plans_error(staff_client):
    study = make_study(start=False)  # 15 items
    with pytest.raises(ValueError) as plan_error:
        ballot_sizes(15, 10, 0.5)

    response = staff_client.patch(
        f"/api/studies/{study.slug}/", {"ballot_count": 10}, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["errors"] == [f"plan: {plan_error.value}"]
    study.refresh_from_db()
    assert study.ballot_count == 3


def test_a_running_study_keeps_its_plan_but_its_wording_can_change(staff_client):
    study = make_study()
    url = f"/api/studies/{study.slug}/"

    frozen = staff_client.patch(url, {"appearances": 6}, content_type="application/json")
    reworded = staff_client.patch(url, {"question": "Which pair is closer?"}, content_type="application/json")

    assert frozen.status_code == 409
    assert frozen.json() == {
        "detail": "the study is running, so appearances cannot change any more; nothing was changed. "
        "Duplicate the study to run the same items again with other values",
        "errors": [
            "appearances: cannot change now that the study is running: the plan shaped the ballots already opened"
        ],
    }
    assert reworded.status_code == 200
    study.refresh_from_db()
    assert (study.appearances, study.question) == (4, "Which pair is closer?")


def test_a_draft_can_be_deleted_but_a_started_study_cannot(staff_client):
    draft, running = make_study(start=False), make_study()

    deleted = staff_client.delete(f"/api/studies/{draft.slug}/")
    refused = staff_client.delete(f"/api/studies/{running.slug}/")

    assert deleted.status_code == 204
    assert refused.status_code == 409
    assert refused.json() == {
        "detail": "the study is running: only a draft can be deleted, so that no votes are lost"
    }
    assert list(Study.objects.values_list("slug", flat=True)) == [running.slug]


def test_an_unknown_study_is_404_for_staff(staff_client):
    response = staff_client.get("/api/studies/nope/plan/")

    assert response.status_code == 404
    assert response.json() == {"detail": "there is no study 'nope'; GET /api/studies/ lists them"}


# --- staff: pools --------------------------------------------------------------------------------


def draft_study(**fields) -> Study:
    return Study.objects.create(name="Draft", slug="draft", appearances=4, ballot_count=2, **fields)


def test_tokens_upload_as_a_multipart_file_imports_them(staff_client):
    study = draft_study()
    upload = SimpleUploadedFile("tokens.csv", tokens_csv({"Colours": 3, "Animals": 2}).encode(), "text/csv")

    response = staff_client.post(f"/api/studies/{study.slug}/tokens/", {"file": upload})

    assert response.status_code == 201
    assert response.json() == {
        "areas_created": 2,
        "tokens_created": 5,
        "items_created": 0,
        "tokens_removed": 0,
        "items_removed": 0,
        "warnings": [],
    }
    listed = staff_client.get(f"/api/studies/{study.slug}/tokens/?limit=2").json()
    assert listed["count"] == 5
    assert [(t["text"], t["area"], t["rare"]) for t in listed["results"]] == [
        ("animals-0", "Animals", True),
        ("animals-1", "Animals", False),
    ]


def test_tokens_upload_as_a_raw_csv_body_imports_them(staff_client):
    study = draft_study()

    response = staff_client.post(
        f"/api/studies/{study.slug}/tokens/", "cat,Animals\ndog,Animals\n", content_type="text/csv"
    )

    assert response.status_code == 201
    assert sorted(study.tokens.values_list("text", flat=True)) == ["cat", "dog"]


def test_a_tokens_file_with_problems_is_refused_by_line_and_imports_nothing(staff_client):
    study = draft_study()
    csv = "token,area\ncat,Animals\n,Animals\ncat,Animals\nred,Colours\n"

    response = staff_client.post(f"/api/studies/{study.slug}/tokens/", csv, content_type="text/csv")

    assert response.status_code == 400
    assert response.json() == {
        "detail": "the tokens file has 3 problems; nothing was imported",
        "errors": [
            "line 3: the token is empty",
            "line 4: 'cat' repeats line 2",
            "area 'Colours' has 1 token; an area needs at least two tokens to form an item",
        ],
    }
    assert study.tokens.count() == 0


def test_a_tokens_file_over_the_limit_is_413_and_imports_nothing(staff_client):
    study = draft_study()
    oversize = ("cat,Animals\n" * (MAX_UPLOAD_BYTES // 12 + 1)).encode()
    upload = SimpleUploadedFile("tokens.csv", oversize, "text/csv")

    as_file = staff_client.post(f"/api/studies/{study.slug}/tokens/", {"file": upload})
    as_body = staff_client.post(f"/api/studies/{study.slug}/tokens/", oversize, content_type="text/csv")

    expected = {
        "detail": f"the file is {len(oversize):,} bytes; the limit is {MAX_UPLOAD_BYTES:,} bytes (2 MiB)"
    }
    assert (as_file.status_code, as_file.json()) == (413, expected)
    assert (as_body.status_code, as_body.json()) == (413, expected)
    assert study.tokens.count() == 0


def test_a_tokens_upload_without_a_file_says_how_to_send_one(staff_client):
    study = draft_study()

    response = staff_client.post(f"/api/studies/{study.slug}/tokens/", {})

    assert response.status_code == 400
    assert response.json() == {
        "detail": "no file received: send the CSV as the multipart form field 'file', "
        "or as the request body with the header 'Content-Type: text/csv'"
    }


def test_tokens_cannot_be_added_to_a_running_study(staff_client):
    study = make_study()

    response = staff_client.post(f"/api/studies/{study.slug}/tokens/", "a,B\nc,B\n", content_type="text/csv")

    assert response.status_code == 409
    assert response.json() == {
        "detail": "cannot import tokens: the study is running; only a draft study can change its pools"
    }


def test_tokens_upload_with_mode_replace_replaces_the_pool_and_counts_what_went(staff_client):
    study = draft_study()
    url = f"/api/studies/{study.slug}/tokens/"
    staff_client.post(url, tokens_csv({"Animals": 4}), content_type="text/csv")
    staff_client.post(f"/api/studies/{study.slug}/items/generate/", {}, content_type="application/json")

    response = staff_client.post(
        f"{url}?mode=replace", "token\tarea\nred\tColours\nblue\tColours\n", content_type="text/csv"
    )

    assert response.status_code == 201
    assert response.json() == {
        "areas_created": 1,
        "tokens_created": 2,
        "items_created": 0,
        "tokens_removed": 4,
        "items_removed": 6,
        "warnings": ["the tokens file is separated by tabs, not commas: it was read that way"],
    }
    assert sorted(study.tokens.values_list("text", flat=True)) == ["blue", "red"]
    assert study.items.count() == 0


def test_a_refused_replacement_through_the_api_leaves_the_pool_as_it_was(staff_client):
    study = draft_study()
    url = f"/api/studies/{study.slug}/tokens/"
    staff_client.post(url, "cat,Animals\ndog,Animals\n", content_type="text/csv")
    upload = SimpleUploadedFile("tokens.csv", b"red,Colours\n", "text/csv")

    response = staff_client.post(f"{url}?mode=replace", {"file": upload})

    assert response.status_code == 400
    assert response.json()["errors"] == [
        "area 'Colours' has 1 token; an area needs at least two tokens to form an item"
    ]
    assert sorted(study.tokens.values_list("text", flat=True)) == ["cat", "dog"]


def test_an_unknown_upload_mode_is_refused_and_imports_nothing(staff_client):
    study = draft_study()

    response = staff_client.post(
        f"/api/studies/{study.slug}/tokens/?mode=overwrite",
        "cat,Animals\ndog,Animals\n",
        content_type="text/csv",
    )

    assert response.status_code == 400
    assert response.json() == {
        "detail": 'mode: "overwrite" is not a valid choice.',
        "errors": ['mode: "overwrite" is not a valid choice.'],
    }
    assert study.tokens.count() == 0


def test_the_pool_of_a_running_study_cannot_be_replaced(staff_client):
    study = make_study()

    response = staff_client.post(
        f"/api/studies/{study.slug}/tokens/?mode=replace", "a,B\nc,B\n", content_type="text/csv"
    )

    assert response.status_code == 409
    assert response.json() == {
        "detail": "cannot replace the tokens: the study is running; only a draft study can change its pools"
    }
    assert study.tokens.count() == 6


def test_items_are_generated_within_areas_sampled_down_to_the_cap_and_listed(staff_client):
    study = draft_study()
    staff_client.post(
        f"/api/studies/{study.slug}/tokens/", tokens_csv({"Animals": 4}), content_type="text/csv"
    )

    response = staff_client.post(
        f"/api/studies/{study.slug}/items/generate/", {"max_per_area": 3}, content_type="application/json"
    )

    assert response.status_code == 201
    assert response.json() == {
        "areas_created": 0,
        "tokens_created": 0,
        "items_created": 3,
        "tokens_removed": 0,
        "items_removed": 0,
        "warnings": ["area 'Animals': sampled 3 of 6 pairs"],
    }
    listed = staff_client.get(f"/api/studies/{study.slug}/items/").json()
    first = study.items.select_related("token_a", "token_b").get(index=0)
    assert listed["count"] == 3
    assert listed["results"][0] == {
        "id": first.pk,
        "index": 0,
        "tokens": [first.token_a.text, first.token_b.text],
        "area": "Animals",
        "final_rank": None,
        "area_rank": None,
        "final_score": None,
        "last_ballot": None,
    }


def test_items_uploaded_as_explicit_pairs_replace_the_generated_ones(staff_client):
    study = draft_study()
    staff_client.post(
        f"/api/studies/{study.slug}/tokens/", tokens_csv({"Animals": 4}), content_type="text/csv"
    )
    pairs = SimpleUploadedFile("pairs.csv", b"token_a,token_b\nanimals-0,animals-1\nanimals-2,animals-3\n")

    response = staff_client.post(f"/api/studies/{study.slug}/items/upload/", {"file": pairs})

    assert response.status_code == 201
    assert response.json()["items_created"] == 2
    assert sorted((i.token_a.text, i.token_b.text) for i in study.items.all()) == [
        ("animals-0", "animals-1"),
        ("animals-2", "animals-3"),
    ]


# --- staff: plan and lifecycle -------------------------------------------------------------------


def test_the_plan_is_the_services_plan_for_the_current_items(staff_client):
    study = make_study(start=False)

    response = staff_client.get(f"/api/studies/{study.slug}/plan/")

    assert response.status_code == 200
    assert response.json() == study_plan(study=study).as_dict()
    assert response.json()["sizes"] == [15, 8, 4]


def test_the_plan_of_a_study_without_items_is_400_with_the_reason(staff_client):
    study = draft_study()

    response = staff_client.get(f"/api/studies/{study.slug}/plan/")

    assert response.status_code == 400
    assert response.json() == {"detail": "a study needs at least two items to compare, got 0"}


def test_start_opens_ballot_1_and_a_second_start_is_409(staff_client):
    study = make_study(start=False)

    started = staff_client.post(f"/api/studies/{study.slug}/start/")
    again = staff_client.post(f"/api/studies/{study.slug}/start/")

    assert started.status_code == 200
    assert started.json()["status"] == "running"
    assert list(study.ballots.values_list("number", "status")) == [(1, "open")]
    assert again.status_code == 409
    assert again.json() == {"detail": "the study is already running"}


def test_close_ballot_closes_the_open_ballot_and_opens_the_next(staff_client):
    study = make_study()
    vote_until(study, voters=annotators(study, 2), max_votes=5)

    with committed_callbacks():
        response = staff_client.post(f"/api/studies/{study.slug}/close-ballot/")

    assert response.status_code == 202
    assert response.json() == {
        "ballot": 1,
        "detail": "ballot 1 is closing; its scores are computed and the next ballot opens in the background "
        "(GET progress/ to follow it)",
    }
    assert list(study.ballots.values_list("number", "status")) == [(1, "closed"), (2, "open")]


def test_close_ballot_of_a_draft_is_409(staff_client):
    study = make_study(start=False)

    response = staff_client.post(f"/api/studies/{study.slug}/close-ballot/")

    assert response.status_code == 409
    assert response.json() == {"detail": "the study has no open ballot (it is draft)"}


def test_duplicate_makes_a_draft_with_the_same_items_and_plan(staff_client):
    study = make_study()

    response = staff_client.post(
        f"/api/studies/{study.slug}/duplicate/", {"slug": "replication"}, content_type="application/json"
    )

    assert response.status_code == 201
    body = response.json()
    assert (body["slug"], body["status"], body["duplicated_from"], body["created_by"]) == (
        "replication",
        "draft",
        study.slug,
        "researcher",
    )
    copy = Study.objects.get(slug="replication")
    assert (copy.items.count(), copy.ballot_count, copy.appearances) == (15, 3, 4)


def test_progress_lists_every_ballot_with_its_votes(staff_client):
    study = make_study()
    vote_until(study, voters=annotators(study, 2), max_votes=6)

    response = staff_client.get(f"/api/studies/{study.slug}/progress/")

    assert response.status_code == 200
    (ballot,) = response.json()
    assert {key: ballot[key] for key in ("number", "status", "items", "comparisons", "votes", "percent")} == {
        "number": 1,
        "status": "open",
        "items": 15,
        "comparisons": 30,
        "votes": 6,
        "percent": 20,
    }
    assert (ballot["closed_at"], ballot["rescale_slope"]) == (None, None)


# --- staff: results ------------------------------------------------------------------------------


def test_results_are_409_until_the_study_is_finished(staff_client):
    study = make_study()

    response = staff_client.get(f"/api/studies/{study.slug}/results/")

    assert response.status_code == 409
    assert response.json() == {
        "detail": "the study is running; ballot 1 of 3 is open: the final ranking exists once its last ballot "
        "has closed"
    }


def test_results_rank_every_item_by_final_score_with_x_per_ballot(staff_client):
    study = make_study()  # ballots of 15, 8, 4 items
    vote_until(study, voters=annotators(study, 4))  # the item with the lower index always wins

    response = staff_client.get(f"/api/studies/{study.slug}/results/")

    assert response.status_code == 200
    ranking = response.json()
    assert [row["rank"] for row in ranking] == list(range(1, 16))
    assert sorted(row["last_ballot"] for row in ranking) == [1] * 7 + [2] * 4 + [3] * 4
    assert all(len(row["win_ratios"]) == row["last_ballot"] for row in ranking)
    best = study.items.select_related("token_a", "token_b", "area").get(index=0)
    assert [row["area_rank"] for row in ranking] == list(range(1, 16))  # one area: the study's rank
    assert ranking[0] == {
        "rank": 1,
        "area_rank": 1,
        "item": best.pk,
        "index": 0,
        "tokens": [best.token_a.text, best.token_b.text],
        "area": "Area0",
        "final_score": 1.0,
        "last_ballot": 3,
        "win_ratios": [1.0, 1.0, 1.0],  # never loses: x = 1 in every ballot
    }
    finals = [row["final_score"] for row in ranking]
    assert finals == sorted(finals, reverse=True)
