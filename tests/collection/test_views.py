"""The annotator's pages without JavaScript: entry and consent, voting, and every 'nothing to vote' page."""

import re
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.conf import settings
from django.core import signing
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from collection.identity import ANNOTATOR_COOKIE, annotator_consent, annotator_for
from collection.models import Annotator, Assignment, Ballot, Comparison, Study, Vote
from collection.views import completion_url
from tests.factories import annotators, make_study, vote_until

pytestmark = pytest.mark.django_db

PROLIFIC_COMPLETION = "https://app.prolific.com/submissions/complete"


class Page(HTMLParser):
    """The elements of a rendered page that have an id: their attributes and their whitespace-normalised text."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}

    def __init__(self, html: str):
        super().__init__()
        self.attributes: dict[str, dict] = {}
        self._text: dict[str, list[str]] = {}
        self._open: list[str | None] = []
        self.feed(html)
        self.text = {key: " ".join("".join(parts).split()) for key, parts in self._text.items()}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        element_id = attrs.get("id")
        if element_id:
            self.attributes[element_id] = attrs
            self._text[element_id] = []
        if tag not in self.VOID:
            self._open.append(element_id)

    def handle_endtag(self, tag):
        if tag not in self.VOID:
            self._open.pop()

    def handle_data(self, data):
        for element_id in self._open:
            if element_id:
                self._text[element_id].append(data)


def page(response) -> Page:
    return Page(response.content.decode())


def remembered_by_cookie(client) -> dict:
    """The {study id: annotator id} of the client's signed annotator cookie."""
    return signing.loads(client.cookies[ANNOTATOR_COOKIE].value, salt="collection.identity.annotators")


def entry_url(study: Study) -> str:
    return reverse("collection:entry", args=[study.slug])


def vote_url(study: Study) -> str:
    return reverse("collection:vote", args=[study.slug])


def join(client, study: Study, participant: str = "abc") -> Annotator:
    """Open the study's link as a crowd participant and consent, as an annotator does."""
    client.get(entry_url(study), {"participant": participant})
    client.post(entry_url(study), {"consent": "yes", "participant": participant})
    return Annotator.objects.get(study=study, participant_id=participant)


def active_assignment(annotator: Annotator) -> Assignment:
    return Assignment.objects.select_related("comparison").get(
        annotator=annotator, status=Assignment.Status.ACTIVE
    )


def shown_assignment(client, study: Study) -> str:
    """Open the voting page; the id of the assignment its form carries."""
    html = client.get(vote_url(study)).content.decode()
    return re.search(r'<input type="hidden" name="assignment" value="(\d+)">', html).group(1)


@pytest.fixture
def study():
    """15 items, ballots of 30, 16 and 8 comparisons; 3 votes per annotator per ballot."""
    return make_study(votes_per_annotator_per_ballot=3, completion_redirect_url=PROLIFIC_COMPLETION)


# --- entry and consent ---------------------------------------------------------------------------


def test_the_entry_page_shows_the_name_instructions_and_a_consent_form(client, study):
    response = client.get(entry_url(study), {"participant": "abc"})
    shown = page(response)
    assert response.status_code == 200
    assert shown.text["main"].startswith(f"{study.name} Instructions {study.instructions}")
    assert shown.attributes["consent"] == {
        "type": "checkbox",
        "id": "consent",
        "name": "consent",
        "value": "yes",
        "required": None,
    }
    assert re.findall(
        r'<input type="hidden" name="participant" value="([^"]*)">', response.content.decode()
    ) == ["abc"]


def test_a_participant_id_creates_the_annotator_once_and_the_signed_cookie_remembers_it(client, study):
    client.get(entry_url(study), {"participant": "abc"})
    client.get(entry_url(study), {"participant": "abc"})
    annotator = Annotator.objects.get(study=study)
    assert annotator.participant_id == "abc"
    assert remembered_by_cookie(client) == {str(study.pk): annotator.pk}
    assert settings.SESSION_COOKIE_NAME not in client.cookies  # no session row to read per request

    client.get(entry_url(study))  # no id in the link: the cookie says who it is
    response = client.post(entry_url(study), {"consent": "yes"})
    assert response.status_code == 302 and response["Location"] == vote_url(study)
    assert Annotator.objects.count() == 1
    assert Annotator.objects.get().consented_at is not None


@pytest.mark.parametrize("parameter", ["PROLIFIC_PID", "workerId"])
def test_the_crowd_platforms_own_parameter_names_are_accepted(client, study, parameter):
    client.get(entry_url(study), {parameter: "w-17"})
    assert list(Annotator.objects.values_list("participant_id", flat=True)) == ["w-17"]


def test_consent_redirects_to_the_voting_page_and_records_when(client, study):
    before = timezone.now()
    client.get(entry_url(study), {"participant": "abc"})
    response = client.post(entry_url(study), {"consent": "yes", "participant": "abc"})
    assert response.status_code == 302 and response["Location"] == vote_url(study)
    assert Annotator.objects.get(participant_id="abc").consented_at >= before


def test_consent_without_the_box_ticked_is_refused_with_what_to_do(client, study):
    client.get(entry_url(study), {"participant": "abc"})
    response = client.post(entry_url(study), {"participant": "abc"})
    assert response.status_code == 400
    assert page(response).text["consent-error"] == (
        "Tick the box to confirm that you agree to take part, then press Start."
    )
    assert Annotator.objects.get(participant_id="abc").consented_at is None


def test_without_a_participant_id_the_annotator_is_bound_to_the_browser_session(client, study):
    client.get(entry_url(study))
    assert Annotator.objects.count() == 0  # reading the instructions creates nobody
    client.post(entry_url(study), {"consent": "yes"})
    annotator = Annotator.objects.get()
    assert (annotator.participant_id, annotator.session_key) == (None, client.session.session_key)
    assert client.get(vote_url(study)).status_code == 200


def test_an_annotator_who_consented_gets_a_link_to_continue_instead_of_the_form(client, study):
    join(client, study)
    shown = page(client.get(entry_url(study)))
    assert shown.attributes["continue-link"]["href"] == vote_url(study)
    assert "consent" not in shown.attributes


def test_an_unknown_study_is_not_found(client):
    assert client.get("/s/no-such-study/").status_code == 404
    assert client.get("/s/no-such-study/vote/").status_code == 404
    assert client.post("/s/no-such-study/", {"consent": "yes"}).status_code == 404


def test_a_draft_study_says_it_has_not_started_and_takes_no_consent(client):
    draft = make_study(start=False)
    shown = page(client.get(entry_url(draft), {"participant": "abc"}))
    assert shown.text["study-state"] == (
        "This study has not started yet. Please come back later: the link you used will work as soon as it opens."
    )
    assert "consent" not in shown.attributes
    response = client.post(entry_url(draft), {"consent": "yes", "participant": "abc"})
    assert response.status_code == 302 and response["Location"] == entry_url(draft)
    assert Annotator.objects.get(participant_id="abc").consented_at is None


def test_the_voting_page_of_a_draft_study_says_it_has_not_started(client):
    draft = make_study(start=False)
    annotator_consent(annotator=annotator_for(study=draft, participant_id="abc"))
    client.get(entry_url(draft), {"participant": "abc"})
    response = client.get(vote_url(draft))
    assert response.status_code == 200
    assert page(response).text["nothing-heading"] == "This study has not started yet"


def test_a_finished_study_shows_the_completion_code_to_voters_and_the_no_work_code_to_newcomers(client):
    finished = make_study()
    voter = join(client, finished, participant="voter")
    vote_until(finished, voters=[voter, *annotators(finished, 5)])
    finished.refresh_from_db()
    assert finished.status == Study.Status.FINISHED
    assert Vote.objects.filter(annotator=voter).count() > 0

    shown = page(client.get(entry_url(finished)))
    assert shown.text["study-state"] == (
        "This study has finished: every comparison has been judged. Thank you for your interest."
    )
    assert shown.text["completion-code"] == finished.completion_code
    shown = page(client.get(vote_url(finished)))
    assert shown.text["nothing-heading"] == "Thank you, this study has finished"
    assert shown.text["completion-code"] == finished.completion_code

    newcomer = page(client.get(entry_url(finished), {"participant": "newcomer"}))
    assert newcomer.text["completion-code"] == finished.no_work_code  # nothing left: the no-work exit
    assert "consent" not in newcomer.attributes


# --- voting --------------------------------------------------------------------------------------


def test_voting_needs_consent_first(client, study):
    response = client.get(vote_url(study))
    assert response.status_code == 302 and response["Location"] == entry_url(study)
    client.get(entry_url(study), {"participant": "abc"})
    response = client.get(vote_url(study), follow=True)
    assert response.redirect_chain == [(entry_url(study), 302)]
    assert (
        page(response)
        .text["main"]
        .startswith("Please read the instructions and agree to take part before voting.")
    )
    response = client.post(vote_url(study), {"assignment": "1", "choice": "left"})
    assert response.status_code == 302 and response["Location"] == entry_url(study)
    assert Assignment.objects.count() == 0 and Vote.objects.count() == 0


def test_the_voting_page_shows_the_question_and_the_tokens_of_both_items(client, study):
    annotator = join(client, study)
    response = client.get(vote_url(study))
    assert response.status_code == 200
    shown = page(response)
    assignment = active_assignment(annotator)
    comparison = assignment.comparison
    assert shown.text["question"] == study.question
    assert shown.text["choice-left"] == f"{comparison.left_item.token_a} – {comparison.left_item.token_b}"
    assert shown.text["choice-right"] == f"{comparison.right_item.token_a} – {comparison.right_item.token_b}"
    assert (shown.attributes["choice-left"]["value"], shown.attributes["choice-right"]["value"]) == (
        "left",
        "right",
    )
    assert "choice-tie" not in shown.attributes
    assert re.findall(r'name="assignment" value="(\d+)"', response.content.decode()) == [str(assignment.pk)]


def test_the_voting_page_repeats_the_instructions_and_the_consent_text_behind_a_disclosure(client, study):
    join(client, study)
    shown = page(client.get(vote_url(study)))
    # A <details> element: closed at first, opened and closed by the browser itself without JavaScript,
    # and on the page itself, so reading it loses neither the comparison nor the annotator's place.
    assert shown.attributes["instructions"] == {"class": "instructions-again", "id": "instructions"}
    assert shown.text["instructions-toggle"] == "Instructions"
    assert shown.text["instructions"] == (
        f"Instructions {study.instructions} Each time you will see this question and two pairs of words: "
        f"{study.question} Choose a pair by clicking or tapping it. On a keyboard, press ← or 1 for the "
        "left pair and → or 2 for the right pair. Taking part We record each of your choices with the time "
        "it took and your participant id, and use them only to rank the pairs of this study. Taking part is "
        "voluntary: you can stop at any time by closing this page. Back to the comparison"
    )
    assert shown.attributes["instructions-close"]["href"] == "#vote-form"


def test_the_instructions_on_the_voting_page_are_those_of_the_entry_page(client):
    with_ties = make_study(allow_ties=True)  # the instructions name the tie's keys too
    entry = page(client.get(entry_url(with_ties)))
    client.post(entry_url(with_ties), {"consent": "yes"})  # no participant id: the browser's session
    shown = page(client.get(vote_url(with_ties)))
    # The entry page reads "<name> <instructions> Taking part <consent text> I have read ... Start".
    instructions, consent_form = (
        entry.text["main"].removeprefix(f"{with_ties.name} ").split(" Taking part ", 1)
    )
    consent_text = consent_form.removesuffix(" I have read the instructions and agree to take part. Start")
    consent_text = consent_text.removeprefix(f"{entry.text['expectations']} ")  # only before consenting
    assert consent_text.endswith(
        "an anonymous number kept in this browser, and use them only to rank the "
        "pairs of this study. Taking part is voluntary: you can stop at any time "
        "by closing this page."
    )
    assert shown.text["instructions"] == f"{instructions} Taking part {consent_text} Back to the comparison"


def test_the_first_comparison_of_a_new_ballot_says_a_new_round_has_begun(client, study):
    annotator = join(client, study)
    shown = page(client.get(vote_url(study)))
    assert (shown.attributes["ballot-notice"]["role"], shown.text["ballot-notice"]) == ("status", "")
    assert shown.attributes["ballot-notice"]["data-ballot"] == "1"
    response = client.post(vote_url(study), {"assignment": shown_assignment(client, study), "choice": "left"})
    assert page(response).text["ballot-notice"] == ""  # the annotator's first ballot is no new round
    # Everyone else votes the rest of ballot 1 (this annotator's lease goes back to the pool), which closes.
    Assignment.objects.filter(annotator=annotator, status=Assignment.Status.ACTIVE).update(
        status=Assignment.Status.EXPIRED
    )
    Comparison.objects.filter(ballot__study=study, status=Comparison.Status.LEASED).update(
        status=Comparison.Status.OPEN, lease_expires_at=None
    )
    vote_until(study, voters=annotators(study, 12), max_votes=29)
    assert list(Ballot.objects.filter(study=study).values_list("number", "status")) == [
        (1, "closed"),
        (2, "open"),
    ]

    shown = page(client.get(vote_url(study)))
    assert shown.text["ballot-notice"] == "A new round has begun: ballot 2 of 3."
    assert shown.attributes["ballot-notice"]["data-ballot"] == "2"
    assert "Your comparisons in this ballot: 0 of 3" in shown.text["main"]
    # Once the annotator has voted in it, the ballot is no longer new.
    response = client.post(vote_url(study), {"assignment": shown_assignment(client, study), "choice": "left"})
    assert page(response).text["ballot-notice"] == ""
    assert "Your comparisons in this ballot: 1 of 3" in page(response).text["main"]


def test_the_voting_page_shows_both_progress_bars(client, study):
    join(client, study)
    client.post(vote_url(study), {"assignment": shown_assignment(client, study), "choice": "left"})
    shown = page(client.get(vote_url(study)))
    assert {k: shown.attributes["quota-progress"][k] for k in ("max", "value")} == {"max": "3", "value": "1"}
    assert {k: shown.attributes["ballot-progress"][k] for k in ("max", "value")} == {
        "max": "30",
        "value": "1",
    }
    assert shown.text["progress-heading"] == "Progress"
    assert (
        "Progress Your comparisons in this ballot: 1 of 3 33% Ballot 1 of 3, everyone's comparisons: 1 of 30 3%"
        in shown.text["main"]
    )


def test_without_a_cap_the_quota_is_a_count_without_a_bar(client):
    uncapped = make_study()
    join(client, uncapped)
    shown = page(client.get(vote_url(uncapped)))
    assert "quota-progress" not in shown.attributes
    assert "Your comparisons in this ballot: 0 Ballot 1 of 3" in shown.text["main"]


def test_the_tie_button_is_offered_only_when_the_study_allows_ties(client):
    with_ties = make_study(allow_ties=True)
    annotator = join(client, with_ties)
    shown = page(client.get(vote_url(with_ties)))
    assert shown.text["choice-tie"] == "Equally related"
    assignment = active_assignment(annotator)
    response = client.post(vote_url(with_ties), {"assignment": assignment.pk, "choice": "tie"})
    assert response.status_code == 200 and page(response).text["choice-tie"] == "Equally related"
    assert Vote.objects.get().choice == "tie"


def test_the_voting_page_sets_the_csrf_cookie_and_points_its_script_at_the_api(client, study):
    join(client, study)
    client.cookies.pop("csrftoken", None)
    response = client.get(vote_url(study))
    assert response.cookies["csrftoken"].value != ""
    form = page(response).attributes["vote-form"]
    assert (form["data-api-vote"], form["data-api-next"]) == (
        "/api/votes/",
        f"/api/studies/{study.slug}/next/",
    )
    assert '<script defer src="/static/collection/vote.js"></script>' in response.content.decode()
    assert response["Cache-Control"] == "max-age=0, no-cache, no-store, must-revalidate, private"


def tokens_of(item) -> str:
    return f"{item.token_a.text} – {item.token_b.text}"


def test_posting_a_vote_records_exactly_one_vote_and_answers_with_the_next_comparison(client, study):
    annotator = join(client, study)
    client.get(vote_url(study))
    assignment = active_assignment(annotator)
    response = client.post(
        vote_url(study), {"assignment": assignment.pk, "choice": "right", "client_ms": "1234"}
    )
    vote = Vote.objects.get()
    assert (vote.assignment_id, vote.annotator_id, vote.choice, vote.client_response_ms) == (
        assignment.pk,
        annotator.pk,
        "right",
        1234,
    )
    # One round trip: the answer is the voting page of the comparison leased next, no redirect.
    assert response.status_code == 200
    following = active_assignment(annotator)
    assert following.pk != assignment.pk and following.comparison_id != assignment.comparison_id
    shown = page(response)
    assert shown.attributes["vote-form"]["action"] == vote_url(study)
    assert re.search(r'name="assignment" value="(\d+)"', response.content.decode()).group(1) == str(
        following.pk
    )
    comparison = following.comparison
    assert (shown.text["choice-left"], shown.text["choice-right"]) == (
        tokens_of(comparison.left_item),
        tokens_of(comparison.right_item),
    )
    assert "Your comparisons in this ballot: 1 of 3" in shown.text["main"]
    assert response["Cache-Control"] == "max-age=0, no-cache, no-store, must-revalidate, private"


def test_a_client_time_that_is_not_a_sane_number_is_left_out(client, study):
    annotator = join(client, study)
    client.get(vote_url(study))
    assignment = active_assignment(annotator)
    client.post(vote_url(study), {"assignment": assignment.pk, "choice": "left", "client_ms": "soon"})
    assert Vote.objects.get().client_response_ms is None


def test_posting_the_same_assignment_again_does_not_create_a_second_vote(client, study):
    annotator = join(client, study)
    client.get(vote_url(study))
    assignment = active_assignment(annotator)
    first = client.post(vote_url(study), {"assignment": assignment.pk, "choice": "left"})
    again = client.post(vote_url(study), {"assignment": assignment.pk, "choice": "right"})
    assert (first.status_code, again.status_code) == (200, 200)
    assert list(Vote.objects.values_list("assignment_id", "choice")) == [(assignment.pk, "left")]
    # The form sent again (a reload of the answer) shows the comparison the first answer leased.
    following = active_assignment(annotator).pk
    shown = [
        re.search(r'name="assignment" value="(\d+)"', r.content.decode()).group(1) for r in (first, again)
    ]
    assert shown == [str(following)] * 2 and following != assignment.pk


def test_a_tie_is_refused_when_the_study_does_not_allow_ties(client, study):
    annotator = join(client, study)
    client.get(vote_url(study))
    assignment = active_assignment(annotator)
    response = client.post(vote_url(study), {"assignment": assignment.pk, "choice": "tie"})
    assert response.status_code == 400
    shown = page(response)
    assert shown.text["vote-error"] == 'This study does not allow ties: choose "left" or "right".'
    assert shown.attributes["continue-link"]["href"] == vote_url(study)
    assert Vote.objects.count() == 0


def test_an_expired_assignment_is_refused_with_409_and_a_way_to_continue(client, study):
    annotator = join(client, study)
    client.get(vote_url(study))
    assignment = active_assignment(annotator)
    now = timezone.now()
    Assignment.objects.filter(pk=assignment.pk).update(
        issued_at=now - timedelta(seconds=2 * study.lease_seconds),
        expires_at=now - timedelta(seconds=study.lease_seconds),
    )
    response = client.post(vote_url(study), {"assignment": assignment.pk, "choice": "left"})
    assert response.status_code == 409
    shown = page(response)
    assert shown.text["vote-error"] == (
        "Your time for this comparison ran out and it went back to the pool; ask for the next one."
    )
    assert shown.text["continue-link"] == "Go to the next comparison"
    assert Vote.objects.count() == 0
    assert client.get(shown.attributes["continue-link"]["href"]).status_code == 200
    assert active_assignment(annotator).pk != assignment.pk


def test_another_annotators_assignment_is_not_found(client, study):
    bob_client = Client()
    bob = join(bob_client, study, participant="bob")
    bob_client.get(vote_url(study))
    bobs = active_assignment(bob)
    join(client, study, participant="alice")
    response = client.post(vote_url(study), {"assignment": bobs.pk, "choice": "left"})
    assert response.status_code == 404
    assert page(response).text["vote-error"] == f"Assignment {bobs.pk} is not one of yours."
    assert Vote.objects.count() == 0


def test_a_vote_without_its_assignment_number_is_refused_with_400(client, study):
    join(client, study)
    response = client.post(vote_url(study), {"choice": "left"})
    assert response.status_code == 400
    assert page(response).text["vote-error"] == (
        "The form did not say which comparison you voted on; open it again and vote."
    )


# --- nothing to vote on --------------------------------------------------------------------------


def test_reaching_the_quota_shows_the_completion_code_and_the_link_back_to_the_crowd_platform(client, study):
    join(client, study)
    statuses = [
        client.post(vote_url(study), {"assignment": shown_assignment(client, study), "choice": "left"})
        for _ in range(3)
    ]
    # The votes before the cap answer with the next comparison; the last one, with none left to lease,
    # redirects to the voting page, which says why (its refresh must not send the form again).
    assert [r.status_code for r in statuses] == [200, 200, 302]
    assert statuses[-1]["Location"] == vote_url(study)
    response = client.get(vote_url(study))
    assert response.status_code == 200
    shown = page(response)
    assert shown.attributes["nothing"]["data-reason"] == "quota"
    assert shown.text["nothing-heading"] == "Thank you, you are done"
    assert shown.text["completion-code"] == study.completion_code
    assert shown.attributes["completion-link"]["href"] == f"{PROLIFIC_COMPLETION}?cc={study.completion_code}"
    assert shown.attributes["quota-progress"]["value"] == "3"
    assert Vote.objects.count() == 3


def test_the_completion_url_keeps_a_query_of_its_own_and_gets_the_code_otherwise():
    study = Study(completion_code="C0DE1234")
    assert completion_url(study) == ""
    study.completion_redirect_url = "https://example.org/done"
    assert completion_url(study) == "https://example.org/done?cc=C0DE1234"
    study.completion_redirect_url = "https://example.org/done?cc=FIXED"
    assert completion_url(study) == "https://example.org/done?cc=FIXED"


def test_without_a_redirect_url_the_code_is_to_be_copied(client):
    plain = make_study(votes_per_annotator_per_ballot=1)
    join(client, plain)
    client.post(vote_url(plain), {"assignment": shown_assignment(client, plain), "choice": "left"})
    shown = page(client.get(vote_url(plain)))
    assert shown.text["completion-code"] == plain.completion_code
    assert "completion-link" not in shown.attributes


def test_a_closing_ballot_says_to_come_back_and_refreshes_by_itself(client, study, settings):
    # No close of this study measured yet: the wait is the sweep's interval.
    settings.CELERY_BEAT_SCHEDULE = {"ballots-sweep": {"task": "scoring.ballots_sweep", "schedule": 25.0}}
    join(client, study)
    Ballot.objects.filter(study=study).update(status=Ballot.Status.CLOSED)
    response = client.get(vote_url(study))
    assert response.status_code == 200 and response["Retry-After"] == "25"
    shown = page(response)
    assert shown.text["nothing-heading"] == "The next ballot is being prepared"
    assert shown.text["closing-wait"] == "25 seconds"
    assert '<meta http-equiv="refresh" content="25">' in response.content.decode()
    assert shown.attributes["retry-link"]["href"] == vote_url(study)


def test_when_every_comparison_is_leased_the_page_says_when_to_come_back(client, study):
    join(client, study)
    Comparison.objects.filter(ballot__study=study).update(
        status=Comparison.Status.LEASED, lease_expires_at=timezone.now() + timedelta(hours=1)
    )
    response = client.get(vote_url(study))
    # About one judgement's time: the leases held are being voted on (voting.ALL_LEASED_RETRY_SECONDS).
    wait = response["Retry-After"]
    assert response.status_code == 200 and wait in ("2", "3", "4")
    shown = page(response)
    assert shown.text["nothing-heading"] == "All comparisons are being judged right now"
    assert f"Please come back in {wait} seconds: this page checks again by itself." in shown.text["nothing"]
    assert f'<meta http-equiv="refresh" content="{wait}">' in response.content.decode()


def test_when_only_pairs_already_judged_remain_the_page_says_so(client, study):
    annotator = join(client, study)
    client.post(vote_url(study), {"assignment": shown_assignment(client, study), "choice": "left"})
    judged = Vote.objects.get(annotator=annotator).comparison
    # The vote's answer leased the next comparison: give it back, as an expired lease would.
    held = active_assignment(annotator)
    Assignment.objects.filter(pk=held.pk).update(status=Assignment.Status.EXPIRED)
    Comparison.objects.filter(pk=held.comparison_id).update(
        status=Comparison.Status.OPEN, lease_expires_at=None
    )
    # The one comparison left open asks again about the pair this annotator judged.
    remaining = Comparison.objects.filter(ballot=judged.ballot, status=Comparison.Status.OPEN).first()
    Comparison.objects.filter(pk=remaining.pk).update(pair_low=judged.pair_low, pair_high=judged.pair_high)
    Comparison.objects.filter(ballot=judged.ballot, status=Comparison.Status.OPEN).exclude(
        pk=remaining.pk
    ).update(status=Comparison.Status.VOTED)
    response = client.get(vote_url(study))
    assert response.status_code == 200 and "Retry-After" not in response
    shown = page(response)
    assert shown.text["nothing-heading"] == "You have judged all remaining pairs of this ballot"
    assert shown.text["completion-code"] == study.completion_code


def test_the_pages_have_no_inline_script_or_style(client, study):
    responses = [client.get(entry_url(study), {"participant": "abc"})]
    join(client, study)
    responses.append(client.get(vote_url(study)))
    Ballot.objects.filter(study=study).update(status=Ballot.Status.CLOSED)
    responses.append(client.get(vote_url(study)))
    for response in responses:
        html = response.content.decode()
        assert re.findall(r"<script(?![^>]*\ssrc=)[^>]*>", html) == []
        assert re.findall(r"<style|\sstyle=|\son[a-z]+=", html) == []
